"""``--memory-limit``: the whole process's resident memory stays at or under the limit.

Each stage sizes what it may use from what is resident when it starts, not from fixed shares
of the limit: what is resident is the larger of the process's resident set (``/proc``) and the
known bytes of the tables it holds (the accounting; the resident set also counts the
interpreter, imports, freed memory not yet returned and objects the accounting misses, the
accounting covers what the resident set may not show yet). So a stage that follows a big one
gets what the big one left, and a small input gets the whole limit.

What cannot spill, and so sets the minimum for an input:

* the per-document tables (``engines.local.docs``; about 100 bytes per document plus the id, and
  the exact pass's key map while the first pass runs), the interpreter and the batches of text
  in flight;
* the clusters stage's per-document arrays (:data:`CLUSTER_BYTES_PER_DOC`);
* the candidate pairs (16 bytes each as document indices).

What spills, in the order the run meets it: the rows the candidate stage reads (band keys,
signatures or fingerprints: to a file, ``engines.local.store``), the band sort (to partition files,
``stages.candidates``), the held shingle sets of verification (into more re-read passes,
``engines.local.reread``). When even the minimum is more than the limit, the run stops early with
:class:`MemoryLimitError`, which says how much this input needs.
"""

from __future__ import annotations

from collections.abc import Callable

from neardup.errors import MemoryLimitError

__all__ = ["MemoryBudget", "current_rss", "release_freed", "deep_size"]

#: The clusters stage holds a few per-document arrays at once (labels, ranks, keeper of each
#: document; int64): reserved from the start so that the first pass leaves room for them.
CLUSTER_BYTES_PER_DOC = 32


