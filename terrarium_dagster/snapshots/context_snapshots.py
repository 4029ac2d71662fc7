"""Snapshots: the agent's whole context saved at a thread boundary, a clean stop or a restore.

A snapshot is one `snapshot` row of the annotator store:
`SnapshotPayload` (the system prompt, the names and a hash of the tool schemas, the model, the
`ContextState` with its summaries, recent conversation, cursor and compaction counters, and the
thread's progress) plus `revision_id`, a pointer into the revision log: the last revision written
when the snapshot was taken. The glossary itself is never copied: "the glossary as the snapshot
knew it" is `store.history.glossary_as_of(revision_id)`.

Blame. Every revision records the snapshot *in force* when it was made (`Actor.snapshot_id`: the
latest snapshot, taken at the previous thread boundary, so *before* the edit). The conversation
that made the edit, though, only enters a snapshot at the next boundary: the first snapshot
taken *after* the revision holds the scene turns that made it (or, after compaction, the summary of
them). So the snapshot to summon for an edit (`snapshot_for_revision`) is the first snapshot
whose revision pointer is at or after the revision; when there is none yet (the thread is still
being annotated, or the run crashed before its boundary), it falls back to the snapshot in force.
Both ids are reported.

Restore (`restore_from_snapshot`, `terrarium run --from-snapshot ID`): the glossary is rolled back
to the snapshot's pointer (new 'rollback' revisions, nothing erased), the snapshot's thread is put
back where it stood (finished, or annotating at its cursor) and every later thread becomes pending,
the snapshot's context becomes the live context state, and a 'manual' snapshot with the same
payload (`restored_from` set) is saved, so that the latest snapshot (the one in force for the
revisions that follow) is the restored context, not one of the rolled-back future.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from terrarium_dagster.context.prompts import canonical_tools, tools_json
from terrarium_dagster.context.state import ContextState
from terrarium_dagster.errors import EntryNotFoundError, InputError, StoreError
from terrarium_dagster.jsonform import canonical_json
from terrarium_dagster.store.annotator import Actor, GlossaryStore, parse_entry_id
from terrarium_dagster.store.inputs import positive_id
from terrarium_dagster.store.models import (
    SNAPSHOT_KINDS,
    Revision,
    Snapshot,
    ThreadState,
)
from terrarium_dagster.store.normalize import normalize_term

SNAPSHOT_VERSION = 1
FINISHED_STATUSES = ("annotated", "curated")
_SNAPSHOT_REF = re.compile(r"^\s*(?:[Ss](?:napshot)?\s*)?#?\s*(\d+)\s*$")

SnapshotKind = Literal["thread_end", "shutdown", "manual"]
Basis = Literal["after", "in_force", "none"]


class SnapshotNotFoundError(InputError):
    """No snapshot with that id in the annotator store."""


class ThreadProgress(BaseModel):
    """The snapshot's thread as the store recorded it when the snapshot was taken."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: str
    scenes_total: int = 0
    scenes_done: int = 0


