"""/v1/health (liveness: is the writer answering, or busy, or stopped) and /v1/stats (counts,
sizes, settings, and the service's own: its writer, its timings, the host's CPU)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from neardup.service.hostcpu import host_cpu, process_cpu, process_state
from neardup.service.models import ERR
from neardup.service.routing import Routes
from neardup.service.state import service_of
from neardup.service.timings import Timings
from neardup.service.worker import WriterProcess
from neardup.service.writer import GroupWriter

__all__ = ["BUSY_STEP", "BUSY_WINDOW", "STALL_GRACE", "routes"]

routes = Routes()

#: a writer process that has not answered the ping is busy (a long group: a batch of 10,000
#: articles on a loaded host), not stopped or hung, while its CPU time goes on growing: by
#: BUSY_STEP s of CPU within STALL_GRACE s. Health then answers 200 (the writer "busy") until it
#: has not answered for --write-timeout seconds. A stopped or deadlocked writer uses no CPU; a
#: working one under I/O pressure can sleep in the kernel's dirty-page throttling for a moment
#: (measured: 0.5 s with 0.7% of a core, mid-group, four other processes writing): a grace of
#: seconds, not one window, tells the two apart.
BUSY_STEP = 0.02
STALL_GRACE = 5.0
#: the first look at a silent writer's CPU waits this long for a second sample (the CPU time
#: is counted in clock ticks of 10 ms)
BUSY_WINDOW = 0.5


@routes.get("/v1/stats", responses=ERR, summary="Counts, sizes and settings")
def stats(request: Request) -> dict:
    st = service_of(request)
    out = st.index.stats()
    out["service"] = _service_stats(st.writer, st.front, st.started)
    return out


@routes.get(
    "/v1/health",
    summary="Liveness",
    responses={
        503: {
            "description": "the writer does not answer within the health timeout and is not working (stopped, "
            "hung), or has been busy with one group for over the write timeout: writes wait "
            "for it, up to the write timeout"
        }
    },
)
async def health(request: Request):
    st = service_of(request)
    writer, started, write_timeout, waiting_ping = st.writer, st.started, st.write_timeout, st.waiting_ping
    # a writer process that died (killed, out of memory) is started again by the next write:
    # the service still answers, but says so ("degraded") until then
    # the writer as the one kind or the other (None: it is of the other kind)
    proc = writer if isinstance(writer, WriterProcess) else None
    thread = writer if not isinstance(writer, WriterProcess) else None
    alive = proc.alive() if proc is not None else True
    w: dict[str, Any] = {
        "kind": "process" if proc is not None else "thread",
        "pid": proc.pid if proc is not None else os.getpid(),
        "alive": alive,
    }
    out = {"status": "ok" if alive else "degraded", "uptime_seconds": round(time.time() - started, 3), "writer": w}
    # alive is not enough: a writer process stopped (kill -STOP) or hung is alive, and every
    # write waited for it. Its main loop answers a ping between two groups; no answer within
    # PING_TIMEOUT is a 503 (the ping's wait is not a write's: it is never cancelled, a
    # late answer is still counted, and one ping waits at a time: worker.py)
    ping = writer.ping() if alive and hasattr(writer, "ping") else None
    if ping is None:
        return out
    fut, since = ping
    if waiting_ping[0] is not fut or waiting_ping[1].get_loop() is not asyncio.get_running_loop():
        # one asyncio future per ping (each health check while it waits awaits the same one,
        # rather than adding a callback of its own to the writer's future)
        waiting_ping[:] = [fut, asyncio.wrap_future(fut)]
    done, _ = await asyncio.wait([waiting_ping[1]], timeout=st.health_timeout)
    if done and not fut.cancelled() and fut.exception() is None:
        w["answering"] = True
        st.progress.clear()
        return out
    assert since is not None  # (None only for a ping answered meanwhile: WriterProcess.ping)
    now = time.time()
    out["uptime_seconds"] = round(now - started, 3)
    w.update(
        answering=False,
        not_answering_since=round(since, 3),
        not_answering_seconds=round(now - since, 3),
        **writer.backlog(),
    )
    state = process_state(proc.pid) if proc is not None else None
    if state is not None:
        w["process_state"] = state
    working = None
    if proc is not None and state not in (None, "stopped", "zombie", "dead"):
        working = await _working(st.progress, proc.pid)
    elif thread is not None and thread.lock_holder is not None:
        # the writer thread (or a remove's) holds the lock: its own CPU time, not the
        # process's, which the front's requests make grow too
        working = await _working(st.progress, os.getpid(), thread.lock_holder)
    if working is not None:
        w["cpu_share"], w["seconds_since_cpu"] = round(working[0], 3), round(min(working[1], 1e9), 3)
    busy = working is not None and working[1] <= STALL_GRACE
    if busy and (write_timeout is None or now - since < write_timeout):
        # working through a long group (its loop answers the ping after it): writes wait
        # for it as usual, so the service is up
        w["busy"] = True
        return out
    out["status"] = "unavailable"
    if state == "stopped":
        how = " (its process is stopped: kill -CONT it)"
    elif working is None:
        how = " (stopped, hung, or busy with one group for that long)"
    elif busy:
        how = f" (busy with one group for over the write timeout; it uses {working[0]:.0%} of a core)"
    else:
        how = f" (hung, or waiting on the disk: its CPU time has not grown for {working[1]:.1f} s)"
    out["error"] = {
        "status": 503,
        "code": "writer_not_answering",
        "details": None,
        "message": (
            f"the writer {'process' if proc is not None else 'thread'} has not answered for {now - since:.1f} s{how}: "
            f"{w['requests_waiting']} request(s) wait for it; a write waits up to "
            + (
                f"{write_timeout:g} s (--write-timeout), then answers 503 writer_timeout"
                if write_timeout is not None
                else "no limit (--write-timeout 0)"
            )
            + "; reads go on"
        ),
    }
    return JSONResponse(status_code=503, content=out)


async def _working(progress: dict, pid: int | None, tid: int | None = None) -> tuple[float, float] | None:
    """(share of one core since the last sample, seconds since its CPU time last grew by
    BUSY_STEP) of the writer process `pid` (or of its thread `tid`: the writer thread's,
    whose process is the server's own), which has not answered its ping; None where /proc
    cannot say. The first call of a silence takes two samples BUSY_WINDOW apart."""
    now = time.monotonic()
    p = progress.get((pid, tid))
    if p is None:
        cpu = process_cpu(pid, tid)
        if cpu is None:
            return None
        progress.clear()
        p = progress[(pid, tid)] = [cpu, now, now - 2 * STALL_GRACE]
        await asyncio.sleep(BUSY_WINDOW)
        now = time.monotonic()
    cpu = process_cpu(pid, tid)
    if cpu is None:
        return None
    share = max(0.0, cpu - p[0]) / max(now - p[1], 1e-3)
    if cpu - p[0] >= BUSY_STEP:  # it grew: the next step is counted from here
        p[:] = [cpu, now, now]
    return share, now - p[2]


def _service_stats(writer: GroupWriter | WriterProcess, front: Timings, started: float) -> dict:
    """The service's part of GET /v1/stats: the writer's kind, the durability its answers wait
    for, how long the stages took (timings.py): the front's POSTs, and the writer's groups,
    WAL fsyncs and checkpoint rounds (asked of the writer process; absent while none runs), and
    the machine's CPU time by kind (hostcpu.py: the host's steal)."""
    proc = isinstance(writer, WriterProcess)
    sync = writer.open_kw.get("sync", "full") if isinstance(writer, WriterProcess) else writer.index.sync
    out: dict[str, Any] = {
        "uptime_seconds": round(time.time() - started, 3),
        "writer": "process" if proc else "thread",
        "sync": "full" if sync == "group" else sync,
        "timings": front.as_dict(),
        "host_cpu": host_cpu(),
    }
    try:
        # the writer process answers between two groups: during a large batch's add its
        # stages are left out rather than holding this request for seconds
        out["timings"].update(writer.stage_timings().result(timeout=1))
    except Exception:  # noqa: BLE001 - a busy or restarting writer: its stages are left out
        pass
    return out
