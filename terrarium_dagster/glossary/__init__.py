"""The annotator store: glossary entries, aliases, provenance, revisions, as-of views, and the
bookkeeping of runs, threads, agent calls, compactions, context state and snapshots (no Dagster)."""

from terrarium_dagster.glossary.fts import fts_query
from terrarium_dagster.glossary.models import (
    AgentCallRecord,
    CallTotals,
    Checkpoint,
    Entry,
    EntryView,
    Provenance,
    ProvenanceIn,
    Revision,
    RunRecord,
    SearchHit,
    ThreadState,
)
from terrarium_dagster.glossary.normalize import (
    mentions,
    normalize_term,
    normalize_text,
    term_variants,
)
from terrarium_dagster.glossary.records import UNSET
from terrarium_dagster.glossary.schema import SCHEMA_VERSION
from terrarium_dagster.glossary.store import Actor, GlossaryStore, parse_entry_id

__all__ = [
    "SCHEMA_VERSION",
    "UNSET",
    "Actor",
    "AgentCallRecord",
    "CallTotals",
    "Checkpoint",
    "Entry",
    "EntryView",
    "GlossaryStore",
    "Provenance",
    "ProvenanceIn",
    "Revision",
    "RunRecord",
    "SearchHit",
    "ThreadState",
    "fts_query",
    "mentions",
    "normalize_term",
    "normalize_text",
    "parse_entry_id",
    "term_variants",
]
