"""What a thread's annotation, curation and export did: the engine's answers to its callers."""

from __future__ import annotations

from pydantic import BaseModel, Field

from terrarium_dagster.store.models import TokenFigures

__all__ = [
    "CurationDecisionRow",
    "ExportReport",
    "SourceLink",
    "ThreadReport",
    "TokenFigures",
    "TouchedEntry",
]


class SourceLink(BaseModel):
    ref: str
    # as a reader names it: ">>58" in a quest, "“PART ONE: Chapter 3”, paragraph 6" in a book
    label: str
    url: str | None = None


class TouchedEntry(BaseModel):
    entry_id: int
    term: str
    status: str
    action: str  # created, updated, deleted
    sources: list[SourceLink] = Field(default_factory=list)


class ThreadReport(TokenFigures):
    thread_id: int
    thread_key: str
    title: str
    scenes: int
    scenes_annotated: int = 0
    already_done: bool = False
    created: list[int] = Field(default_factory=list)
    updated: list[int] = Field(default_factory=list)
    deleted: list[int] = Field(default_factory=list)
    touched: list[TouchedEntry] = Field(default_factory=list)
    compactions: int = 0
    duration_s: float = 0.0
    completion_tokens_per_s: float = 0.0  # this run's completion tokens for the thread per second
    in_flight_peak: int = 0  # the most model requests in flight at once while annotating it
    snapshot_id: int | None = None
    rewound_threads: list[str] = Field(default_factory=list)
    suspect: str | None = None  # why its annotation is not to be trusted (ThreadState.suspect)


class CurationDecisionRow(BaseModel):
    """One curator decision as a reader sees it."""

    decision_id: int
    term: str
    decision: str
    target: str = ""
    reasoning: str = ""
    entry_id: int | None = None
    target_entry_id: int | None = None


class ExportReport(BaseModel):
    out_dir: str
    files: list[str]
    entries: int  # the glossary's size: live entries, not rejected (the wiki's pages)
    as_of_thread: int | None = None
    # a single-file export: the records the file holds, and how many of them are rejected or
    # merged away (JSON and YAML keep them, with their status) or how many entries it leaves
    # out (a lorebook: an entry without a key that can fire)
    held: int | None = None
    rejected: int = 0
    merged: int = 0
    left_out: int = 0
    unresolved_references: list[str] = Field(default_factory=list)
