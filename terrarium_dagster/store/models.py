"""Pydantic models of the annotator store: what it returns and what it accepts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

EntryStatus = Literal["tentative", "confirmed", "rejected", "merged"]
ThreadStatus = Literal["pending", "annotating", "annotated", "curated", "stale"]
SnapshotKind = Literal["thread_end", "shutdown", "manual"]

ENTRY_STATUSES: tuple[str, ...] = ("tentative", "confirmed", "rejected", "merged")
THREAD_STATUSES: tuple[str, ...] = ("pending", "annotating", "annotated", "curated", "stale")
SNAPSHOT_KINDS: tuple[str, ...] = ("thread_end", "shutdown", "manual")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Entry(_Frozen):
    """A glossary entry as it stands (or stood, in an as-of view)."""

    id: int
    term: str
    norm_term: str
    definition: str
    status: EntryStatus
    tags: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)
    merged_into: int | None = None
    deleted: bool = False
    delete_reason: str | None = None
    first_seen_post: int | None = None
    first_seen_thread: int | None = None
    last_seen_post: int | None = None
    last_seen_thread: int | None = None
    created_revision: int | None = None
    updated_revision: int | None = None

    @property
    def ref(self) -> str:
        """The id as the model sees it: ``E12``."""
        return f"E{self.id}"

    @property
    def live(self) -> bool:
        """Neither deleted nor merged away: its names belong to it."""
        return not self.deleted and self.merged_into is None


class ProvenanceIn(_Frozen):
    """A source of a fact, as the caller gives it."""

    post_id: int = Field(gt=0)
    thread_id: int = Field(gt=0)
    quote: str = ""

    @field_validator("quote")
    @classmethod
    def _strip_quote(cls, value: str) -> str:
        return value.strip()


class Provenance(_Frozen):
    """A recorded source: entry, post, thread, quote and the revision that recorded it."""

    id: int
    entry_id: int
    post_id: int
    thread_id: int
    quote: str
    revision_id: int
    superseded_revision_id: int | None = None
    moved_from: int | None = None

    @property
    def ref(self) -> str:
        """The post reference ``<thread_id>#<post_id>``."""
        return f"{self.thread_id}#{self.post_id}"


class Revision(_Frozen):
    """One change of one entry, with the full entry state before and after.

    ``old_value``/``new_value`` hold term, definition, status, tags, aliases, deleted,
    delete_reason and merged_into. ``detail`` holds action-specific facts (merge partner, rollback
    boundary, provenance rows added). ``group_id`` ties the revisions of one operation touching
    several entries (merge, rollback) together: the id of the first revision of the group.
    ``created_at`` is wall-clock time: ignore it when comparing two runs.
    """

    id: int
    entry_id: int | None
    action: str
    old_value: dict[str, Any] | None = None
    new_value: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    group_id: int | None = None
    reason: str | None = None
    actor_kind: str
    run_id: str | None = None
    thread_id: int | None = None
    scene_id: str | None = None
    snapshot_id: int | None = None
    created_at: str | None = None


class SearchHit(_Frozen):
    """A search result. ``exact`` hits (normalized term or alias equal to the query) come first;
    ``score`` is the negated bm25 rank (higher is better, 0 for an exact hit FTS did not match)."""

    entry: Entry
    score: float
    exact: bool = False


class EntryView(Entry):
    """An entry with its live provenance, as exports and as-of views need it."""

    provenance: list[Provenance] = Field(default_factory=list)
    # the reader's edition as of the view's thread (exports attach it; None: not written)
    edition: str | None = None


class ThreadState(_Frozen):
    """Annotation progress of one thread."""

    thread_id: int
    thread_key: str
    position: int
    status: ThreadStatus
    scenes_total: int = 0
    scenes_done: int = 0
    cursor_scene_id: str | None = None
    run_id: str | None = None
    end_revision_id: int | None = None
    snapshot_id: int | None = None
    updated_at: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.status in ("annotated", "curated") and self.end_revision_id is not None

    @property
    def suspect(self) -> str | None:
        """Why the thread's annotation is not to be trusted, from its scenes' answers (counted in
        `extra["answers"]` by the scene loop), or None: no tool call in any of two answers or more
        (a server that drops the tool schemas, a model that cannot call tools; a thread of one
        short scene, a novel's closing page, may rightly call none), every answer cut at
        max_tokens, or none of two tool calls or more with JSON arguments (a server whose
        tool-call parser does not match the model's format)."""
        return suspect_reason(self.extra.get(ANSWERS_KEY))


