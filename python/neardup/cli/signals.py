"""SIGTERM and SIGHUP during ``neardup dedup``: cleaned up as after Ctrl-C."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "terminate_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during ``neardup dedup``: raised in the main thread as Ctrl-C's
    KeyboardInterrupt is, so that the same cleanup runs (spill files and partial outputs
    removed, the previous run's outputs left as they were); the default action killed the
    process with all of them left behind. ``code``: the shell's 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.code = 128 + signum
        super().__init__(signal.Signals(signum).name)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` while the block runs (the main thread
    only: Python runs signal handlers there); the previous handlers are restored after. A
    second signal while the first one's cleanup runs is ignored, so it cannot cut it short."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield  # (signal.signal works only in the main thread: main() called from elsewhere)
        return
    fired: list[int] = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise Terminated(signum)

    wanted = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {sig: signal.signal(sig, handler) for sig in wanted}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)
