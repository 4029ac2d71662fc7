"""Annotator store: runs, thread state, agent calls, compactions, context state, snapshots,
summons, curator decisions and meta."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store import (
    Actor,
    AgentCallRecord,
    CallTotals,
    GlossaryStore,
)

AGENT = Actor("agent", run_id="run-1", thread_id=100, scene_id="100#101")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "terrarium.db") as opened:
        yield opened


def test_run_is_started_finished_and_restarted(store: GlossaryStore):
    store.runs.start_run("run-1", {"model": "qwen", "threads": [1, 2]})
    run = store.runs.run("run-1")
    assert run is not None and run.status == "running" and run.config["threads"] == [1, 2]
    store.runs.finish_run("run-1", "failed", error="server error")
    run = store.runs.run("run-1")
    assert run and run.status == "failed" and run.error == "server error" and run.finished_at
    store.runs.start_run("run-1", '{"model": "qwen"}')
    resumed = store.runs.run("run-1")
    assert resumed and resumed.status == "running" and resumed.started_at == run.started_at
    assert resumed.error is None and resumed.finished_at is None
    assert [r.id for r in store.runs.runs()] == ["run-1"]
    assert store.runs.run("run-9") is None


def test_finishing_an_unknown_run_is_a_store_error(store: GlossaryStore):
    with pytest.raises(StoreError, match="no run 'ghost'"):
        store.runs.finish_run("ghost", "succeeded")
    with pytest.raises(InputError):
        store.runs.start_run("", {})
    with pytest.raises(InputError, match="not valid JSON"):
        store.runs.start_run("run-2", "{oops")


def test_thread_state_is_created_updated_and_cleared(store: GlossaryStore):
    assert store.progress.thread_state(100) is None
    with pytest.raises(StoreError, match="give thread_key and position"):
        store.progress.set_thread_state(100, status="annotating")
    created = store.progress.set_thread_state(
        100, thread_key="t00000-100", position=0, status="annotating", scenes_total=4
    )
    assert created.status == "annotating" and created.scenes_done == 0 and created.updated_at
    store.progress.set_thread_state(100, scenes_done=2, cursor_scene_id="100#120", extra={"a": 1})
    state = store.progress.set_thread_state(100, run_id="run-1", extra={"b": 2})
    assert state.cursor_scene_id == "100#120" and state.scenes_done == 2
    assert state.extra == {"a": 1, "b": 2}
    state = store.progress.set_thread_state(
        100, status="annotated", cursor_scene_id=None, end_revision_id=7, snapshot_id=3
    )
    assert state.cursor_scene_id is None and state.end_revision_id == 7 and state.finished
    store.progress.set_thread_state(50, thread_key="t00001-50", position=1)
    assert [s.thread_id for s in store.progress.thread_states()] == [100, 50]


def test_thread_states_read_again_are_what_the_store_holds_now_rolled_back_or_not(
    store: GlossaryStore,
):
    """Thread states are kept as read, by their rows' values: a change, and a change rolled
    back, read as the store holds them."""
    store.progress.set_thread_state(100, thread_key="t00000-100", position=0, status="annotating")
    store.progress.set_thread_state(50, thread_key="t00001-50", position=1)
    first = store.progress.thread_states()
    assert store.progress.thread_states() == first
    store.progress.set_thread_state(100, status="annotated", end_revision_id=3)
    assert [s.status for s in store.progress.thread_states()] == ["annotated", "pending"]
    with pytest.raises(RuntimeError), store.transaction():
        store.progress.set_thread_state(50, status="annotating", scenes_done=1)
        assert store.progress.thread_states()[1].scenes_done == 1
        raise RuntimeError("stop")
    states = store.progress.thread_states()
    assert [(s.status, s.scenes_done) for s in states] == [("annotated", 0), ("pending", 0)]
    assert states[1] is first[1]  # the same row, read before: the state kept


def test_thread_state_arguments_are_checked(store: GlossaryStore):
    with pytest.raises(InputError, match="thread status"):
        store.progress.set_thread_state(100, thread_key="k", position=0, status="done")
    with pytest.raises(InputError, match="position"):
        store.progress.set_thread_state(100, thread_key="k", position=-1)
    with pytest.raises(InputError, match="end_revision_id"):
        store.progress.set_thread_state(100, thread_key="k", position=0, end_revision_id="7")  # type: ignore[arg-type]
    assert store.progress.thread_states() == []


def test_agent_calls_are_logged_and_totalled(store: GlossaryStore):
    store.runs.log_agent_call(
        AgentCallRecord(
            run_id="run-1",
            thread_id=100,
            scene_id="100#101",
            model="qwen",
            prompt_tokens=1000,
            cached_tokens=800,
            completion_tokens=50,
            latency_ms=120.5,
            finish_reason="tool_calls",
        )
    )
    store.runs.log_agent_call(
        AgentCallRecord(
            run_id="run-1",
            thread_id=200,
            purpose="summarize_chunk",
            prompt_tokens=3000,
            cached_tokens=1000,
            completion_tokens=150,
            latency_ms=300,
        )
    )
    store.runs.log_agent_call(AgentCallRecord(run_id="run-2", error="connection refused"))
    totals = store.runs.agent_call_totals(run_id="run-1")
    assert totals == CallTotals(
        calls=2, prompt_tokens=4000, cached_tokens=1800, completion_tokens=200, latency_ms=420.5
    )
    assert totals.cache_hit_rate == pytest.approx(0.45)
    assert store.runs.agent_call_totals(thread_id=100).calls == 1
    assert store.runs.agent_call_totals(purpose="summarize_chunk").prompt_tokens == 3000
    assert store.runs.agent_call_totals().calls == 3
    assert store.runs.agent_call_totals(run_id="none") == CallTotals()
    assert CallTotals().cache_hit_rate == 0.0
    assert "cache_hit_rate" in totals.model_dump()
    calls = store.runs.agent_calls(run_id="run-1")
    assert [c.purpose for c in calls] == ["annotate", "summarize_chunk"]
    assert calls[0].id is not None and calls[0].created_at


def test_compactions_are_logged_with_entry_ids(store: GlossaryStore):
    compaction_id = store.memory.log_compaction(
        "run-1", 100, "100#140", "chunk", 9000, 2500, [3, 5], "Summary [E3] [E5]"
    )
    store.memory.log_compaction("run-1", 200, None, "fold_story", 8000, 3000, [], "Story so far")
    records = store.memory.compactions(thread_id=100)
    assert [r["id"] for r in records] == [compaction_id]
    assert records[0]["entry_ids"] == [3, 5] and records[0]["tokens_after"] == 2500
    assert len(store.memory.compactions(run_id="run-1")) == 2
    with pytest.raises(InputError, match="entry_ids"):
        store.memory.log_compaction("run-1", 100, None, "chunk", 1, 1, ["E3"], "x")  # type: ignore[list-item]


def test_context_state_is_one_row_that_is_replaced(store: GlossaryStore):
    assert store.memory.load_context_state() is None
    store.memory.save_context_state('{"history": [], "story_so_far": ""}')
    assert store.memory.load_context_state() == '{"history": [], "story_so_far": ""}'
    store.memory.save_context_state({"story_so_far": "Vorn burned.", "history": []})
    assert json.loads(store.memory.load_context_state() or "{}")["story_so_far"] == "Vorn burned."
    assert store.conn.execute("SELECT COUNT(*) FROM context_state").fetchone()[0] == 1
    with pytest.raises(InputError, match="not valid JSON"):
        store.memory.save_context_state("{broken")


def test_context_state_and_glossary_change_commit_together(store: GlossaryStore):
    with pytest.raises(RuntimeError), store.transaction():
        store.glossary.create_entry(AGENT, "Vorn", "A town.")
        store.memory.save_context_state({"cursor": "100#101"})
        store.runs.log_agent_call(AgentCallRecord(run_id="run-1", prompt_tokens=10))
        store.progress.set_thread_state(100, thread_key="t00000-100", position=0, scenes_done=1)
        raise RuntimeError("killed mid-scene")
    assert store.glossary.entries() == []
    assert store.memory.load_context_state() is None
    assert store.runs.agent_call_totals().calls == 0
    assert store.progress.thread_state(100) is None


def test_snapshots_are_saved_listed_and_loaded(store: GlossaryStore):
    first = store.memory.save_snapshot(
        kind="thread_end",
        thread_id=100,
        scene_id="100#150",
        run_id="run-1",
        state_json={"history": []},
        revision_id=4,
    )
    second = store.memory.save_snapshot(
        kind="shutdown",
        thread_id=200,
        scene_id=None,
        run_id="run-1",
        state_json='{"history": [1]}',
        revision_id=None,
    )
    loaded = store.memory.snapshot(first)
    assert loaded.kind == "thread_end" and loaded.revision_id == 4
    assert json.loads(loaded.state_json) == {"history": []}
    assert [c.id for c in store.memory.snapshots()] == [first, second]
    assert [c.id for c in store.memory.snapshots(100)] == [first]
    assert [c.id for c in store.memory.snapshots(kind="shutdown")] == [second]
    latest = store.memory.latest_snapshot()
    assert latest is not None and latest.id == second
    assert store.memory.latest_snapshot(kind="thread_end").id == first  # type: ignore[union-attr]
    with pytest.raises(StoreError, match="no snapshot 99"):
        store.memory.snapshot(99)
    with pytest.raises(InputError, match="snapshot kind"):
        store.memory.save_snapshot(
            kind="hourly",
            thread_id=None,
            scene_id=None,
            run_id=None,
            state_json="{}",
            revision_id=None,
        )


def test_summons_are_logged_against_a_snapshot(store: GlossaryStore):
    snapshot_id = store.memory.save_snapshot(
        kind="manual", thread_id=100, scene_id=None, run_id="run-1", state_json="{}", revision_id=0
    )
    exchange = [{"role": "user", "content": "Why Vorn?"}, {"role": "assistant", "content": ">>101"}]
    summon_id = store.memory.log_summon(snapshot_id, "run-2", exchange)
    assert store.memory.summons(snapshot_id) == [
        {
            "id": summon_id,
            "snapshot_id": snapshot_id,
            "run_id": "run-2",
            "exchange": exchange,
            "created_at": store.memory.summons()[0]["created_at"],
        }
    ]
    with pytest.raises(StoreError, match="no snapshot 42"):
        store.memory.log_summon(42, "run-2", exchange)


def test_curator_decisions_are_logged_and_marked_undone(store: GlossaryStore):
    curator = Actor("curator", run_id="run-1", thread_id=100)
    one = store.glossary.create_entry(AGENT, "Vorn", "A town.")
    two = store.glossary.create_entry(AGENT, "Vornholm", "The town of Vorn.")
    target = store.glossary.merge_entries(curator, two.id, one.id, "same town")
    decision_id = store.curation.log_curator_decision(
        "run-1", 100, two.id, "MERGE", one.id, "same town", target.updated_revision
    )
    undone = store.rollback.undo_revision(curator, target.updated_revision or 0, "different places")
    store.curation.mark_decision_undone(decision_id, undone[0].updated_revision or 0)
    decisions = store.curation.curator_decisions(entry_id=two.id)
    assert len(decisions) == 1
    assert decisions[0]["decision"] == "MERGE" and decisions[0]["target_entry_id"] == one.id
    assert decisions[0]["undone_revision_id"] == undone[0].updated_revision
    assert store.curation.curator_decisions(thread_id=200) == []
    with pytest.raises(StoreError, match="no curator decision 9"):
        store.curation.mark_decision_undone(9, 1)


def test_meta_values_are_stored_and_replaced(store: GlossaryStore):
    assert store.get_meta("corpus") is None
    store.set_meta("corpus", "banished.db")
    store.set_meta("corpus", "sample.db")
    assert store.get_meta("corpus") == "sample.db"
