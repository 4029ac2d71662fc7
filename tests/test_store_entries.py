"""Annotator store: entries, names, provenance, revisions and merges."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from terrarium_dagster.errors import (
    DuplicateTermError,
    EntryNotFoundError,
    InputError,
    StoreError,
)
from terrarium_dagster.store import (
    Actor,
    GlossaryStore,
    ProvenanceIn,
    parse_entry_id,
)
from terrarium_dagster.store.annotator import STATE_KEYS

AGENT = Actor("agent", run_id="run-1", thread_id=100, scene_id="100#101")
CURATOR = Actor("curator", run_id="run-1", thread_id=100)


def src(post_id: int, thread_id: int = 100, quote: str = "") -> ProvenanceIn:
    return ProvenanceIn(post_id=post_id, thread_id=thread_id, quote=quote)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "terrarium.db") as opened:
        yield opened


def test_create_and_get_entry_with_aliases_tags_and_provenance(store: GlossaryStore):
    created = store.glossary.create_entry(
        AGENT,
        "Ember-Tithe",
        "  A tax paid in embers.  ",
        tags=["custom", "Custom", "magic"],
        aliases=["the tithe", "Tithe"],
        provenance=[src(101, quote="the ember-tithe"), src(105)],
    )
    assert created.term == "Ember-Tithe"
    assert created.norm_term == "ember tithe"
    assert created.definition == "A tax paid in embers."
    assert created.status == "tentative"
    assert created.tags == ["custom", "magic"]
    assert created.aliases == ["the tithe"]  # "Tithe" normalizes like "the tithe"
    assert (created.first_seen_post, created.last_seen_post) == (101, 105)
    assert created.created_revision == created.updated_revision == 1
    assert store.glossary.get_entry(created.id) == created
    assert store.glossary.get_entry(f"E{created.id}") == created  # type: ignore[arg-type]
    assert [p.post_id for p in store.provenance.for_entry(created.id)] == [101, 105]


def test_unknown_entry_is_entry_not_found(store: GlossaryStore):
    with pytest.raises(EntryNotFoundError, match="E42"):
        store.glossary.get_entry(42)
    with pytest.raises(EntryNotFoundError, match="E42"):
        store.glossary.update_entry(AGENT, 42, definition="x")
    with pytest.raises(EntryNotFoundError, match="E42"):
        store.glossary.delete_entry(AGENT, 42, "gone")


@pytest.mark.parametrize(
    "variant", ["ember tithe", "EMBER–TITHE", "“The Ember-Tithe”", "ember  -tithe!"]
)
def test_duplicate_term_variant_names_the_existing_entry(store: GlossaryStore, variant: str):
    existing = store.glossary.create_entry(AGENT, "Ember-Tithe", "A tax.")
    with pytest.raises(DuplicateTermError, match=rf"E{existing.id} 'Ember-Tithe'") as caught:
        store.glossary.create_entry(AGENT, variant, "Again.")
    assert caught.value.existing_entry_id == existing.id  # type: ignore[attr-defined]
    assert len(store.glossary.entries()) == 1
    assert len(store.history.revisions()) == 1


def test_alias_colliding_with_a_term_or_an_alias_is_refused(store: GlossaryStore):
    existing = store.glossary.create_entry(AGENT, "Keth'ra", "A witch.", aliases=["the Red Witch"])
    with pytest.raises(DuplicateTermError, match=r"alias \('the Red Witch'\) of entry E1"):
        store.glossary.create_entry(AGENT, "Vorn", "A town.", aliases=["red witch"])
    with pytest.raises(DuplicateTermError, match="term of entry E1"):
        store.glossary.create_entry(AGENT, "Vorn", "A town.", aliases=["Keth’ra"])
    other = store.glossary.create_entry(AGENT, "Vorn", "A town.")
    with pytest.raises(DuplicateTermError, match=f"E{existing.id}"):
        store.glossary.add_alias(AGENT, other.id, "Red Witch")
    with pytest.raises(DuplicateTermError, match=f"E{existing.id}"):
        store.glossary.update_entry(AGENT, other.id, term="KETH'RA")
    assert store.glossary.get_entry(other.id).aliases == []


def test_names_of_deleted_entries_are_free_and_of_rejected_ones_taken(store: GlossaryStore):
    deleted = store.glossary.create_entry(AGENT, "Vorn", "A town.")
    store.glossary.delete_entry(AGENT, deleted.id, "not a story term")
    again = store.glossary.create_entry(AGENT, "Vorn", "A town by the river.")
    assert again.id != deleted.id
    rejected = store.glossary.create_entry(AGENT, "Thursday", "A day.")
    store.glossary.update_entry(CURATOR, rejected.id, status="rejected")
    with pytest.raises(DuplicateTermError, match=f"E{rejected.id}"):
        store.glossary.create_entry(AGENT, "thursday", "A day again.")


def test_bad_input_is_an_input_error_and_changes_nothing(store: GlossaryStore):
    cases = [
        lambda: store.glossary.create_entry(AGENT, "   ", "x"),
        lambda: store.glossary.create_entry(AGENT, "!!!", "x"),
        lambda: store.glossary.create_entry(AGENT, "Vorn", "x", status="merged"),
        lambda: store.glossary.create_entry(AGENT, "Vorn", "x", status="maybe"),
        lambda: store.glossary.create_entry(AGENT, "Vorn", "x", aliases="Vornish"),  # type: ignore[arg-type]
        lambda: store.glossary.create_entry(AGENT, "Vorn", 12),  # type: ignore[arg-type]
        lambda: store.glossary.create_entry(AGENT, "Vorn", "x", provenance=[{"post_id": "abc"}]),  # type: ignore[list-item]
        lambda: store.glossary.create_entry(
            AGENT, "Vorn", "x", provenance=[{"post_id": -1, "thread_id": 1}]
        ),  # type: ignore[list-item]
        lambda: store.glossary.create_entry(AGENT, "V" * 300, "x"),
        lambda: store.glossary.create_entry("agent", "Vorn", "x"),  # type: ignore[arg-type]
    ]
    for case in cases:
        with pytest.raises(InputError):
            case()
    assert store.glossary.entries(include_deleted=True) == []
    assert store.history.revisions() == []


def test_actor_kind_is_checked():
    with pytest.raises(InputError, match="actor kind"):
        Actor("robot")  # type: ignore[arg-type]


def test_parse_entry_id_accepts_numbers_and_e_refs():
    assert parse_entry_id(12) == 12
    assert parse_entry_id("E12") == 12
    assert parse_entry_id(" e7 ") == 7
    for bad in ("E", "twelve", 0, -3, True, None, 1.5):
        with pytest.raises(InputError):
            parse_entry_id(bad)


def test_update_changes_fields_and_records_full_states(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Ember Tithe", "A tax.", aliases=["tithe"])
    updated = store.glossary.update_entry(
        AGENT,
        entry.id,
        term="Ember-Tithe",
        definition="A tax paid in embers to [[Keth'ra]].",
        tags=["custom"],
        status="confirmed",
        add_aliases=["ash tax"],
        remove_aliases=["Tithe"],
        reason="clearer",
    )
    assert updated.term == "Ember-Tithe"
    assert updated.aliases == ["ash tax"]
    assert updated.status == "confirmed"
    assert updated.tags == ["custom"]
    revision = store.history.revisions(entry.id)[-1]
    assert revision.action == "update"
    assert revision.reason == "clearer"
    assert (revision.actor_kind, revision.run_id, revision.thread_id, revision.scene_id) == (
        "agent",
        "run-1",
        100,
        "100#101",
    )
    assert set(revision.old_value or {}) == set(STATE_KEYS)
    assert set(revision.new_value or {}) == set(STATE_KEYS)
    assert revision.old_value["aliases"] == ["tithe"]  # type: ignore[index]
    assert revision.new_value["aliases"] == ["ash tax"]  # type: ignore[index]
    assert revision.new_value["status"] == "confirmed"  # type: ignore[index]
    assert store.glossary.get_entry(entry.id).updated_revision == revision.id


def test_update_that_changes_nothing_writes_no_revision(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Vorn", "A town.", aliases=["Vornholm"])
    store.glossary.update_entry(
        AGENT, entry.id, definition="A town.", add_aliases=["vornholm", "VORN"]
    )
    assert len(store.history.revisions(entry.id)) == 1


def test_removing_an_alias_the_entry_does_not_have_is_an_input_error(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Vorn", "A town.")
    with pytest.raises(InputError, match="not an alias of entry E1"):
        store.glossary.update_entry(
            AGENT, entry.id, definition="changed", remove_aliases=["Vornholm"]
        )
    assert store.glossary.get_entry(entry.id).definition == "A town."


def test_renaming_to_an_own_alias_drops_that_alias(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Keth'ra", "A witch.", aliases=["Red Witch"])
    renamed = store.glossary.update_entry(
        AGENT, entry.id, term="The Red Witch", add_aliases=["Keth'ra"]
    )
    assert renamed.term == "The Red Witch"
    assert renamed.aliases == ["Keth'ra"]


def test_every_kind_of_change_writes_a_revision_with_old_and_new_state(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Vorn", "A town.", provenance=[src(101)])
    store.glossary.add_alias(AGENT, entry.id, "Vornholm")
    store.glossary.add_provenance(AGENT, entry.id, [src(130)])
    store.glossary.update_entry(AGENT, entry.id, definition="A river town.")
    store.glossary.delete_entry(AGENT, entry.id, "duplicate of nothing")
    store.glossary.restore_entry(AGENT, entry.id, "it is a term after all")
    revisions = store.history.revisions(entry.id)
    assert [r.action for r in revisions] == [
        "create",
        "alias",
        "provenance",
        "update",
        "delete",
        "restore",
    ]
    assert revisions[0].old_value is None
    for before, after in pairwise(revisions):
        assert after.old_value == before.new_value
    assert revisions[4].new_value["deleted"] is True  # type: ignore[index]
    assert revisions[4].new_value["delete_reason"] == "duplicate of nothing"  # type: ignore[index]
    assert revisions[5].new_value["deleted"] is False  # type: ignore[index]
    assert [p.revision_id for p in store.provenance.for_entry(entry.id)] == [
        revisions[0].id,
        revisions[2].id,
    ]


def test_delete_needs_a_reason_and_is_soft(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Vorn", "A town.", provenance=[src(101)])
    with pytest.raises(InputError, match="reason"):
        store.glossary.delete_entry(AGENT, entry.id, "  ")
    deleted = store.glossary.delete_entry(AGENT, entry.id, "not a term")
    assert deleted.deleted and deleted.delete_reason == "not a term"
    assert store.glossary.entries() == []
    assert [e.id for e in store.glossary.entries(include_deleted=True)] == [entry.id]
    assert len(store.provenance.for_entry(entry.id)) == 1
    assert store.glossary.find_by_term("vorn") is None
    with pytest.raises(StoreError, match="already deleted"):
        store.glossary.delete_entry(AGENT, entry.id, "again")
    with pytest.raises(StoreError, match="is deleted"):
        store.glossary.update_entry(AGENT, entry.id, definition="x")


def test_restore_rechecks_names(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Vorn", "A town.")
    store.glossary.delete_entry(AGENT, entry.id, "mistake")
    taker = store.glossary.create_entry(AGENT, "Elder Vorn", "A man.", aliases=["vorn"])
    with pytest.raises(DuplicateTermError, match=f"E{taker.id}"):
        store.glossary.restore_entry(AGENT, entry.id)
    assert store.glossary.get_entry(entry.id).deleted
    store.glossary.delete_entry(AGENT, taker.id, "the town matters more")
    assert not store.glossary.restore_entry(AGENT, entry.id).deleted
    with pytest.raises(StoreError, match="not deleted"):
        store.glossary.restore_entry(AGENT, entry.id)


def test_provenance_is_not_recorded_twice(store: GlossaryStore):
    entry = store.glossary.create_entry(
        AGENT, "Vorn", "A town.", provenance=[src(101, quote="Vorn")]
    )
    rows = store.glossary.add_provenance(
        AGENT, entry.id, [src(101, quote=" Vorn "), src(102), src(102)]
    )
    assert [row.post_id for row in rows] == [101, 102, 102]
    assert rows[1] == rows[2]
    assert len(store.provenance.for_entry(entry.id)) == 2
    assert len(store.history.revisions(entry.id)) == 2
    store.glossary.add_provenance(AGENT, entry.id, [src(102)])
    assert len(store.history.revisions(entry.id)) == 2


def test_first_and_last_seen_follow_story_order_when_thread_positions_are_known(
    store: GlossaryStore,
):
    # Thread 500 comes first in the story although its post ids are larger.
    entry = store.glossary.create_entry(
        AGENT, "Vorn", "A town.", provenance=[src(300, 200), src(900, 500)]
    )
    assert (entry.first_seen_post, entry.first_seen_thread) == (300, 200)
    store.progress.set_thread_state(500, thread_key="t00000-500", position=0)
    store.progress.set_thread_state(200, thread_key="t00001-200", position=1)
    store.glossary.add_provenance(AGENT, entry.id, [src(310, 200)])
    entry = store.glossary.get_entry(entry.id)
    assert (entry.first_seen_post, entry.first_seen_thread) == (900, 500)
    assert (entry.last_seen_post, entry.last_seen_thread) == (310, 200)


def test_find_by_term_matches_normalized_terms_and_aliases(store: GlossaryStore):
    entry = store.glossary.create_entry(AGENT, "Ember-Tithe", "A tax.", aliases=["Ash Tax"])
    assert store.glossary.find_by_term("the ember tithe") == entry
    assert store.glossary.find_by_term("ASH-TAX") == entry
    assert store.glossary.find_by_term("ember") is None
    assert store.glossary.find_by_term("...") is None


def test_entries_filters_by_status_and_loads_aliases_without_n_plus_one(store: GlossaryStore):
    for number in range(30):
        created = store.glossary.create_entry(
            AGENT, f"Term {number}", "x", aliases=[f"alias {number}"]
        )
        if number % 3 == 0:
            store.glossary.update_entry(CURATOR, created.id, status="confirmed")
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        everything = store.glossary.entries()
    finally:
        store.conn.set_trace_callback(None)
    assert len(everything) == 30
    assert all(entry.aliases == [f"alias {entry.term.split()[1]}"] for entry in everything)
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) <= 2
    confirmed = store.glossary.entries(statuses=["confirmed"])
    assert len(confirmed) == 10 and all(e.status == "confirmed" for e in confirmed)


def test_entries_touching_a_thread(store: GlossaryStore):
    first = store.glossary.create_entry(AGENT, "Vorn", "A town.")
    later = Actor("agent", run_id="run-1", thread_id=200)
    store.glossary.create_entry(later, "Keth'ra", "A witch.")
    store.glossary.update_entry(later, first.id, definition="A river town.")
    assert [e.term for e in store.glossary.entries_touching(100)] == ["Vorn"]
    assert [e.term for e in store.glossary.entries_touching(200)] == ["Vorn", "Keth'ra"]


def test_merge_moves_names_and_provenance_and_redirects(store: GlossaryStore):
    target = store.glossary.create_entry(
        AGENT, "Keth'ra", "A witch.", tags=["person"], provenance=[src(101, quote="Keth'ra")]
    )
    source = store.glossary.create_entry(
        AGENT,
        "Red Witch",
        "The witch of the red hill.",
        tags=["title"],
        aliases=["the Crimson Witch"],
        provenance=[src(101, quote="Keth'ra"), src(140, 120, quote="the Red Witch")],
    )
    merged = store.glossary.merge_entries(CURATOR, source.id, target.id, "same person")
    assert merged.aliases == ["Red Witch", "the Crimson Witch"]
    assert merged.tags == ["person", "title"]
    assert merged.last_seen_post == 140
    after_source = store.glossary.get_entry(source.id)
    assert after_source.status == "merged" and after_source.merged_into == target.id
    assert store.provenance.for_entry(source.id) == []
    moved = store.provenance.for_entry(target.id)
    assert [(p.post_id, p.quote) for p in moved] == [(101, "Keth'ra"), (140, "the Red Witch")]
    assert moved[1].moved_from is not None
    superseded = store.provenance.for_entry(source.id, include_superseded=True)
    assert len(superseded) == 2 and all(p.superseded_revision_id for p in superseded)
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    revisions = store.history.revisions(since_id=source.updated_revision)
    assert [(r.entry_id, r.action) for r in revisions] == [
        (source.id, "merged_into"),
        (target.id, "merge"),
    ]
    assert revisions[0].group_id == revisions[1].group_id == revisions[0].id
    assert revisions[1].old_value["aliases"] == []  # type: ignore[index]
    assert store.glossary.find_by_term("crimson witch") == merged
    assert store.glossary.resolve_entry(source.id) == merged
    with pytest.raises(DuplicateTermError, match=f'E{target.id} "Keth\'ra"'):
        store.glossary.create_entry(AGENT, "Red Witch", "Someone else.")
    with pytest.raises(StoreError, match=f"merged into E{target.id}"):
        store.glossary.update_entry(AGENT, source.id, definition="x")


def test_merge_refuses_self_deleted_and_merged_entries(store: GlossaryStore):
    one = store.glossary.create_entry(AGENT, "One", "x")
    two = store.glossary.create_entry(AGENT, "Two", "x")
    three = store.glossary.create_entry(AGENT, "Three", "x")
    with pytest.raises(InputError, match="itself"):
        store.glossary.merge_entries(CURATOR, one.id, one.id, "same")
    with pytest.raises(InputError, match="reason"):
        store.glossary.merge_entries(CURATOR, one.id, two.id, "")
    store.glossary.delete_entry(CURATOR, three.id, "noise")
    with pytest.raises(StoreError, match="deleted"):
        store.glossary.merge_entries(CURATOR, one.id, three.id, "same")
    store.glossary.merge_entries(CURATOR, one.id, two.id, "same")
    with pytest.raises(StoreError, match=f"merged into E{two.id}"):
        store.glossary.merge_entries(CURATOR, two.id, one.id, "back")


def test_merge_chain_redirects_to_the_last_target(store: GlossaryStore):
    one = store.glossary.create_entry(AGENT, "One", "x")
    two = store.glossary.create_entry(AGENT, "Two", "x")
    three = store.glossary.create_entry(AGENT, "Three", "x")
    store.glossary.merge_entries(CURATOR, one.id, two.id, "same")
    store.glossary.merge_entries(CURATOR, two.id, three.id, "same")
    assert store.glossary.resolve_entry(one.id).id == three.id
    assert store.glossary.find_by_term("one").id == three.id  # type: ignore[union-attr]
    assert store.glossary.get_entry(three.id).aliases == ["Two", "One"]
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
