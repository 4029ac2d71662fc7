"""Annotator store: as-of views, rollback (to a revision, from a thread) and undo."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store import Actor, EntryView, GlossaryStore, ProvenanceIn

ROLLBACK = Actor("rollback", run_id="run-2")
CURATOR = Actor("curator", run_id="run-1")


def agent(thread_id: int) -> Actor:
    return Actor("agent", run_id="run-1", thread_id=thread_id, scene_id=f"{thread_id}#1")


def src(post_id: int, thread_id: int, quote: str = "") -> ProvenanceIn:
    return ProvenanceIn(post_id=post_id, thread_id=thread_id, quote=quote)


def content(views: list[EntryView]) -> list[tuple[Any, ...]]:
    """What an as-of view says, without the revision bookkeeping that differs after a rollback."""
    return [
        (
            view.id,
            view.term,
            view.definition,
            view.status,
            view.tags,
            view.aliases,
            view.deleted,
            view.merged_into,
            view.first_seen_post,
            view.last_seen_post,
            sorted((p.post_id, p.thread_id, p.quote) for p in view.provenance),
        )
        for view in views
    ]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "terrarium.db") as opened:
        yield opened


def finish(store: GlossaryStore, thread_id: int, position: int) -> int:
    end = store.history.last_revision_id()
    store.progress.set_thread_state(
        thread_id,
        thread_key=f"t{position:05d}-{thread_id}",
        position=position,
        status="annotated",
        scenes_total=3,
        scenes_done=3,
        cursor_scene_id=f"{thread_id}#3",
        end_revision_id=end,
    )
    return end


def three_threads(store: GlossaryStore) -> dict[str, int]:
    """Thread 100 creates entries, 200 changes and merges them, 300 deletes and adds more."""
    a100, a200, a300 = agent(100), agent(200), agent(300)
    vorn = store.glossary.create_entry(a100, "Vorn", "A town.", provenance=[src(101, 100)])
    witch = store.glossary.create_entry(a100, "Keth'ra", "A witch.", provenance=[src(102, 100)])
    hill = store.glossary.create_entry(a100, "Red Hill", "A hill.", provenance=[src(103, 100)])
    end100 = finish(store, 100, 0)
    store.glossary.update_entry(
        a200, vorn.id, definition="A river town.", provenance=[src(201, 200)]
    )
    store.glossary.add_alias(a200, witch.id, "Red Witch")
    store.glossary.merge_entries(a200, hill.id, witch.id, "the hill is named for her")
    tithe = store.glossary.create_entry(a200, "Ember-Tithe", "A tax.", provenance=[src(202, 200)])
    end200 = finish(store, 200, 1)
    store.glossary.delete_entry(a300, vorn.id, "not a story term")
    store.glossary.update_entry(a300, tithe.id, status="confirmed", provenance=[src(301, 300)])
    store.glossary.create_entry(a300, "Ash Moot", "A council.", provenance=[src(302, 300)])
    end300 = finish(store, 300, 2)
    return {
        "vorn": vorn.id,
        "witch": witch.id,
        "hill": hill.id,
        "tithe": tithe.id,
        "end100": end100,
        "end200": end200,
        "end300": end300,
    }


# -------------------------------------------------------------------------------------- as-of
def test_as_of_shows_the_glossary_at_each_boundary(store: GlossaryStore):
    ids = three_threads(store)
    at100 = store.history.glossary_as_of(ids["end100"])
    assert [(v.term, v.aliases, v.status) for v in at100] == [
        ("Vorn", [], "tentative"),
        ("Keth'ra", [], "tentative"),
        ("Red Hill", [], "tentative"),
    ]
    assert [[p.post_id for p in v.provenance] for v in at100] == [[101], [102], [103]]
    at200 = {v.term: v for v in store.history.glossary_as_of(ids["end200"])}
    assert at200["Vorn"].definition == "A river town."
    assert [p.post_id for p in at200["Vorn"].provenance] == [101, 201]
    assert at200["Keth'ra"].aliases == ["Red Witch", "Red Hill"]
    assert [p.post_id for p in at200["Keth'ra"].provenance] == [102, 103]
    assert at200["Red Hill"].status == "merged" and at200["Red Hill"].provenance == []
    at300 = {v.term: v for v in store.history.glossary_as_of(ids["end300"])}
    assert "Vorn" not in at300 and "Ash Moot" in at300
    assert at300["Ember-Tithe"].status == "confirmed"
    assert store.history.glossary_as_of(0) == []
    with_deleted = store.history.glossary_as_of(ids["end300"], include_deleted=True)
    assert any(v.term == "Vorn" and v.deleted for v in with_deleted)


def test_as_of_in_the_middle_of_a_merge_group_and_single_entry(store: GlossaryStore):
    ids = three_threads(store)
    merged_into = next(r for r in store.history.revisions(ids["hill"]) if r.action == "merged_into")
    view = store.history.entry_as_of(ids["witch"], merged_into.id)
    assert view is not None and view.aliases == ["Red Witch"]  # target side not yet written
    assert store.history.entry_as_of(ids["tithe"], ids["end100"]) is None


def test_as_of_now_equals_the_current_glossary(store: GlossaryStore):
    three_threads(store)
    now = store.history.glossary_as_of(store.history.last_revision_id(), include_deleted=True)
    assert now == store.glossary.entry_views(include_deleted=True)


def test_as_of_thread_uses_its_end_revision(store: GlossaryStore):
    ids = three_threads(store)
    assert store.history.glossary_as_of_thread(200) == store.history.glossary_as_of(ids["end200"])
    store.progress.set_thread_state(400, thread_key="t00003-400", position=3, status="annotating")
    with pytest.raises(StoreError, match=r"thread t00003-400 \(400\) has not finished"):
        store.history.glossary_as_of_thread(400)
    with pytest.raises(StoreError, match="thread 999 has not finished"):
        store.history.glossary_as_of_thread(999)


def test_as_of_rejects_a_negative_boundary(store: GlossaryStore):
    with pytest.raises(InputError):
        store.history.glossary_as_of(-1)


# ----------------------------------------------------------------------------------- rollback
def test_rollback_restores_the_glossary_as_it_stood(store: GlossaryStore):
    ids = three_threads(store)
    expected = content(store.history.glossary_as_of(ids["end100"], include_deleted=True))
    before_rollback = store.history.last_revision_id()
    history = content(store.history.glossary_as_of(before_rollback, include_deleted=True))
    changed = store.rollback.rollback_to_revision(ROLLBACK, ids["end100"], "bad model output")
    assert changed == 5  # vorn, witch, hill, tithe, ash moot
    after = store.history.glossary_as_of(store.history.last_revision_id())
    assert content(after) == expected
    tithe = store.glossary.get_entry(ids["tithe"])
    assert tithe.deleted and tithe.delete_reason == "rollback: bad model output"
    assert store.provenance.for_entry(ids["tithe"]) == []
    hill = store.glossary.get_entry(ids["hill"])
    assert hill.status == "tentative" and hill.merged_into is None
    assert [p.post_id for p in store.provenance.for_entry(ids["hill"])] == [103]
    assert [p.post_id for p in store.provenance.for_entry(ids["vorn"])] == [101]
    assert store.glossary.find_by_term("red hill").id == ids["hill"]  # type: ignore[union-attr]
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # Nothing erased: the past is still readable, and rollback revisions form one group.
    assert content(store.history.glossary_as_of(before_rollback, include_deleted=True)) == history
    rollback_revisions = store.history.revisions(since_id=before_rollback)
    assert {r.action for r in rollback_revisions} == {"rollback"}
    assert {r.group_id for r in rollback_revisions} == {rollback_revisions[0].id}
    assert all(r.detail and r.detail["boundary"] == ids["end100"] for r in rollback_revisions)


def test_rollback_to_the_last_revision_changes_nothing(store: GlossaryStore):
    three_threads(store)
    last = store.history.last_revision_id()
    assert store.rollback.rollback_to_revision(ROLLBACK, last, "nothing") == 0
    assert store.history.last_revision_id() == last


def test_double_rollback_and_rollback_past_a_rollback(store: GlossaryStore):
    ids = three_threads(store)
    at100 = content(store.history.glossary_as_of(ids["end100"]))
    at200 = content(store.history.glossary_as_of(ids["end200"]))
    assert store.rollback.rollback_to_revision(ROLLBACK, ids["end200"], "first") == 3
    assert content(store.history.glossary_as_of(store.history.last_revision_id())) == at200
    moot = store.glossary.find_by_term("ash moot")
    assert moot is None
    assert store.rollback.rollback_to_revision(ROLLBACK, ids["end200"], "again") == 0
    assert store.rollback.rollback_to_revision(ROLLBACK, ids["end100"], "further") == 4
    assert content(store.history.glossary_as_of(store.history.last_revision_id())) == at100
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_rollback_then_new_work_then_rollback_to_the_rollback(store: GlossaryStore):
    ids = three_threads(store)
    store.rollback.rollback_to_revision(ROLLBACK, ids["end200"], "redo thread 300")
    after_rollback = store.history.last_revision_id()
    snapshot = content(store.history.glossary_as_of(after_rollback))
    vorn = store.glossary.get_entry(ids["vorn"])
    assert not vorn.deleted and vorn.definition == "A river town."
    store.glossary.create_entry(
        agent(300), "Ash Moot", "A council of elders.", provenance=[src(302, 300)]
    )
    store.glossary.update_entry(agent(300), ids["vorn"], provenance=[src(303, 300)])
    assert store.rollback.rollback_to_revision(ROLLBACK, after_rollback, "again") == 2
    assert content(store.history.glossary_as_of(store.history.last_revision_id())) == snapshot


def test_rollback_inside_a_failed_transaction_leaves_nothing(store: GlossaryStore):
    ids = three_threads(store)
    last = store.history.last_revision_id()
    with pytest.raises(RuntimeError), store.transaction():
        store.rollback.rollback_to_revision(ROLLBACK, ids["end100"], "try")
        raise RuntimeError("abort")
    assert store.history.last_revision_id() == last
    assert store.glossary.get_entry(ids["tithe"]).status == "confirmed"


def test_rollback_needs_a_reason_and_a_valid_boundary(store: GlossaryStore):
    with pytest.raises(InputError, match="reason"):
        store.rollback.rollback_to_revision(ROLLBACK, 0, "")
    with pytest.raises(InputError, match="revision id"):
        store.rollback.rollback_to_revision(ROLLBACK, -2, "x")


def test_rollback_threads_from_undoes_later_threads_and_marks_them_pending(store: GlossaryStore):
    ids = three_threads(store)
    at100 = content(store.history.glossary_as_of(ids["end100"]))
    changed = store.rollback.rollback_threads_from(ROLLBACK, 200, "re-annotate from thread 200")
    assert changed == 5
    assert content(store.history.glossary_as_of(store.history.last_revision_id())) == at100
    states = {state.thread_id: state for state in store.progress.thread_states()}
    assert states[100].status == "annotated" and states[100].end_revision_id == ids["end100"]
    for thread_id in (200, 300):
        state = states[thread_id]
        assert state.status == "pending"
        assert state.cursor_scene_id is None and state.end_revision_id is None
        assert state.scenes_done == 0
        assert state.extra["rolled_back"]["boundary"] == ids["end100"]
    assert store.history.glossary_as_of_thread(100) == store.history.glossary_as_of(ids["end100"])
    with pytest.raises(StoreError, match="has not finished"):
        store.history.glossary_as_of_thread(200)


def test_rollback_threads_from_the_first_thread_empties_the_glossary(store: GlossaryStore):
    three_threads(store)
    store.rollback.rollback_threads_from(ROLLBACK, 100, "start over")
    assert store.glossary.entries() == []
    assert store.history.glossary_as_of(store.history.last_revision_id()) == []
    assert len(store.glossary.entries(include_deleted=True)) == 5
    assert {state.status for state in store.progress.thread_states()} == {"pending"}


def test_rollback_threads_from_refuses_when_the_previous_thread_is_unfinished(
    store: GlossaryStore,
):
    three_threads(store)
    store.progress.set_thread_state(200, status="annotating", end_revision_id=None)
    with pytest.raises(StoreError, match=r"thread t00001-200 \(200\), before t00002-300"):
        store.rollback.rollback_threads_from(ROLLBACK, 300, "x")
    with pytest.raises(StoreError, match="thread 999 has no recorded state"):
        store.rollback.rollback_threads_from(ROLLBACK, 999, "x")


# --------------------------------------------------------------------------------------- undo
def test_undo_a_merge_restores_both_entries_and_their_provenance(store: GlossaryStore):
    a = agent(100)
    target = store.glossary.create_entry(a, "Keth'ra", "A witch.", provenance=[src(101, 100)])
    source = store.glossary.create_entry(a, "Red Witch", "A title.", provenance=[src(102, 100)])
    before = content(store.history.glossary_as_of(store.history.last_revision_id()))
    store.glossary.merge_entries(CURATOR, source.id, target.id, "same person")
    merge_revision = store.history.revisions(target.id)[-1]
    restored = store.rollback.undo_revision(CURATOR, merge_revision.id, "they are different")
    assert [entry.id for entry in restored] == [target.id, source.id]
    assert content(store.history.glossary_as_of(store.history.last_revision_id())) == before
    assert [r.action for r in store.history.revisions(since_id=merge_revision.id)] == [
        "undo",
        "undo",
    ]
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_undo_of_a_replaced_change_says_which_revision_to_undo_first(store: GlossaryStore):
    a = agent(100)
    entry = store.glossary.create_entry(a, "Vorn", "A town.")
    store.glossary.update_entry(a, entry.id, definition="A river town.")
    first_update = store.history.revisions(entry.id)[-1]
    store.glossary.update_entry(a, entry.id, definition="A port.")
    second_update = store.history.revisions(entry.id)[-1]
    with pytest.raises(
        InputError, match=rf"nothing left to undo .* undo revision {second_update.id} first"
    ):
        store.rollback.undo_revision(CURATOR, first_update.id, "x")
    store.rollback.undo_revision(CURATOR, second_update.id, "keep river town")
    assert store.glossary.get_entry(entry.id).definition == "A river town."
    store.rollback.undo_revision(CURATOR, first_update.id, "the first was right")
    assert store.glossary.get_entry(entry.id).definition == "A town."
    with pytest.raises(InputError, match="already undone by revision"):
        store.rollback.undo_revision(CURATOR, first_update.id, "again")


def test_undo_after_later_changes_reverses_only_what_the_change_did(store: GlossaryStore):
    a = agent(100)
    entry = store.glossary.create_entry(a, "Vorn", "A town.", provenance=[src(101, 100)])
    store.glossary.update_entry(
        a, entry.id, definition="A river town.", add_aliases=["Vornmouth"], tags=["place"]
    )
    change = store.history.revisions(entry.id)[-1]
    store.glossary.update_entry(a, entry.id, add_aliases=["Old Vorn"], provenance=[src(102, 100)])
    store.glossary.update_entry(a, entry.id, status="confirmed")
    done = store.rollback.undo_change(CURATOR, change.id, "too much")
    now = store.glossary.get_entry(entry.id)
    assert (now.definition, now.aliases, now.tags, now.status) == (
        "A town.",
        ["Old Vorn"],
        [],
        "confirmed",
    )
    assert [p.post_id for p in store.provenance.for_entry(entry.id)] == [101, 102]
    assert done.undone == [change.id] and done.kept == []
    (undo,) = store.history.revisions(since_id=done.revision_ids[0] - 1)
    assert (undo.action, undo.reason, undo.detail["undone"]) == ("undo", "too much", [change.id])
    with pytest.raises(InputError, match=r"no revision 999 in the annotator store"):
        store.rollback.undo_change(CURATOR, 999, "x")


def test_undo_a_merge_after_later_changes_moves_names_and_sources_back(store: GlossaryStore):
    a = agent(100)
    target = store.glossary.create_entry(a, "Keth'ra", "A witch.", provenance=[src(101, 100)])
    source = store.glossary.create_entry(
        a, "Red Witch", "A title.", aliases=["the Crimson"], provenance=[src(102, 100)]
    )
    store.glossary.merge_entries(CURATOR, source.id, target.id, "same person")
    merge = store.history.revisions(target.id)[-1]
    later = agent(200)
    store.glossary.update_entry(later, target.id, definition="A witch of the fens.")
    store.glossary.add_provenance(
        later, target.id, [ProvenanceIn(post_id=201, thread_id=200, quote="the Red Witch came")]
    )
    store.glossary.add_provenance(
        later, target.id, [ProvenanceIn(post_id=202, thread_id=200, quote="Keth'ra spoke")]
    )
    store.rollback.undo_revision(CURATOR, merge.id, "two people")
    restored, kept = store.glossary.get_entry(source.id), store.glossary.get_entry(target.id)
    assert (restored.status, restored.merged_into, restored.aliases) == (
        "tentative",
        None,
        ["the Crimson"],
    )
    assert (kept.definition, kept.aliases) == ("A witch of the fens.", [])
    assert [p.post_id for p in store.provenance.for_entry(source.id)] == [102, 201]
    assert [p.post_id for p in store.provenance.for_entry(target.id)] == [101, 202]
    assert store.glossary.find_by_term("Red Witch").id == source.id  # type: ignore[union-attr]
    assert store.glossary.integrity_problems() == []


def test_undo_of_a_create_deletes_and_undo_of_a_delete_rechecks_names(store: GlossaryStore):
    a = agent(100)
    entry = store.glossary.create_entry(a, "Vorn", "A town.")
    store.glossary.delete_entry(a, entry.id, "noise")
    delete_revision = store.history.revisions(entry.id)[-1]
    store.glossary.create_entry(a, "Vorn", "Another town.")
    with pytest.raises(InputError, match=r"'Vorn' is already the term of entry E2 .*undo revision"):
        store.rollback.undo_revision(CURATOR, delete_revision.id, "was right")
    assert store.glossary.get_entry(entry.id).deleted
    fresh = store.glossary.find_by_term("vorn")
    assert fresh is not None
    undone = store.rollback.undo_revision(CURATOR, fresh.created_revision, "not needed")  # type: ignore[arg-type]
    assert undone[0].deleted and undone[0].delete_reason == "undo: not needed"


def test_integrity_holds_through_merges_rollbacks_and_undos(store: GlossaryStore):
    ids = three_threads(store)
    assert store.glossary.integrity_problems() == []
    store.rollback.rollback_threads_from(ROLLBACK, 200, "again")
    store.rollback.undo_revision(CURATOR, store.history.last_revision_id(), "no, keep it")
    assert store.glossary.integrity_problems() == []
    assert store.provenance.entries_without_provenance() == []
    store.conn.execute("UPDATE entry_fts SET term = 'stale' WHERE rowid = ?", (ids["vorn"],))
    assert store.glossary.integrity_problems() == [
        f"full-text index out of date for entry E{ids['vorn']}"
    ]


def test_entries_without_provenance_are_listed(store: GlossaryStore):
    bare = store.glossary.create_entry(agent(100), "Vorn", "A town.")
    store.glossary.create_entry(agent(100), "Keth'ra", "A witch.", provenance=[src(101, 100)])
    assert [entry.id for entry in store.provenance.entries_without_provenance()] == [bare.id]


def test_undo_of_a_merge_whose_target_was_merged_again_says_which_merge_to_undo_first(
    store: GlossaryStore,
):
    a = agent(100)
    first = store.glossary.create_entry(a, "Iss", "A river.", provenance=[src(101, 100)])
    second = store.glossary.create_entry(a, "River Iss", "A river.", provenance=[src(102, 100)])
    third = store.glossary.create_entry(a, "Sacred Iss", "A river.", provenance=[src(103, 100)])
    store.glossary.merge_entries(CURATOR, first.id, second.id, "same river")
    inner = store.history.revisions(second.id)[-1]
    store.glossary.merge_entries(CURATOR, second.id, third.id, "same river")
    outer = store.history.revisions(third.id)[-1]
    before = store.history.last_revision_id()
    with pytest.raises(InputError, match=rf"'Iss' is already an alias .* undo revision {outer.id}"):
        store.rollback.undo_revision(CURATOR, inner.id, "two rivers")
    assert store.history.last_revision_id() == before
    store.rollback.undo_revision(CURATOR, outer.id, "not yet")
    store.rollback.undo_revision(CURATOR, inner.id, "two rivers")
    assert [store.glossary.find_by_term(n).id for n in ("Iss", "River Iss", "Sacred Iss")] == [  # type: ignore[union-attr]
        first.id,
        second.id,
        third.id,
    ]
    assert store.glossary.integrity_problems() == []
