"""The real-server helper of the service tests: `neardup serve` on 127.0.0.1 in a subprocess.
(A module of its own, not conftest.py: tests/index has a conftest.py too, and a test importing
``from conftest import ...`` got whichever of the two pytest had imported first.)"""

import signal
import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, directory, *extra, preexec_fn=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "serve",
                str(directory),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=preexec_fn,
        )
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode()
                self.proc.stderr.close()
                raise RuntimeError(f"neardup serve exited with {self.proc.returncode}: {err}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("neardup serve did not start")
            time.sleep(0.1)

    def stop(self, wait: float = 10) -> str:
        """SIGTERM, `wait` seconds for the exit (then SIGKILL); returns what it wrote to
        stderr (empty once stopped before)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr.closed:
            return ""
        err = self.proc.stderr.read().decode()
        self.proc.stderr.close()
        return err

    def shutdown_with_a_body_pending(self) -> float:
        """Seconds from SIGTERM to the exit while one request's body never comes (it holds
        the shutdown until the graceful timeout)."""
        socks = partial_requests(
            self.port,
            1,
            b"POST /v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: "
            b'application/json\r\nContent-Length: 1000\r\n\r\n{"id":',
        )
        try:
            time.sleep(0.5)
            t0 = time.time()
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)
            return time.time() - t0
        finally:
            socks[0].close()


def partial_requests(port: int, n: int, request: bytes = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n") -> list:
    """`n` connections to the server on `port`, each holding a request it never finishes."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(request)  # never finished
        socks.append(s)
    return socks


def soft_fd_limit(pid: int) -> int:
    """Process `pid`'s soft limit on open files (/proc/PID/limits)."""
    with open(f"/proc/{pid}/limits") as f:
        line = next(ln for ln in f if ln.startswith("Max open files"))
    return int(line.split()[3])
