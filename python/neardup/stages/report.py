"""Stage timing and memory, the run report (report.json) and the terminal summary."""

from __future__ import annotations

import resource
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Stage", "StageLog", "peak_rss_mb", "summary_text"]


def package_version() -> str:
    """This neardup's version, as installed (Cargo.toml's [workspace.package] gives it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("neardup")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree never installed
        return "?"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB.

    Linux: the high-water mark of this program's own memory (``VmHWM``). ``ru_maxrss`` would
    also count the parent's memory copied at fork before this program was exec'd, so a run
    started from a large process (a test suite, a notebook) would report the parent's size."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:  # pragma: no cover - not Linux
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


@dataclass
class Stage:
    name: str
    seconds: float = 0.0
    count: int | None = None
    cpu_seconds: float | None = None  # CPU time of the process (all threads) in the stage
    note: str = ""
    peak_rss_mb: float = 0.0

    def as_dict(self) -> dict:
        d = {"name": self.name, "seconds": round(self.seconds, 4), "peak_rss_mb": self.peak_rss_mb}
        if self.cpu_seconds is not None:
            d["cpu_seconds"] = round(self.cpu_seconds, 4)
        if self.count is not None:
            d["count"] = self.count
        if self.note:
            d["note"] = self.note
        return d


@dataclass
class StageLog:
    stages: list[Stage] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str):
        st = Stage(name)
        t0 = time.perf_counter()
        c0 = time.process_time()
        try:
            yield st
        finally:
            st.seconds += time.perf_counter() - t0
            st.cpu_seconds = (st.cpu_seconds or 0.0) + time.process_time() - c0
            st.peak_rss_mb = peak_rss_mb()
            self.stages.append(st)

    def as_list(self) -> list[dict]:
        return [s.as_dict() for s in self.stages]


def summary_text(report: dict) -> str:
    """The guide's "What our run cost" list, for this run."""
    r = report
    lines = []
    lines.append(
        f"neardup dedup: {r['documents']:,} documents from {len(r['inputs'])} input(s)"
        + (f", {r['skipped']:,} bad records skipped" if r.get("skipped") else "")
    )
    lines.append(f"- exact pass: {r['exact_copies_removed']:,} copies removed ({r['exact_groups']:,} groups)")
    if r["method"] == "minhash":
        lsh = r["lsh"]
        lines.append(
            f"- signatures: MinHash {r['options']['num_perm']} ({r['options']['scheme']}), k={r['options']['k']}, "
            f"{r['signatures']:,} documents"
        )
        lines.append(
            f"- LSH: {lsh['bands']} bands x {lsh['rows']} rows; P(candidate) at J={r['options']['threshold']}: "
            f"{lsh['p_at_threshold']:.3f}; {r['candidates']:,} candidate pairs"
        )
        lines.append(
            "    S-curve P(candidate): "
            + "  ".join(f"{p['similarity']:.2f}:{p['p_candidate']:.3f}" for p in lsh["curve"])
        )
    else:
        lines.append(
            f"- signatures: SimHash 64-bit, {r['signatures']:,} documents; {r['candidates']:,} candidate pairs "
            f"within {r['options']['max_distance']} bits"
        )
    lines.append(
        f"- verification ({r['options']['verify']} {r['options']['measure']} >= {r['options']['threshold']}): "
        f"{r['near_pairs']:,} of {r['candidates']:,} candidates confirmed"
    )
    lines.append(
        f"- clusters: {r['clusters']:,}, copies removed {r['copies_removed']:,} "
        f"({r['near_copies_removed']:,} near, {r['exact_copies_removed']:,} exact); kept {r['kept']:,}"
    )
    lines.append("- time and peak memory per stage:")
    for s in r["stages"]:
        cpu = f"  (cpu {s['cpu_seconds']:.3f} s)" if s.get("cpu_seconds") is not None else ""
        lines.append(f"    {s['name']:<14} {s['seconds']:8.3f} s   {s['peak_rss_mb']:8.1f} MiB{cpu}")
    lines.append(f"  total {r['seconds']:.3f} s, peak memory {r['peak_rss_mb']:.1f} MiB")
    if r.get("outdir"):
        lines.append(f"outputs in {r['outdir']}: " + ", ".join(r["files"]))
    return "\n".join(lines)