class SnapshotPayload(BaseModel):
    """What a snapshot stores (the `snapshot.state` column), serialized by `to_json`."""

    model_config = ConfigDict(extra="forbid")

    version: int = SNAPSHOT_VERSION
    system_prompt: str
    tool_names: list[str] = Field(default_factory=list)
    tools_hash: str = ""
    model: str | None = None
    thread_progress: ThreadProgress | None = None
    restored_from: int | None = None
    context: ContextState

    def to_json(self) -> str:
        """Deterministic JSON (sorted keys, compact): equal payloads give equal bytes."""
        return canonical_json(self.model_dump(mode="json"))

    @classmethod
    def from_json(cls, text: str | bytes) -> SnapshotPayload:
        """Parse a payload; `InputError` with one line naming the problem if it is not one."""
        try:
            raw = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InputError(f"snapshot payload is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise InputError("snapshot payload is not a JSON object")
        version = raw.get("version")
        if isinstance(version, int) and version > SNAPSHOT_VERSION:
            raise InputError(
                f"snapshot payload has format version {version}; this terrarium reads up to "
                f"{SNAPSHOT_VERSION} (upgrade terrarium to read it)"
            )
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "payload"
            message = f"snapshot payload is malformed: {where}: {problem['msg']}"
            raise InputError(message) from None


class SnapshotChoice(BaseModel):
    """Which snapshot to summon for one revision (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    revision_id: int
    snapshot_id: int | None  # the one to summon: after_id, else in_force_id
    in_force_id: int | None  # the snapshot the revision recorded (taken before the edit)
    after_id: int | None  # the first snapshot at or after the revision (holds the edit)
    basis: Basis


# ------------------------------------------------------------------------------------ helpers
def parse_snapshot_id(value: object) -> int:
    """A snapshot id from an int, ``"12"``, ``"#12"`` or ``"S12"``; InputError otherwise."""
    snapshot_id = positive_id(value, _SNAPSHOT_REF.match)
    if snapshot_id is not None:
        return snapshot_id
    raise InputError(f"{value!r} is not a snapshot id (expected a positive integer)")


def tool_schemas_of(tools: object) -> list[dict[str, Any]]:
    """The tool schemas of a `ToolRegistry` (anything with `schemas()`), a list of `Tool`s or a
    list of schema dicts, in their order."""
    if tools is None:
        return []
    schemas_method = getattr(tools, "schemas", None)
    if callable(schemas_method):
        return list(schemas_method())
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise InputError("tools must be a ToolRegistry, a list of Tool or a list of schema dicts")
    schemas: list[dict[str, Any]] = []
    for tool in tools:
        schema_method = getattr(tool, "schema", None)
        if callable(schema_method):
            schemas.append(schema_method())
        elif isinstance(tool, Mapping):
            schemas.append(dict(tool))
        else:
            raise InputError(f"tool {tool!r} is neither a Tool nor a schema dict")
    return schemas


def tool_names_of(schemas: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for schema in schemas:
        function = schema.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InputError(f"tool schema without a function name: {str(schema)[:80]}")
        names.append(name)
    return names


def tools_digest(schemas: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of the canonical JSON of the schemas (what the chat template renders)."""
    canonical = canonical_tools([dict(schema) for schema in schemas]) or []
    return hashlib.sha256(tools_json(canonical).encode("utf-8")).hexdigest()


def _no_such_snapshot(store: GlossaryStore, snapshot_id: int) -> SnapshotNotFoundError:
    latest = store.memory.latest_snapshot()
    if latest is None:
        known = "the store has no snapshots yet"
    else:
        known = f"snapshot ids go up to {latest.id}; `terrarium snapshots` lists them"
    return SnapshotNotFoundError(f"no snapshot {snapshot_id} in the annotator store ({known})")


# -------------------------------------------------------------------------------- save / load
def save_snapshot(
    store: GlossaryStore,
    *,
    kind: SnapshotKind | str,
    thread_id: int | None,
    scene_id: str | None,
    run_id: str | None,
    state: ContextState,
    system_prompt: str,
    tools: object,
    model: str | None,
    restored_from: int | None = None,
) -> int:
    """Save the context as a snapshot pointing at the current end of the revision log.

    Runs in `store.transaction()` (it joins an open one, e.g. the loop's thread-end
    transaction). `thread_id`/`scene_id` default to the state's cursor when None. `tools` is the
    run's `ToolRegistry`, its `Tool`s or its schema dicts. Returns the snapshot id.
    """
    if kind not in SNAPSHOT_KINDS:
        raise InputError(f"snapshot kind {kind!r} is not one of {', '.join(SNAPSHOT_KINDS)}")
    if not isinstance(state, ContextState):
        raise InputError(f"state must be a ContextState, not {type(state).__name__}")
    if not isinstance(system_prompt, str) or not system_prompt.strip():
        raise InputError("a snapshot needs the run's system prompt")
    schemas = tool_schemas_of(tools)
    thread = thread_id if thread_id is not None else state.cursor.thread_id
    scene = scene_id if scene_id is not None else state.cursor.scene_id
    with store.transaction():
        progress = None
        if thread is not None:
            recorded = store.progress.thread_state(thread)
            if recorded is not None:
                progress = ThreadProgress(
                    status=recorded.status,
                    scenes_total=recorded.scenes_total,
                    scenes_done=recorded.scenes_done,
                )
        payload = SnapshotPayload(
            system_prompt=system_prompt,
            tool_names=tool_names_of(schemas),
            tools_hash=tools_digest(schemas),
            model=model,
            thread_progress=progress,
            restored_from=restored_from,
            context=state.model_copy(deep=True),
        )
        return store.memory.save_snapshot(
            kind=kind,
            thread_id=thread,
            scene_id=scene,
            run_id=run_id,
            state_json=payload.to_json(),
            revision_id=store.history.last_revision_id(),
        )


def load_snapshot(store: GlossaryStore, snapshot_id: int | str) -> tuple[Snapshot, SnapshotPayload]:
    """The snapshot row and its parsed payload. `SnapshotNotFoundError` (an InputError) for an
    unknown id, `StoreError` when the stored payload cannot be read."""
    number = parse_snapshot_id(snapshot_id)
    try:
        row = store.memory.snapshot(number)
    except StoreError as exc:
        if "no snapshot" in str(exc):
            raise _no_such_snapshot(store, number) from None
        raise
    try:
        payload = SnapshotPayload.from_json(row.state_json)
    except InputError as exc:
        raise StoreError(f"snapshot {number} cannot be read: {exc}") from None
    return row, payload


def snapshot_in_force(store: GlossaryStore) -> int | None:
    """The snapshot revisions written now record: the latest snapshot (None before any)."""
    latest = store.memory.latest_snapshot()
    return latest.id if latest else None


# ------------------------------------------------------------------------------------- blame
def snapshot_for_revision(store: GlossaryStore, revision_id: int) -> SnapshotChoice:
    """The snapshot to summon to ask about a revision: the first snapshot whose revision
    pointer is at or after it (its context holds the turns that made the edit), else the one in
    force when it was made. StoreError if there is no such revision."""
    revision = store.history.revision(revision_id)
    return _choice(store, revision)


def _choice(store: GlossaryStore, revision: Revision) -> SnapshotChoice:
    after = next(
        (
            header.id
            for header in sorted(
                store.memory.snapshot_headers(), key=lambda h: (h.revision_id or 0, h.id)
            )
            if header.revision_id is not None and header.revision_id >= revision.id
        ),
        None,
    )
    in_force = revision.snapshot_id
    basis: Basis
    if after is not None:
        chosen, basis = after, "after"
    elif in_force is not None:
        chosen, basis = in_force, "in_force"
    else:
        chosen, basis = None, "none"
    return SnapshotChoice(
        revision_id=revision.id,
        snapshot_id=chosen,
        in_force_id=in_force,
        after_id=after,
        basis=basis,
    )


def find_entry(store: GlossaryStore, entry: object) -> int:
    """An entry id from ``12``, ``"E12"``, a term or an alias (live first, then deleted ones).
    `EntryNotFoundError` naming what was asked otherwise."""
    if isinstance(entry, int) and not isinstance(entry, bool):
        store.glossary.get_entry(entry)
        return entry
    if not isinstance(entry, str) or not entry.strip():
        raise InputError("give an entry id (E12) or a term")
    text = entry.strip()
    if re.fullmatch(r"[Ee]?\d+", text):
        number = parse_entry_id(text)
        try:
            store.glossary.get_entry(number)
        except EntryNotFoundError:
            raise EntryNotFoundError(
                f"no entry E{number} in the glossary (give a term or an alias, or the E<id> "
                "`terrarium lineage TERM` shows)"
            ) from None
        return number
    found = store.glossary.find_by_term(text)
    if found is not None:
        return found.id
    norm = normalize_term(text)
    for candidate in store.glossary.entries(include_deleted=True):
        names = [candidate.term, *candidate.aliases]
        if any(normalize_term(name) == norm for name in names):
            return candidate.id
    raise EntryNotFoundError(
        store.glossary.unknown_name(text, advice="give E<id>, a term or an alias")
    )


def revision_to_explain(store: GlossaryStore, entry_id: int) -> Revision:
    """The revision of an entry to ask about: the latest agent revision that wrote its current
    definition (a create, or an update that changed the definition), else the latest agent
    revision of it, else its latest revision."""
    revisions = store.history.revisions(entry_id)
    if not revisions:
        raise EntryNotFoundError(f"entry E{entry_id} has no revisions")
    current = store.glossary.get_entry(entry_id).definition
    agent = [revision for revision in revisions if revision.actor_kind == "agent"]
    for revision in reversed(agent):
        new = (revision.new_value or {}).get("definition")
        old = (revision.old_value or {}).get("definition") if revision.old_value else None
        if new == current and (revision.old_value is None or old != new):
            return revision
    return agent[-1] if agent else revisions[-1]


def snapshot_for_entry(store: GlossaryStore, entry: object) -> SnapshotChoice:
    """The snapshot to summon for an entry (id, "E12", term or alias): see
    `revision_to_explain` and `snapshot_for_revision`."""
    entry_id = find_entry(store, entry)
    return _choice(store, revision_to_explain(store, entry_id))


# ----------------------------------------------------------------------------------- restore
def restore_from_snapshot(
    store: GlossaryStore, actor: Actor, snapshot_id: int | str, *, reason: str | None = None
) -> ContextState:
    """Go back to a snapshot (one transaction): roll the glossary back to its revision pointer,
    put its thread back where it stood and make every later thread pending, save its context as
    the live context, and save a 'manual' snapshot of it (`restored_from`) that becomes the
    snapshot in force. Returns the restored context; the loop resumes from its cursor.

    The snapshot's thread, when the snapshot is a thread end (or the thread had finished):
    'annotated' at its last scene with `end_revision_id` = the pointer, or still 'curated' when
    nothing its curation wrote came after the pointer. Otherwise: 'annotating' at the
    snapshot's cursor with the scenes done then.
    """
    if not isinstance(actor, Actor):
        raise InputError(f"actor must be an Actor, not {type(actor).__name__}")
    row, payload = load_snapshot(store, snapshot_id)
    if row.revision_id is None:
        raise StoreError(f"snapshot {row.id} does not point into the revision log; cannot restore")
    pointer = row.revision_id
    why = reason or (
        f"restore snapshot {row.id} ({row.kind}, thread {row.thread_id}, scene {row.scene_id})"
    )
    with store.transaction():
        own = store.progress.thread_state(row.thread_id) if row.thread_id is not None else None
        if row.thread_id is not None and own is None:
            raise StoreError(
                f"snapshot {row.id}'s thread {row.thread_id} has no recorded state; cannot tell "
                "which threads come after it"
            )
        curated_after = own is not None and any(
            revision.actor_kind == "curator"
            for revision in store.history.revisions(thread_id=own.thread_id, since_id=pointer)
        )
        store.rollback.rollback_to_revision(actor, pointer, why)
        position = own.position if own is not None else -1
        for state in store.progress.thread_states():
            if state.position > position:
                store.progress.set_thread_state(
                    state.thread_id,
                    status="pending",
                    scenes_done=0,
                    cursor_scene_id=None,
                    end_revision_id=None,
                    snapshot_id=None,
                )
        if own is not None:
            _restore_own_thread(store, row, payload, own, pointer, curated_after)
        store.memory.save_context_state(payload.context.to_json())
        restored = payload.model_copy(update={"restored_from": row.id})
        store.memory.save_snapshot(
            kind="manual",
            thread_id=row.thread_id,
            scene_id=row.scene_id,
            run_id=actor.run_id if actor.run_id is not None else row.run_id,
            state_json=restored.to_json(),
            revision_id=store.history.last_revision_id(),
        )
    return payload.context.model_copy(deep=True)


def _restore_own_thread(
    store: GlossaryStore,
    row: Snapshot,
    payload: SnapshotPayload,
    own: ThreadState,
    pointer: int,
    curated_after: bool,
) -> None:
    progress = payload.thread_progress
    cursor = payload.context.cursor
    cursor_scene = cursor.scene_id if cursor.thread_id == own.thread_id else None
    finished = row.kind == "thread_end" or (
        progress is not None and progress.status in FINISHED_STATUSES
    )
    total = progress.scenes_total if progress and progress.scenes_total else own.scenes_total
    assert row.thread_id is not None
    if finished:
        keep_curated = own.status == "curated" and not curated_after
        store.progress.set_thread_state(
            row.thread_id,
            status="curated" if keep_curated else "annotated",
            scenes_total=total,
            scenes_done=total,
            cursor_scene_id=cursor_scene,
            end_revision_id=own.end_revision_id if keep_curated else pointer,
            snapshot_id=row.id if row.kind == "thread_end" else own.snapshot_id,
        )
    else:
        done = progress.scenes_done if progress is not None else own.scenes_done
        store.progress.set_thread_state(
            row.thread_id,
            status="annotating",
            scenes_total=total,
            scenes_done=done,
            cursor_scene_id=cursor_scene,
            end_revision_id=None,
            snapshot_id=None,
        )