ANSWERS_KEY = "answers"
"""`ThreadState.extra` key of the thread's scene-round answers: {"answers", "cut", "tool_calls"},
and "unreadable" when a tool call's arguments were no JSON object."""
UNREADABLE = "unreadable"


def suspect_reason(answers: Any) -> str | None:
    """See `ThreadState.suspect`; `answers` as the scene loop counts them."""
    if not isinstance(answers, dict):
        return None
    count, cut, calls = (int(answers.get(key) or 0) for key in ("answers", "cut", "tool_calls"))
    if count == 0:
        return None
    if calls == 0 and count >= 2:  # one answer deciding nothing is a quiet scene, not a sign
        return f"no tool call in {count} answers"
    if cut >= count:
        return f"{'its one answer' if count == 1 else f'all {count} answers'} cut at max_tokens"
    if calls >= 2 and int(answers.get(UNREADABLE) or 0) >= calls:
        return (
            f"none of its {calls} tool calls had JSON arguments (does the server's"
            " --tool-call-parser match the model?)"
        )
    return None


class WriterLease(_Frozen):
    """Who holds the store's one-writer lease (whether it lives: `RunLog.holder_alive`)."""

    run_id: str
    pid: int
    host: str
    since: str
    heartbeat: str


class RunRecord(_Frozen):
    id: str
    started_at: str
    finished_at: str | None = None
    status: str
    config: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class Snapshot(_Frozen):
    """A saved context state (a snapshot); ``id`` is the snapshot id revisions refer to."""

    id: int
    kind: SnapshotKind
    thread_id: int | None = None
    scene_id: str | None = None
    run_id: str | None = None
    state_json: str
    revision_id: int | None = None
    created_at: str


class AgentCallRecord(BaseModel):
    """One call to the model, for token accounting. ``id``/``created_at`` are set by the store."""

    id: int | None = None
    run_id: str | None = None
    thread_id: int | None = None
    scene_id: str | None = None
    purpose: str = "annotate"
    model: str | None = None
    prompt_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(default=0.0, ge=0)
    finish_reason: str | None = None
    error: str | None = None
    server: str | None = None  # the server (replica) asked
    created_at: str | None = None
    request_key: str | None = None  # the call ledger's key: a request is recorded once


class TokenFigures(BaseModel):
    """Model calls and their token counts (of a thread's work, or summed from call records)."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0

    @property
    def cache_hit_rate(self) -> float:
        """Share of prompt tokens served from the prefix cache (0.0 when nothing was sent)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def token_figures(self) -> dict[str, int]:
        """The calls and token counts alone, to carry into another report."""
        return {name: getattr(self, name) for name in TokenFigures.model_fields}


class CallTotals(TokenFigures):
    """Sums over agent calls; their JSON carries the cache hit rate."""

    model_config = ConfigDict(frozen=True)

    latency_ms: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cache_hit_rate(self) -> float:
        return super().cache_hit_rate


class SnapshotHeader(_Frozen):
    """A snapshot without its payload (cheap to list)."""

    id: int
    kind: str
    thread_id: int | None
    scene_id: str | None
    run_id: str | None
    revision_id: int | None
    created_at: str
    size: int


class UndoneChange(_Frozen):
    """What undoing one change (a revision with its group) wrote.

    ``undone``: the revisions of the change that was undone (a merge has two, a rollback one per
    entry). ``revision_ids``: the compensating 'undo' revisions written, one per entry changed.
    ``kept``: one line per part of the change that a later revision had already replaced, which
    the undo therefore left as it is (naming that revision).
    """

    revision_id: int
    action: str
    undone: list[int]
    entry_ids: list[int]
    revision_ids: list[int]
    kept: list[str] = Field(default_factory=list)