def deep_size(obj: object) -> int:
    """Bytes of a result row as Python objects (dicts, lists, strs, ints, floats), each object
    counted once per reference: the ids a row holds are its own objects (made from the id table
    when the row is built), while small ints, literals and interned strings are shared, so this
    errs on the high side."""
    import sys

    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(deep_size(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sys.getsizeof(obj) + sum(deep_size(v) for v in obj)
    return sys.getsizeof(obj)


def mib(x: float) -> str:
    return f"{x / (1 << 20):,.1f} MiB" if x >= 10 << 20 else f"{x / 1024:,.0f} KiB"


def current_rss() -> int:
    """Resident bytes of this process now (Linux ``/proc/self/statm``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def release_freed() -> None:
    """Hand memory freed by a finished stage back to the system (glibc keeps freed heap pages
    otherwise, and they would count against the next stage's share)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


#: What a run keeps free inside ``--memory-limit``, at most: the allocator's pools, the
#: interpreter's and the page cache's part of the resident set vary by a few MiB from run to
#: run, which the accounting cannot see (a run planned to the byte ended 1.3 MiB over an 86 MiB
#: limit). Small limits keep :data:`LIMIT_MARGIN_SHARE` of themselves instead.
LIMIT_MARGIN = 4 << 20
LIMIT_MARGIN_SHARE = 0.02


def limit_margin(limit: int) -> int:
    """Bytes of `limit` the run keeps free (:data:`LIMIT_MARGIN`)."""
    return min(LIMIT_MARGIN, int(limit * LIMIT_MARGIN_SHARE))


def limit_for(need: int) -> int:
    """The smallest ``--memory-limit`` whose planned part (the limit less its margin) holds
    `need` bytes: the figure a refusal names."""
    limit = need + LIMIT_MARGIN
    if limit_margin(limit) < LIMIT_MARGIN:  # a small limit: its margin is a share of it
        limit = int(need / (1 - LIMIT_MARGIN_SHARE))
        while limit - limit_margin(limit) < need:
            limit += 1
    return limit


class MemoryBudget:
    """The limit, and what each stage may still use of it: the run plans against the limit
    less :func:`limit_margin` (``limit``; the limit asked for is ``asked``).

    `held` gives the known bytes of the long-lived tables (set by the run as they grow);
    `rss` reads the resident set (a parameter so that tests can run the accounting alone)."""

    def __init__(self, limit: int | None, rss: Callable[[], int] | None = None) -> None:
        self.asked = limit
        self.limit = None if limit is None else limit - limit_margin(limit)
        self._rss = rss if rss is not None else current_rss
        self.base = self._rss() if limit is not None else 0  # interpreter, imports, open inputs
        self.held: Callable[[], int] = lambda: 0
        self.spillable: Callable[[], int] = lambda: 0  # held bytes that could have spilled
        self.spill: Callable[[], bool] = lambda: False  # spill them now; True if it did
        self.minimum = 0  # the least this run needed so far, had everything spillable spilled
        self.peak_seen = self.base
        self.checks: list[dict] = []  # what each stage was given (for report.json)

    @property
    def limited(self) -> bool:
        return self.limit is not None

    def resident(self) -> int:
        now = max(self._rss(), self.base + self.held())
        self.peak_seen = max(self.peak_seen, now)
        return now

    def free(self, reserve: int = 0) -> int | None:
        """Bytes a stage starting now may use, keeping `reserve` for what must come later."""
        if self.limit is None:
            return None
        return self.limit - self.resident() - reserve

    def share(self, stage: str, reserve: int, need: int, what: str) -> int | None:
        """`free(reserve)` for `stage`, which needs at least `need` bytes to run at all; raises
        :class:`MemoryLimitError` when even that does not fit."""
        if self.limit is None:
            return None
        release_freed()  # what the last stage freed is not resident any more
        res = self.resident()
        free = self.limit - res - reserve
        if free < need and self.spill():  # rows kept in memory by the first pass: to disk now
            release_freed()
            res = self.resident()
            free = self.limit - res - reserve
        self.checks.append(
            {
                "stage": stage,
                "resident_bytes": res,
                "reserved_bytes": reserve,
                "needed_bytes": need,
                "share_bytes": free,
            }
        )
        self.minimum = max(self.minimum, res - self.spillable() + reserve + need)
        if free < need:
            self.fail(
                res + reserve + need,
                f"the {stage} stage needs {mib(need)} for {what} on top of "
                f"{mib(res)} resident and {mib(reserve)} reserved for later stages",
            )
        return free

    def minimum_limit(self) -> int:
        """The least ``--memory-limit`` this run needed so far (``minimum`` and the margin)."""
        return limit_for(self.minimum)

    def fail(self, minimum: int, why: str) -> None:
        assert self.asked is not None  # (called only under a limit)
        raise MemoryLimitError(
            f"--memory-limit {mib(self.asked)} is too small for this input: {why}; it needs at least "
            f"about {mib(limit_for(minimum))} (the interpreter and imports take {mib(self.base)} of that, "
            f"and {mib(limit_margin(limit_for(minimum)))} is kept free for the allocator's noise)"
        )


#: The first pass projects to the end of the input only after this share of it (earlier,
#: a few batches say little about the rest).
PROJECT_AFTER = 0.05

#: The first pass refuses a limit only once it has read this many of the reader's blocks (or
#: the whole input), besides :data:`PROJECT_AFTER`: the reader's position is known to a block,
#: so the share of the input read is known to within 1/64 by then.
SURE_AFTER_BLOCKS = 32

#: Batches of text that exist at once in the first pass: one being parsed, two queued, one
#: being signed.
BATCHES_IN_FLIGHT = 4

#: What the allocator keeps of the per-document tables' growth, as a share of their bytes: the
#: tables grow by doubling (the id bytes, the offsets, the hash indexes), and each outgrown
#: buffer is freed into the heap, where the batches' short-lived objects pin it (glibc hands
#: back only whole free pages at the top of the heap, or all of them on ``malloc_trim``).
#: Measured on 200k synthetic articles: the resident set less the baseline, the counted tables
#: and rows and the text in flight was 0.6-0.7x the tables through the first pass. Outgrown
#: buffers past glibc's largest mmap threshold (32 MiB) are unmapped when freed, so what stays
#: is bounded: :data:`TABLE_SLACK_MAX`.
TABLE_SLACK = 1.0
TABLE_SLACK_MAX = 64 << 20


def map_capacity(items: float) -> int:
    """The capacity (entries) of a Rust hash map (hashbrown) that has grown to `items` entries:
    its buckets double, each power of two holding 7/8 of its size (3 and 7 for the first two)."""
    if items <= 0:
        return 0
    if items <= 3:
        return 3
    if items <= 7:
        return 7
    buckets = 16
    while buckets // 8 * 7 < items:
        buckets *= 2
    return buckets // 8 * 7


def doubled(capacity: int, length: float, least: int = 1) -> int:
    """The capacity of a buffer that doubles when full (a Rust `Vec`), `capacity` now, once it
    holds `length`."""
    capacity = max(capacity, least)
    while capacity < length:
        capacity *= 2
    return capacity


def id_table_bytes(heap_bytes: int, ids: int, ids_at_end: float, id_bytes: float | None = None) -> int:
    """`IdTable.heap_bytes()` once the table holds `ids_at_end` ids, from its bytes and count now:
    the id bytes (a doubling buffer holding `id_bytes` now; taken as full when not given), the
    offsets (one per id and one more, doubling from 4) and the hash index (16 bytes an entry)."""
    offsets, index = doubled(4, ids + 1), map_capacity(ids)
    capacity = max(0, heap_bytes - 8 * offsets - 16 * index)
    used = capacity if id_bytes is None else min(capacity, id_bytes)
    end = used * ids_at_end / max(ids, 1)
    return doubled(capacity, end) + 8 * doubled(4, ids_at_end + 1) + 16 * map_capacity(ids_at_end)


class FirstPassGuard:
    """The first pass under a limit: projects the tables to the end of the input (from the
    share of its bytes read so far) to decide whether the rows may stay in memory, and stops
    the run as soon as the projection shows the limit cannot be met even with the rows spilled.

    What the run needs (the figure of :class:`MemoryLimitError` and ``minimum_bytes``) is
    computed from the input and the settings only, never from the resident set at the check:
    the resident set grows with the limit given (rows kept in memory while they fit, freed
    memory the allocator keeps while it is allowed to), so a figure taken from it chased the
    limit (200k articles: "needs at least" 109 MiB at a limit of 80M, 122 at 119M, 133 at 130M).
    It is the baseline measured when the run started (interpreter, imports), the text in
    flight (:data:`BATCHES_IN_FLIGHT` batches, at most the whole input's text) and `work` (a
    batch's kernel outputs and the reader's buffer), the tables projected to the end of the
    input with the allocator's share of their growth (:data:`TABLE_SLACK`), and what the later
    stages cannot do without. The resident set still decides, besides that, whether the rows
    may stay in memory, and stops the run if it passes the limit all the same.

    `tables()`: bytes of everything the first pass keeps per document (the exact pass's map
    included); `exact_map()`: that map's bytes alone (freed when the pass ends); `later(scale)`:
    the least the later stages need besides their per-document arrays (the smallest band sort
    and a batch of re-read records), for the input `scale` times what has been read."""

    def __init__(
        self,
        budget: MemoryBudget,
        tables: Callable[[], int],
        exact_map: Callable[[], int],
        total_bytes: int | None,
        later: Callable[[float], float] = lambda s: 0,
        count: Callable[[], int] | None = None,
        work: Callable[[int], int] = lambda n: 0,
        tables_at: Callable[[float], tuple[int, int]] | None = None,
        lead_bytes: int = 0,
    ) -> None:
        """`count()`: documents in the tables now (the reader adds them ahead of the batches
        being processed, whose position in the input `update` is told). `work(n)`: bytes the
        batches in flight need besides their texts, for batches of `n` documents (their lists
        of document numbers, the kernels' outputs, the reader's buffer). `tables_at(n)`: the
        tables and the exact pass's map once they hold `n` documents (the buffers and hash
        maps that double as they grow, at the capacity they will have then); without it, the
        bytes now in proportion. `lead_bytes`: how far the reader's count of bytes may be ahead
        of the last record handed out (it counts a block when the block is read)."""
        self.budget = budget
        self.count = count
        self.tables = tables
        self.exact_map = exact_map
        self.later = later
        self.total_bytes = total_bytes
        self.work = work
        self.tables_at = tables_at
        self.lead_bytes = lead_bytes
        self.fraction: float | None = None
        self.docs = 0
        self.batch_bytes = 0
        self.batch_docs = 0
        self.text_bytes = 0  # texts of all the batches so far
        self._trimmed = 0  # resident after the last hand-back of freed memory
        self.bytes_done = 0

    def update(self, docs: int, bytes_done: int | None, batch_bytes: int = 0, batch_docs: int = 0) -> None:
        """`docs` read when the reader had read `bytes_done` bytes of the input; `batch_bytes`:
        the memory of the batch of texts in hand, of `batch_docs` documents."""
        self.docs = docs
        self.batch_docs = max(self.batch_docs, batch_docs)
        self.batch_bytes = max(self.batch_bytes, batch_bytes)
        self.text_bytes += batch_bytes
        if self.total_bytes and bytes_done:
            # the batch's last record lies up to a block before `bytes_done`: half a block on
            # average (on 200k articles in 62 MB, the first projection's documents were 162k
            # with the whole block counted as read)
            self.bytes_done = bytes_done
            done = (
                bytes_done if bytes_done >= self.total_bytes else max(bytes_done - self.lead_bytes / 2, bytes_done / 2)
            )
            self.fraction = min(1.0, done / self.total_bytes)

    def _scale(self) -> float:
        f = self.fraction
        return 1.0 / f if f is not None and f >= PROJECT_AFTER else 1.0

    def _tables_at_end(self, s: float) -> tuple[float, float]:
        """(the tables, the exact pass's map) projected to the end of the input."""
        final = self.docs * s  # documents at the end of the input
        # the tables hold `count()` documents (the reader is ahead of the batch in hand)
        if self.tables_at is not None:
            return self.tables_at(final)
        st = final / max(1, self.count() if self.count is not None else self.docs)
        return self.tables() * st, self.exact_map() * st

    def needs(self, rows: float = 0.0) -> tuple[int, int]:
        """(peak of the first pass, peak of the later stages) at the end of the input, from the
        structures' sizes alone (with `rows` bytes of rows at the end kept in memory)."""
        s = self._scale()
        t, f = self._tables_at_end(s)
        text = min(BATCHES_IN_FLIGHT * self.batch_bytes, self.text_bytes * s)
        # (only where the resident set is read: without it there is no allocator to model)
        slack = min(TABLE_SLACK * t, TABLE_SLACK_MAX) if self.budget.base > 0 else 0
        first = self.budget.base + text + self.work(self.batch_docs) + t + slack + rows
        # after the first pass: the text and the exact pass's map are gone (freed pages handed
        # back), the outgrown buffers of the tables that stay are not
        later = self.budget.base + slack + rows + self._after_first_pass(t, f, s)
        return int(first), int(later)

    def _after_first_pass(self, t: float, f: float, s: float) -> float:
        """What the later stages hold besides the baseline and the rows: the tables less the
        exact pass's map (`t`, `f` at the end of the input), the clusters stage's arrays and
        ``later(s)``."""
        return (t - f) + CLUSTER_BYTES_PER_DOC * self.docs * s + self.later(s)

    def _projection(self, rows_ram: int) -> tuple[int, int, float]:
        """(peak of the first pass, peak of the later stages, scale) at the end of the input,
        with the rows in memory (`rows_ram` now), from what is resident now."""
        resident = self.budget.resident()
        tables = self.tables()
        # besides the tables and rows: the interpreter and the batches of text in flight. Up to
        # four batches exist at once (one being parsed, two queued, one being signed); when
        # this is measured the queue may hold fewer, so room for three more is kept.
        other = max(0, resident - self.budget.base - tables - rows_ram) + self.budget.base + 3 * self.batch_bytes
        s = self._scale()
        t, f = self._tables_at_end(s)
        r = rows_ram * s
        return int(other + t + r), int(other + r + self._after_first_pass(t, f, s)), s

    def rows_fit(self, rows_ram: int) -> bool:
        """Whether the rows may stay in memory: both from what is resident now and from what the
        run needs."""
        limit = self.budget.limit
        if limit is None:  # (not self.budget.limited)
            return True
        first, later, s = self._projection(rows_ram)
        if max(first, later) > limit:
            return False
        return max(self.needs(rows_ram * s)) <= limit

    def check(self, rows_ram: int) -> None:
        """Raise :class:`MemoryLimitError` when the limit cannot be met with the rows spilled."""
        if not self.budget.limited:
            return
        if (
            self.fraction is not None
            and self.fraction < 1.0
            and (self.fraction < PROJECT_AFTER or self.bytes_done < SURE_AFTER_BLOCKS * self.lead_bytes)
        ):
            # not yet: the figure is a projection to the end of the input, which the first
            # batches do not give well (the reader's position is known to a block); a refusal
            # now would say how much the part read needs, or a figure off by the block
            return
        minimum = max(self.needs())
        self.budget.minimum = max(self.budget.minimum, minimum)
        limit = self.budget.limit
        assert limit is not None  # (self.budget.limited)
        now = self.budget.resident()
        if now + self.work(
            self.batch_docs
        ) + BATCHES_IN_FLIGHT * self.batch_bytes > limit and now > self._trimmed + max(self.batch_bytes, 8 << 20):
            release_freed()  # near the limit: freed memory the allocator keeps, handed back
            now = self._trimmed = self.budget.resident()  # (not again until it has grown)
        if minimum <= limit and now <= limit:
            return
        s = self._scale()
        n = int(self.docs * s)
        per_doc = (self.tables() - self.exact_map()) / max(self.docs, 1)
        where = (
            f"after {self.fraction:.0%} of the input, about {n:,} documents in all"
            if s > 1
            else f"at {self.docs:,} documents"
        )
        if minimum <= limit:  # what the run needs fits, but the process passed the limit anyway
            self.budget.fail(
                max(minimum, now),
                f"{where}; the process holds {mib(now)}, more than the {mib(minimum)} the run was estimated to need",
            )
        self.budget.fail(
            minimum,
            f"{where}; the tables that cannot spill take about {per_doc:.0f} "
            f"bytes per document plus the exact pass's map while the input is read, and the "
            f"clusters stage {CLUSTER_BYTES_PER_DOC} more per document",
        )
