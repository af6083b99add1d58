"""For the type checker only: what ``Index``'s mixins (planning, committing, removal, reading,
checking) share through ``self``.

``Index`` (core.py) sets these attributes in ``__init__`` and defines (itself or in another mixin)
these methods; each mixin inherits :class:`IndexAttrs` so that its uses of ``self.config``,
``self._meta(...)`` etc. are checked. The class body holds annotations without values and,
under ``TYPE_CHECKING``, method stubs: at run time it is empty (it adds nothing to ``Index``, and
whatever ``Index`` or a mixin defines comes first in the MRO).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from neardup.index.append import PendingTexts
    from neardup.index.config import IndexConfig
    from neardup.index.pending import PendingLog
    from neardup.index.segment import Postings
    from neardup.index.store import SegmentCache, State, TextLog
    from neardup.index.tuning import Steps, Tuning
    from neardup.io.records import Checked, Fields
    from neardup.stages.options import DedupOptions
    from neardup.stages.signer import Signer

__all__ = ["IndexAttrs"]


class IndexAttrs:
    """The attributes and methods of ``Index`` its mixins use (annotations only)."""

    # set by Index.__init__ (core.py)
    directory: str
    config: IndexConfig
    threads: int | None
    opts: DedupOptions
    fields: Fields
    signer: Signer
    tuning: Tuning
    steps: Steps
    background_fold: bool
    last_stages: dict[str, float]
    _wlock: threading.RLock
    _wal_scrub_due: bool
    _wconn: sqlite3.Connection | None
    _segcache: SegmentCache
    _texts: TextLog
    _state: State | None
    _state_lock: threading.Lock
    _all_conns: weakref.WeakSet[Any]
    _pending: PendingLog
    _few: tuple[Any, ...] | None

    if TYPE_CHECKING:
        # defined in core.py
        def _conn(self) -> sqlite3.Connection: ...

        def _writer(self) -> sqlite3.Connection: ...

        def _fresh_read(self, conn: sqlite3.Connection, fn: Any, attempts: int = 5) -> Any: ...

        def _meta(self, conn: Any, key: str) -> str: ...

        def _state_for(self, conn: sqlite3.Connection) -> State: ...

        def _arrays(self, st: State) -> list[Postings]: ...

        def _present(self, conn: sqlite3.Connection, keys: list[str]) -> list[str]: ...

        @staticmethod
        def _raise_duplicate_ids(twice: list[str], present: list[str]) -> None: ...

        def _texts_of(
            self, conn: Any, doc_list: list[int], meta: dict[int, dict[Any, Any]] | None = None
        ) -> dict[int, str]: ...

        def _read_text(self, conn: Any, doc: int, name: str, offset: int, length: int, crc: int, what: str) -> str: ...

        def _committed_for_good(self) -> None: ...

        def _last_text_file(self, conn: Any) -> tuple[int, str, int]: ...

        def _append_texts(self, conn: Any, docs: list[Checked]) -> PendingTexts | None: ...

        def _drop_log_file(self) -> None: ...

        # defined in the mixins, used by others
        def disk_bytes(self) -> int: ...  # reading.py

        def _bump(self, conn: Any, **vals: Any) -> int: ...  # committing.py

        def _cluster_members(
            self, conn: Any, clusters: list[int], keepers: dict[int, int | None] | None = None
        ) -> dict[int, list[dict[Any, Any]]]: ...  # planning.py

        def _sigs_of(
            self, conn: Any, doc_list: list[int], meta: dict[int, dict[Any, Any]] | None = None
        ) -> dict[int, np.ndarray]: ...  # planning.py

        @property
        def _sig_dtype(self) -> np.dtype[Any]: ...  # planning.py

        @property
        def _stores_sigs(self) -> bool: ...  # planning.py

        def _estimate(self, mat: np.ndarray, pairs: np.ndarray) -> np.ndarray: ...  # planning.py

        def _as_stored(self, sigs: np.ndarray) -> np.ndarray: ...  # planning.py
