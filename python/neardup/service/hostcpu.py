"""The machine's CPU time by kind, for ``GET /v1/stats`` (``service.host_cpu``); and a
process's state and CPU time (or one thread's: the writer thread's), for ``GET /v1/health``
and the writer process's shutdown.

Why: on a virtual machine the service's tail latency follows the host's other tenants. When
the host runs another VM on a core this one had work for, the guest counts that time as
*steal*; measured (benchmarks/INDEX.md run 14), the ``--sync full`` p99 at 200 POSTs/s was
9 ms in 2-minute windows with 0.4% steal and 13-35 ms with 0.9-7.1%, the service's own CPU and
stages unchanged. ``service.timings`` says which of the service's stages were slow; this says
whether the machine was taken away from it meanwhile.

The figures are seconds since the machine booted (``/proc/stat``, all cores), so that two
reads subtract into a window's own: ``d(steal) / d(sum of every kind)`` is the share of the
machine's time the host took. Linux only; ``None`` where ``/proc/stat`` cannot be read.
"""

from __future__ import annotations

import os

__all__ = ["KINDS", "host_cpu", "process_cpu", "process_state"]

#: the first eight columns of /proc/stat's "cpu" line, in order
KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def host_cpu(path: str = "/proc/stat") -> dict | None:
    """{"cores": n, "seconds": {kind: seconds since boot}}, or None where not available."""
    try:
        with open(path, encoding="ascii") as f:
            first = f.readline().split()
        if not first or first[0] != "cpu" or len(first) < 1 + len(KINDS):
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        vals = [int(x) for x in first[1 : 1 + len(KINDS)]]
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return None
    return {"cores": os.cpu_count(), "seconds": {k: round(v / ticks, 2) for k, v in zip(KINDS, vals)}}


def _stat_fields(pid: int | None, tid: int | None = None) -> list[str] | None:
    """The fields of /proc/PID/stat (of one thread's, /proc/PID/task/TID/stat: same layout)
    after the command's name (which may hold spaces and parentheses: split after its last
    ')'); None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return None


def process_state(pid: int | None) -> str | None:
    """A process's state as Linux gives it (/proc/PID/stat): "stopped" for kill -STOP's, else
    its word ("running", "sleeping", "disk sleep", ...); None where it cannot be read."""
    fields = _stat_fields(pid)
    if not fields:
        return None
    code = fields[0]
    return {
        "R": "running",
        "S": "sleeping",
        "D": "disk sleep",
        "T": "stopped",
        "t": "stopped",
        "Z": "zombie",
        "X": "dead",
        "I": "idle",
    }.get(code, code)


def process_cpu(pid: int | None, tid: int | None = None) -> float | None:
    """A process's CPU time so far (user + system, seconds: /proc/PID/stat), or with `tid` one
    of its threads' (the writer thread of ``--writer thread``); None where it cannot be read."""
    fields = _stat_fields(pid, tid)
    if fields is None:
        return None
    try:
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (IndexError, TypeError, ValueError):
        return None
