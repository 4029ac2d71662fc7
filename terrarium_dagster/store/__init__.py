"""The annotator store: glossary entries, aliases, provenance, revisions, as-of views, and the
bookkeeping of runs, threads, agent calls, compactions, context state and snapshots (no Dagster)."""

from terrarium_dagster.store.annotator import Actor, GlossaryStore, parse_entry_id
from terrarium_dagster.store.fts import fts_query
from terrarium_dagster.store.models import (
    AgentCallRecord,
    CallTotals,
    Entry,
    EntryView,
    Provenance,
    ProvenanceIn,
    Revision,
    RunRecord,
    SearchHit,
    Snapshot,
    ThreadState,
)
from terrarium_dagster.store.normalize import (
    mentions,
    normalize_term,
    normalize_text,
    term_variants,
)
from terrarium_dagster.store.records import UNSET
from terrarium_dagster.store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "UNSET",
    "Actor",
    "AgentCallRecord",
    "CallTotals",
    "Entry",
    "EntryView",
    "GlossaryStore",
    "Provenance",
    "ProvenanceIn",
    "Revision",
    "RunRecord",
    "SearchHit",
    "Snapshot",
    "ThreadState",
    "fts_query",
    "mentions",
    "normalize_term",
    "normalize_text",
    "parse_entry_id",
    "term_variants",
]
