"""Undo a curator decision or any revision: what `terrarium undo` and the Dagster `undo_change`
job call (through `GlossaryEdits.undo`).

The glossary writes the compensating revisions (`Glossary.undo_change`: a three-way revert that
works after later changes, nothing erased). Here the undo is named (its revisions' reason says
what was undone and why), every curator decision whose change it reverses is marked undone, and
the glossary as of the last finished thread moves forward to include the correction when no
later thread has begun, so that thread's exports and the reader's site show it.
"""

from __future__ import annotations

from terrarium_dagster.curation.decisions import UndoResult
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.undo import check_revision, undone_by

DEFAULT_REASON = "undone by the user"


def _decision(store: GlossaryStore, decision_id: int) -> dict[str, object]:
    if isinstance(decision_id, bool) or not isinstance(decision_id, int) or decision_id < 1:
        raise InputError(f"a curator decision id is a positive integer, not {decision_id!r}")
    rows = [row for row in store.curation.curator_decisions() if row["id"] == decision_id]
    if not rows:
        raise InputError(
            f"no curator decision {decision_id} in the annotator store (`terrarium lineage "
            "TERM` shows the decisions on an entry)"
        )
    return rows[0]


def _describe(row: dict[str, object]) -> str:
    into = f" into E{row['target_entry_id']}" if row.get("target_entry_id") else ""
    return f"curator decision {row['id']} ({row['decision']} E{row['entry_id']}{into})"


def require_one_id(decision_id: int | None, revision_id: int | None) -> None:
    """An undo names exactly one thing: a curator decision or a revision."""
    if (decision_id is None) == (revision_id is None):
        raise InputError("undo: give a curator decision id or a revision id (one of them)")


def check_undo(
    store: GlossaryStore, *, decision_id: int | None = None, revision_id: int | None = None
) -> None:
    """The refusals of an undo that need no write, each one line: exactly one id, a decision
    or revision that exists, changed something, is not undone and was not rolled back since
    (`store/undo.py::check_revision`). `terrarium undo` asks it before it takes the writer
    lease, so a refused undo leaves the store as it was, its file's time too; the undo itself
    asks the same again."""
    require_one_id(decision_id, revision_id)
    if decision_id is not None:
        revision_id = _decision_revision(store, decision_id)[1]
    assert revision_id is not None
    check_revision(store.conn, store.history, revision_id)


def _decision_revision(store: GlossaryStore, decision_id: int) -> tuple[dict[str, object], int]:
    """The decision and the revision it wrote, or one line: unknown, changed nothing, undone."""
    row = _decision(store, decision_id)
    revision_id = row.get("revision_id")
    if revision_id is None:
        raise InputError(f"{_describe(row)} changed nothing; there is nothing to undo")
    earlier = undone_by(store.conn, _group_ids(store, int(str(revision_id))))
    if earlier is not None:
        raise InputError(
            f"{_describe(row)} was already undone (revision {earlier}); undo revision "
            f"{earlier} to bring it back"
        )
    return row, int(str(revision_id))


def undo_decision(
    store: GlossaryStore, actor: Actor, decision_id: int, reason: str | None = None
) -> UndoResult:
    """Undo one curator decision (CONFIRM, REJECT, MERGE, REVISE), however the entries changed
    since. InputError (one line) for an unknown decision, one that changed nothing, or one
    already undone; see `Glossary.undo_change` for the rest."""
    with store.transaction():
        row, revision_id = _decision_revision(store, decision_id)
        return _undo(store, actor, revision_id, _describe(row), reason)


def undo_revision(
    store: GlossaryStore, actor: Actor, revision_id: int, reason: str | None = None
) -> UndoResult:
    """Undo one revision (with its group), however the entries changed since."""
    if isinstance(revision_id, bool) or not isinstance(revision_id, int) or revision_id < 1:
        raise InputError(f"a revision id is a positive integer, not {revision_id!r}")
    with store.transaction():
        found = store.conn.execute(
            "SELECT action, entry_id FROM revision WHERE id = ?", (revision_id,)
        ).fetchone()
        if found is None:
            raise InputError(
                f"no revision {revision_id} in the annotator store (`terrarium lineage TERM` "
                "lists an entry's revisions)"
            )
        what = f"revision {revision_id} ({found['action']} E{found['entry_id']})"
        return _undo(store, actor, revision_id, what, reason)


def _group_ids(store: GlossaryStore, revision_id: int) -> list[int]:
    row = store.conn.execute(
        "SELECT group_id FROM revision WHERE id = ?", (revision_id,)
    ).fetchone()
    if row is None or row["group_id"] is None:
        return [revision_id]
    rows = store.conn.execute("SELECT id FROM revision WHERE group_id = ?", (row["group_id"],))
    return [int(other[0]) for other in rows]


def _undo(
    store: GlossaryStore, actor: Actor, revision_id: int, what: str, reason: str | None
) -> UndoResult:
    why = " ".join((reason or "").split()) or DEFAULT_REASON
    done = store.rollback.undo_change(actor, revision_id, f"undo {what}: {why}")
    marked: list[int] = []
    undone = set(done.undone)
    for row in store.curation.curator_decisions():
        if row.get("revision_id") in undone:
            store.curation.mark_decision_undone(int(row["id"]), done.revision_ids[-1])
            marked.append(int(row["id"]))
        elif row.get("undone_revision_id") in undone:  # its undo undone: in force again
            store.curation.mark_decision_undone(int(row["id"]), None)
    thread_key = _extend_last_thread(store, done.revision_ids[-1])
    return UndoResult(
        what=what,
        revision_id=revision_id,
        undone=done.undone,
        decision_ids=marked,
        entry_ids=done.entry_ids,
        revision_ids=done.revision_ids,
        kept=done.kept,
        thread_key=thread_key,
    )


def _extend_last_thread(store: GlossaryStore, last_revision: int) -> str | None:
    """Make the glossary as of the last finished thread include the undo, unless a later thread
    has written since (its revisions would leak into that thread's view). Returns its key."""
    states = [state for state in store.progress.thread_states() if state.end_revision_id]
    if not states:
        return None
    last = max(states, key=lambda state: (state.position, state.thread_id))
    assert last.end_revision_id is not None
    other = store.conn.execute(
        "SELECT 1 FROM revision WHERE id > ? AND thread_id IS NOT NULL AND thread_id <> ? LIMIT 1",
        (last.end_revision_id, last.thread_id),
    ).fetchone()
    if other is not None:
        return None
    store.progress.set_thread_state(last.thread_id, end_revision_id=last_revision)
    return last.thread_key
