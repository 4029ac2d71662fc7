"""Snapshots: round trip, blame (which snapshot to summon for an edit), restore (--from-snapshot).

Stores are real SQLite files; the annotated stores come from the engine's real loop with the
offline backend on a small real corpus.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.agent.tools import default_registry
from terrarium_dagster.config import Settings, load_settings
from terrarium_dagster.context.prompts import SYSTEM_PROMPT
from terrarium_dagster.context.state import ContextState, Cursor, Summary
from terrarium_dagster.engine import Engine
from terrarium_dagster.errors import InputError, Interrupted, StoreError
from terrarium_dagster.snapshots.context_snapshots import (
    SnapshotNotFoundError,
    SnapshotPayload,
    load_snapshot,
    restore_from_snapshot,
    save_snapshot,
    snapshot_for_entry,
    snapshot_for_revision,
    snapshot_in_force,
    tools_digest,
)
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from tests.support.cli import run_args, terrarium
from tests.support.corpus_builder import simple_quest


def _state() -> ContextState:
    state = ContextState(story_so_far="The envoy left the capital. [E1]")
    state.summaries.append(
        Summary(kind="thread", thread_id=1000, scene_ids=["1000#1000"], entry_ids=[1], text="T1.")
    )
    state.append_scene(
        "1042#1042",
        1042,
        [
            {"role": "user", "content": "# Scene 1042#1042\nthread 1042 ..."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "glossary_search", "arguments": '{"query":"Vask"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"hits":[],"ok":true}'},
            {"role": "assistant", "content": "Scene done: nothing new. ünïcode ✓"},
        ],
        [2, 1],
    )
    state.cursor = Cursor(thread_id=1042, scene_id="1042#1042")
    state.compactions = {"fold_story": 2, "cut_middle": 1}
    state.calibration = {"actual_sum": 1234.5, "estimate_sum": 1100.25, "peak": 1.12}
    state.thread_entry_ids = {1000: [1], 1042: [2, 1]}
    return state


def _save(store: GlossaryStore, state: ContextState, kind: str = "thread_end") -> int:
    return save_snapshot(
        store,
        kind=kind,
        thread_id=state.cursor.thread_id,
        scene_id=state.cursor.scene_id,
        run_id="run-1",
        state=state,
        system_prompt=SYSTEM_PROMPT,
        tools=default_registry(),
        model="test-model",
    )


def test_snapshot_round_trip_keeps_the_payload_bytes_identical(tmp_path: Path) -> None:
    with GlossaryStore(tmp_path / "g.db") as store:
        state = _state()
        first = _save(store, state)
        row, payload = load_snapshot(store, first)
        assert payload.context == state
        assert payload.context.to_json() == state.to_json()
        assert payload.system_prompt == SYSTEM_PROMPT
        advertised = [schema["function"]["name"] for schema in default_registry().schemas()]
        assert payload.tool_names == advertised  # the tools the model is shown
        assert payload.tools_hash == tools_digest(default_registry().schemas())
        assert (row.kind, row.thread_id, row.scene_id, row.run_id) == (
            "thread_end",
            1042,
            "1042#1042",
            "run-1",
        )
        second = _save(store, payload.context)
        again = store.memory.snapshot(second)
        assert again.state_json == row.state_json
        assert SnapshotPayload.from_json(row.state_json).to_json() == row.state_json


def test_snapshot_points_into_the_revision_log_instead_of_copying_the_glossary(
    tmp_path: Path,
) -> None:
    with GlossaryStore(tmp_path / "g.db") as store:
        agent = Actor(kind="agent", run_id="run-1", thread_id=1042, scene_id="1042#1042")
        store.glossary.create_entry(
            agent, "Vaskari", "A gate warden whose name is in no dictionary."
        )
        store.glossary.create_entry(agent, "Orlundel", "A walled city.")
        snapshot_id = _save(store, _state())
        row, _ = load_snapshot(store, snapshot_id)
        assert row.revision_id == store.history.last_revision_id() == 2
        assert "gate warden" not in row.state_json
        assert snapshot_in_force(store) == snapshot_id


def test_unknown_or_malformed_snapshot_ids_get_clear_errors(tmp_path: Path) -> None:
    with GlossaryStore(tmp_path / "g.db") as store:
        with pytest.raises(SnapshotNotFoundError, match=r"no snapshot 7 .*has no snapshots yet"):
            load_snapshot(store, 7)
        _save(store, _state())
        with pytest.raises(SnapshotNotFoundError, match=r"no snapshot 9 .*go up to 1"):
            load_snapshot(store, 9)
        with pytest.raises(InputError, match="not a snapshot id"):
            load_snapshot(store, "latest")
        assert load_snapshot(store, "#1")[0].id == 1
        broken = store.memory.save_snapshot(
            kind="manual",
            thread_id=None,
            scene_id=None,
            run_id=None,
            state_json={"version": 1, "context": {}},
            revision_id=0,
        )
        with pytest.raises(StoreError, match=f"snapshot {broken} cannot be read: .*system_prompt"):
            load_snapshot(store, broken)


def test_a_payload_from_a_newer_format_is_refused_by_name() -> None:
    with pytest.raises(InputError, match="format version 99"):
        SnapshotPayload.from_json('{"version": 99, "system_prompt": "x", "context": {}}')


# ------------------------------------------------------------------------ annotated stores
def _settings(tmp_path: Path, corpus: Path, db: Path) -> Settings:
    return load_settings(
        corpus=corpus, db=str(db), offline=True, context_budget=8192, max_tokens=512
    )


@pytest.fixture(name="quest")
def quest_fixture(tmp_path: Path) -> Path:
    return simple_quest(tmp_path / "quest.db", threads=3, scenes_per_thread=3)


def _run(settings: Settings, run_id: str, thread_ids: list[int] | None = None) -> None:
    with Engine.open(settings, run_id=run_id) as engine:
        for thread in engine.threads:
            if thread_ids is not None and thread.id not in thread_ids:
                continue
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)


def _glossary(store: GlossaryStore) -> list[tuple[Any, ...]]:
    """The live glossary by content (entries re-created after a rollback get new ids)."""
    return sorted(
        (e.term, e.definition, e.status, tuple(e.aliases), tuple(e.tags))
        for e in store.glossary.entries()
    )


def _without_ids(history: list[dict[str, Any]]) -> str:
    """The history with entry ids and tool-call ids (the offline backend derives them from the
    request, entry ids included) blanked out."""
    text = json.dumps(history, sort_keys=True)
    return re.sub(r"call_[0-9a-f]+", "call_#", re.sub(r"E\d+", "E#", text))


def test_an_edit_is_blamed_on_the_snapshot_in_force_and_summons_the_one_after_it(
    tmp_path: Path, quest: Path
) -> None:
    settings = _settings(tmp_path, quest, tmp_path / "g.db")
    _run(settings, "run-1")
    with GlossaryStore(tmp_path / "g.db") as store:
        ends = store.memory.snapshots(kind="thread_end")
        assert len(ends) == 3
        second_thread = ends[1].thread_id
        edits = [
            r
            for r in store.history.revisions(thread_id=second_thread)
            if r.actor_kind == "agent" and r.action == "create"
        ]
        assert edits
        choice = snapshot_for_revision(store, edits[0].id)
        assert choice.in_force_id == ends[0].id  # taken before the edit, at the previous end
        assert choice.after_id == ends[1].id  # the first one whose context holds the edit
        assert (choice.snapshot_id, choice.basis) == (ends[1].id, "after")
        _, payload = load_snapshot(store, ends[1].id)
        assert any(
            m.get("content", "") and m["content"].startswith(f"# Scene {edits[0].scene_id}")
            for m in payload.context.history
        )
        first_edit = store.history.revisions()[0]
        by_entry = snapshot_for_entry(store, f"E{first_edit.entry_id}")
        assert by_entry.snapshot_id is not None
        assert snapshot_for_revision(store, first_edit.id).in_force_id is None


def test_an_edit_made_after_the_last_snapshot_falls_back_to_the_snapshot_in_force(
    tmp_path: Path,
) -> None:
    with GlossaryStore(tmp_path / "g.db") as store:
        snapshot_id = _save(store, _state())
        actor = Actor(kind="agent", run_id="run-1", thread_id=1042, snapshot_id=snapshot_id)
        entry = store.glossary.create_entry(actor, "Mirethane", "A river.")
        choice = snapshot_for_entry(store, "Mirethane")
        assert choice.revision_id == entry.created_revision
        assert (choice.snapshot_id, choice.after_id, choice.basis) == (
            snapshot_id,
            None,
            "in_force",
        )


def test_restore_from_snapshot_rolls_back_resets_later_threads_and_resumes_identically(
    tmp_path: Path, quest: Path
) -> None:
    reference = _settings(tmp_path, quest, tmp_path / "reference.db")
    _run(reference, "run-1")
    settings = _settings(tmp_path, quest, tmp_path / "g.db")
    _run(settings, "run-1")
    with GlossaryStore(tmp_path / "g.db") as store:
        ends = store.memory.snapshots(kind="thread_end")
        target = ends[0]
        expected_glossary = [
            (v.id, v.term, v.definition, v.status, tuple(v.aliases))
            for v in store.history.glossary_as_of(target.revision_id or 0)
        ]
        before = store.history.last_revision_id()
        actor = Actor(kind="rollback", run_id="run-2")
        state = restore_from_snapshot(store, actor, target.id)

        _, payload = load_snapshot(store, target.id)
        assert state == payload.context
        assert store.memory.load_context_state() == payload.context.to_json()
        after = store.history.last_revision_id()
        assert after > before  # the rollback is recorded as revisions, nothing erased
        assert all(r.actor_kind == "rollback" for r in store.history.revisions(since_id=before))
        current = [
            (e.id, e.term, e.definition, e.status, tuple(e.aliases))
            for e in store.glossary.entries()
        ]
        assert current == expected_glossary
        states = {s.thread_id: s for s in store.progress.thread_states()}
        first = states[target.thread_id]
        assert (first.status, first.snapshot_id, first.end_revision_id) == (
            "annotated",  # its curation came after the snapshot and was rolled back
            target.id,
            target.revision_id,
        )
        for later in ends[1:]:
            assert later.thread_id is not None
            assert states[later.thread_id].status == "pending"
            assert states[later.thread_id].cursor_scene_id is None
        restored = store.memory.latest_snapshot()
        assert restored is not None and restored.kind == "manual"
        assert snapshot_in_force(store) == restored.id
        assert load_snapshot(store, restored.id)[1].restored_from == target.id

    # the run goes on from the restored context and ends where the uninterrupted run ended
    _run(settings, "run-2")
    with (
        GlossaryStore(tmp_path / "g.db") as store,
        GlossaryStore(tmp_path / "reference.db") as ref,
    ):
        assert _glossary(store) == _glossary(ref)
        mine = [load_snapshot(store, c.id)[1] for c in store.memory.snapshots(kind="thread_end")]
        theirs = [load_snapshot(ref, c.id)[1] for c in ref.memory.snapshots(kind="thread_end")]
        # the same conversation, except that entries created again after the rollback have new
        # ids (the rolled-back ones stay, soft-deleted)
        assert _without_ids(mine[-1].context.history) == _without_ids(theirs[-1].context.history)
        assert [s.scene_id for s in mine[-1].context.scenes] == [
            s.scene_id for s in theirs[-1].context.scenes
        ]
        assert mine[-1].context.cursor == theirs[-1].context.cursor


def test_restore_of_a_mid_thread_snapshot_puts_the_thread_back_at_its_cursor(
    tmp_path: Path, quest: Path
) -> None:
    reference = _settings(tmp_path, quest, tmp_path / "reference.db")
    _run(reference, "run-1")
    settings = _settings(tmp_path, quest, tmp_path / "g.db")
    stop = threading.Event()
    seen: list[str] = []

    def progress(event: str, data: dict[str, Any]) -> None:
        if event == "scene":
            seen.append(str(data["scene_id"]))
            if len(seen) == 4:  # the first scene of the second thread is committed: stop
                stop.set()

    with (
        Engine.open(settings, run_id="run-1", stop=stop, progress=progress) as engine,
        pytest.raises(Interrupted),
    ):
        for thread in engine.threads:
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)
    with GlossaryStore(tmp_path / "g.db") as store:
        # a clean stop adds no snapshot (the resumed store must be the uninterrupted one's);
        # the committed state it stopped at is saved as a snapshot by hand here
        assert store.memory.snapshots(kind="shutdown") == []
        state = ContextState.from_json(store.memory.load_context_state() or "{}")
        save_snapshot(
            store,
            kind="manual",
            thread_id=state.cursor.thread_id,
            scene_id=state.cursor.scene_id,
            run_id="run-1",
            state=state,
            system_prompt=SYSTEM_PROMPT,
            tools=default_registry().schemas(),
            model=None,
        )
        shutdown = store.memory.latest_snapshot()
        assert shutdown is not None and shutdown.scene_id == seen[3]
        pointer = shutdown.revision_id or 0
    _run(settings, "run-2")  # the run is finished ...

    with GlossaryStore(tmp_path / "g.db") as store:  # ... then taken back to the clean stop
        created_since = {
            r.entry_id for r in store.history.revisions(since_id=pointer) if r.action == "create"
        }
        assert created_since
        restore_from_snapshot(store, Actor(kind="rollback", run_id="run-3"), shutdown.id)
        second = store.progress.thread_state(shutdown.thread_id or 0)
        assert second is not None
        assert (second.status, second.cursor_scene_id, second.scenes_done) == (
            "annotating",
            seen[3],
            1,
        )
        assert second.end_revision_id is None
        later = [s for s in store.progress.thread_states() if s.position > second.position]
        assert later and all(s.status == "pending" for s in later)
        for entry_id in created_since:
            assert store.glossary.get_entry(entry_id).deleted

    _run(settings, "run-3")  # and resumed from there: the same glossary as without the detour
    with (
        GlossaryStore(tmp_path / "g.db") as store,
        GlossaryStore(tmp_path / "reference.db") as ref,
    ):
        assert _glossary(store) == _glossary(ref)


def test_restore_refuses_an_unknown_snapshot_and_changes_nothing(tmp_path: Path) -> None:
    with GlossaryStore(tmp_path / "g.db") as store:
        store.glossary.create_entry(Actor(kind="agent"), "Vaskari", "A warden.")
        before = store.history.last_revision_id()
        with pytest.raises(SnapshotNotFoundError, match="no snapshot 3"):
            restore_from_snapshot(store, Actor(kind="rollback"), 3)
        assert store.history.last_revision_id() == before
        assert store.memory.load_context_state() is None


def test_a_run_restored_to_a_thread_end_curates_that_thread_again_as_the_run_it_left_did(
    tmp_path: Path,
) -> None:
    # The bundled sample: snapshot 3 ends its third thread before that thread's curation, which
    # the restore rolls back and the resumed run does again. It sent fourteen entries where the
    # first run sent ten: the revisions the rollback undid, and its own, counted as changes since
    # an earlier curation left them tentative. 'Tobiah' then stayed apart from 'Leck'.
    reference = tmp_path / "reference.db"
    assert terrarium(*run_args(reference), clean=True).returncode == 0
    restored = tmp_path / "restored.db"
    with sqlite3.connect(reference) as source, sqlite3.connect(restored) as copy:
        source.backup(copy)  # a copy of the finished store, as `cp` of a closed one makes
    source.close()
    copy.close()
    done = terrarium(*run_args(restored), "--from-snapshot", "3", clean=True)
    assert done.returncode == 0, done.stderr
    with GlossaryStore(reference) as ref, GlossaryStore(restored) as store:
        assert _glossary(store) == _glossary(ref)
        assert {s.status for s in store.progress.thread_states()} == {"curated"}
