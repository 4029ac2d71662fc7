"""The annotator store: one SQLite file (WAL, foreign keys, versioned migrations) opened through
one connection, split by aggregate over it:

- `store.glossary`: entries and their aliases (`entries`: writes; `queries`: reads);
- `store.provenance`: the sources of entries;
- `store.history`: the revision log and the glossary as of any revision;
- `store.rollback`: rollback to a revision or a thread, and undoing one change;
- `store.runs`: the one-writer lease, runs, and every model request sent (calls);
- `store.memory`: the agent's saved context, compactions, snapshots, summon logs;
- `store.progress`: where each thread stands;
- `store.curation`: the curator's decisions;
- `store.editions`: the reader's edition of each entry as of a thread;

and the store's own facts (`get_meta`/`set_meta`: corpus, URL template, learned window).
`store.transaction()` is shared: a scene is one transaction across all of them.
"""

from __future__ import annotations

from pathlib import Path

from terrarium_dagster.store.base import StoreConnection, guarded
from terrarium_dagster.store.curation_log import CurationLog
from terrarium_dagster.store.editions import EditionLog
from terrarium_dagster.store.entries import Glossary
from terrarium_dagster.store.history import History
from terrarium_dagster.store.inputs import Actor, parse_entry_id
from terrarium_dagster.store.memory import AgentMemory
from terrarium_dagster.store.progress import ThreadProgress
from terrarium_dagster.store.provenance import ProvenanceLog
from terrarium_dagster.store.rollback import Rollback
from terrarium_dagster.store.rows import STATE_KEYS
from terrarium_dagster.store.runs import RunLog
from terrarium_dagster.store.sources import SourceLog

__all__ = ["STATE_KEYS", "Actor", "GlossaryStore", "parse_entry_id"]


class GlossaryStore(StoreConnection):
    """The annotator store. ``GlossaryStore(path)`` creates or migrates the file (``":memory:"``
    and ``sqlite:///path`` work too); ``GlossaryStore(path, read_only=True)`` is a reader's."""

    def __init__(
        self, path: str | Path, *, busy_timeout_ms: int = 10_000, read_only: bool = False
    ) -> None:
        super().__init__(path, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
        self.glossary = Glossary(self)
        self.provenance = ProvenanceLog(self)
        self.history = History(self)
        self.rollback = Rollback(self)
        self.runs = RunLog(self)
        self.memory = AgentMemory(self)
        self.progress = ThreadProgress(self)
        self.curation = CurationLog(self)
        self.sources = SourceLog(self)  # source posts of a living corpus: hashes, changes
        self.editions = EditionLog(self)  # the reader's edition, entry by entry, as of threads

    def close(self) -> None:
        self.runs.stop_heartbeat()  # a lease left unreleased goes stale and is taken over
        super().close()

    # ----------------------------------------------------------------------------------- meta
    @guarded
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row["value"]

    @guarded
    def set_meta(self, key: str, value: str | None) -> None:
        with self.transaction():
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
