"""`terrarium undo` and the Dagster `undo_job` on real stores built from the sample quest with the
offline backend: undo a merge after later changes, undo a revision, lineage shows it, exports
after the undo reflect it, one-line errors for unknown or already undone ids, the writer lease."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.defs.assets import glossary_export, thread_glossary
from terrarium_dagster.defs.undo_job import undo_job
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import store_copy

pytest_plugins = ["tests.support.dagster_fixtures"]


@pytest.fixture(scope="module")
def sample_store(offline_sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole sample quest annotated and curated once with the offline backend."""
    db = tmp_path_factory.mktemp("undo") / "store.db"
    shutil.copyfile(offline_sample_store, db)
    return db


@pytest.fixture
def db(sample_store: Path, tmp_path: Path) -> Path:
    return store_copy(sample_store, tmp_path)


def merge_changed_since(db: Path) -> dict[str, Any]:
    """A curator MERGE whose target changed after the merge (what the old undo refused)."""
    with GlossaryStore(db, read_only=True) as store:
        for row in store.curation.curator_decisions():
            if row["decision"] != "MERGE" or row["revision_id"] is None:
                continue
            later = store.history.revisions(row["target_entry_id"], since_id=row["revision_id"])
            if any(r.action != "undo" for r in later):
                return row
    raise AssertionError("the sample run has no merge whose target changed later")


def names_of(db: Path, entry_id: int) -> list[str]:
    with GlossaryStore(db, read_only=True) as store:
        entry = store.glossary.get_entry(entry_id)
        return [entry.term, *entry.aliases]


def lineage_json(db: Path, term: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["lineage", term, "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_undo_a_merge_after_later_changes_restores_the_entry_with_its_names_and_sources(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merge = merge_changed_since(db)
    source_id, target_id = merge["entry_id"], merge["target_entry_id"]
    source_term = names_of(db, source_id)[0]
    with GlossaryStore(db, read_only=True) as store:
        assert store.glossary.find_by_term(source_term).id == target_id  # type: ignore[union-attr]
        last_thread = store.progress.thread_states()[-1].thread_key

    assert main(["undo", "--decision", str(merge["id"]), "--db", str(db), "--reason", "two"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"undid curator decision {merge['id']} (MERGE E{source_id} into ")
    assert f"the glossary as of {last_thread} includes it" in out

    with GlossaryStore(db, read_only=True) as store:
        source, target = store.glossary.get_entry(source_id), store.glossary.get_entry(target_id)
        assert source.live and source.status != "merged"
        assert store.glossary.find_by_term(source_term).id == source_id  # type: ignore[union-attr]
        assert source_term not in target.aliases
        assert store.provenance.for_entry(source_id), "its sources came back with it"
        assert store.glossary.integrity_problems() == []
        (row,) = [r for r in store.curation.curator_decisions() if r["id"] == merge["id"]]
        assert row["undone_revision_id"] is not None

    trail = lineage_json(db, source_term, capsys)
    assert trail["entry"]["id"] == source_id
    merged = next(r for r in trail["revisions"] if r["action"] == "merged_into")
    assert (merged["decision_id"], merged["decision"]) == (merge["id"], "MERGE")
    undo = trail["revisions"][-1]
    assert undo["action"] == "undo" and undo["actor"] == "user"
    assert undo["reason"].startswith(f"undo curator decision {merge['id']} (MERGE")
    assert undo["reason"].endswith(": two")
    assert merged["undone_by"] is not None
    capsys.readouterr()
    assert main(["lineage", source_term, "--db", str(db)]) == 0
    assert f"undone by #{merged['undone_by']}" in capsys.readouterr().out

    for as_of in ([], ["--as-of-thread", last_thread]):
        out_file = tmp_path / f"glossary{len(as_of)}.json"
        assert (
            main(["export", "--format", "json", "--out", str(out_file), "--db", str(db), *as_of])
            == 0
        )
        exported = {e["id"]: e for e in json.loads(out_file.read_text())["entries"]}
        assert exported[source_id]["merged_into"] is None
        assert exported[source_id]["term"] == source_term
        assert source_term not in exported[target_id]["aliases"]

    capsys.readouterr()
    assert main(["status", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["curator_decisions_undone"] == 1
    assert main(["undo", "--decision", str(merge["id"]), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "was already undone" in err


def test_undo_a_revision_restores_the_prior_values_as_a_new_revision(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with GlossaryStore(db, read_only=True) as store:
        change = next(
            r
            for r in store.history.revisions()
            if r.action == "update"
            and r.actor_kind == "agent"
            and r.old_value
            and r.new_value
            and r.old_value["definition"] != r.new_value["definition"]
            and store.glossary.get_entry(r.entry_id).definition == r.new_value["definition"]  # type: ignore[arg-type]
            and any(
                later.action != "undo"
                for later in store.history.revisions(r.entry_id, since_id=r.id)
            )
        )
        assert change.entry_id is not None and change.old_value is not None
        before = store.glossary.get_entry(change.entry_id)
    assert main(["undo", "--revision", str(change.id), "--db", str(db), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["undone"] == [change.id] and result["entry_ids"] == [change.entry_id]
    with GlossaryStore(db, read_only=True) as store:
        after = store.glossary.get_entry(change.entry_id)
        assert after.definition == change.old_value["definition"]
        assert after.status == before.status, "a later status change is kept"
        assert store.history.revisions(change.entry_id)[-1].id == result["revision_ids"][0]
    trail = lineage_json(db, f"E{change.entry_id}", capsys)
    undone = next(r for r in trail["revisions"] if r["id"] == change.id)
    assert undone["undone_by"] == result["revision_ids"][0]
    assert trail["revisions"][-1]["reason"].startswith(f"undo revision {change.id} (update E")


def test_undo_errors_are_one_line_exit_2_and_change_nothing(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with GlossaryStore(db, read_only=True) as store:
        last = store.history.last_revision_id()
        kept = next(r for r in store.curation.curator_decisions() if r["revision_id"] is None)
    for argv, message in (
        (["--decision", "99999"], "no curator decision 99999"),
        (["--revision", "99999"], "no revision 99999"),
        (["--revision", "0"], "a revision id is a positive integer"),
        (["--decision", str(kept["id"])], "changed nothing; there is nothing to undo"),
    ):
        capsys.readouterr()
        assert main(["undo", *argv, "--db", str(db)]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("terrarium: error: ") and message in err and "\n" not in err
    assert main(["undo", "--db", str(db)]) == 2  # neither id
    assert main(["undo", "--decision", "1", "--revision", "1", "--db", str(db)]) == 2
    capsys.readouterr()
    assert main(["undo", "--revision", "1", "--db", str(db.parent / "missing.db")]) == 2
    assert "no annotator store" in capsys.readouterr().err
    assert not (db.parent / "missing.db").exists()
    with GlossaryStore(db, read_only=True) as store:
        assert store.history.last_revision_id() == last


def test_undo_is_a_writer_refused_while_another_holds_the_lease(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merge = merge_changed_since(db)
    with GlossaryStore(db) as store:
        store.runs.acquire_writer_lease("holder-run")
        last = store.history.last_revision_id()
        try:
            capsys.readouterr()
            assert main(["undo", "--decision", str(merge["id"]), "--db", str(db)]) == 2
            assert "holder-run" in capsys.readouterr().err
            assert store.history.last_revision_id() == last
        finally:
            store.runs.release_writer_lease("holder-run")


def test_undo_job_in_dagster_undoes_a_decision_and_the_export_reflects_it(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    store_path: Path,
    sample_store: Path,
) -> None:
    store_path.parent.mkdir(parents=True)
    shutil.copy(sample_store, store_path)
    merge = merge_changed_since(store_path)
    source_id = merge["entry_id"]
    config = {"ops": {"undo_change": {"config": {"decision_id": merge["id"], "reason": "ui"}}}}
    result = undo_job.execute_in_process(run_config=config, instance=instance, resources=resources)
    assert result.success
    output = result.output_for_node("undo_change")
    assert output["decision_ids"] == [merge["id"]] and source_id in output["entry_ids"]
    (event,) = [
        e for e in result.all_node_events if e.event_type == dg.DagsterEventType.STEP_OUTPUT
    ]
    metadata = event.step_output_data.metadata
    assert metadata["refresh_export_of"].value == keys[-1]

    exported = dg.materialize(
        [thread_glossary],
        selection=[glossary_export],
        instance=instance,
        resources=resources,
        partition_key=keys[-1],
    )
    assert exported.success
    out = resources["store"].export_root() / keys[-1] / "glossary.json"
    entries = {e["id"]: e for e in json.loads(out.read_text())["entries"]}
    assert entries[source_id]["merged_into"] is None

    again = undo_job.execute_in_process(
        run_config=config, instance=instance, resources=resources, raise_on_error=False
    )
    assert not again.success
    failure = again.failure_data_for_node("undo_change")
    assert failure is not None and failure.error is not None
    assert "was already undone" in failure.error.message


def test_undoing_the_undo_puts_the_decision_back_in_force(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merge = merge_changed_since(db)
    source_id = merge["entry_id"]
    assert main(["undo", "--decision", str(merge["id"]), "--db", str(db), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["undo", "--revision", str(first["revision_ids"][0]), "--db", str(db)]) == 0
    with GlossaryStore(db, read_only=True) as store:
        assert store.glossary.get_entry(source_id).merged_into == merge["target_entry_id"]
        (row,) = [r for r in store.curation.curator_decisions() if r["id"] == merge["id"]]
        assert row["undone_revision_id"] is None
        assert store.glossary.integrity_problems() == []
    trail = lineage_json(db, f"E{merge['target_entry_id']}", capsys)
    by_id = {revision["id"]: revision for revision in trail["revisions"]}
    assert by_id[merge["revision_id"]]["undone_by"] is None, "its undo was undone"
    assert by_id[first["revision_ids"][0]]["undone_by"] is not None
    assert main(["undo", "--decision", str(merge["id"]), "--db", str(db)]) == 0
    with GlossaryStore(db, read_only=True) as store:
        assert store.glossary.get_entry(source_id).live


def test_a_decision_a_rewind_rolled_back_is_refused_in_one_line(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --rewind --threads ch2` rolls back the second thread's curation and curates it
    anew; undoing one of its first decisions wrote revisions that changed nothing and counted
    as an undo. It is refused now, naming the rollback; a decision of the new curation, and one
    of the first thread (not rolled back), are undone as before."""
    with GlossaryStore(db, read_only=True) as store:
        second = store.progress.thread_states()[1].thread_id
        first_decisions = [
            row
            for row in store.curation.curator_decisions()
            if row["thread_id"] == second and row["revision_id"] is not None
        ]
    assert first_decisions
    assert main(["run", "--offline", "--rewind", "--threads", "ch2", "--db", str(db)]) == 0
    with GlossaryStore(db, read_only=True) as store:
        last = store.history.last_revision_id()
        again = [
            row
            for row in store.curation.curator_decisions()
            if row["thread_id"] == second
            and row["revision_id"] is not None
            and row["id"] > first_decisions[-1]["id"]
        ]
    capsys.readouterr()
    assert main(["undo", "--decision", str(first_decisions[0]["id"]), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert "was rolled back by revision" in err and "\n" not in err
    with GlossaryStore(db, read_only=True) as store:
        assert store.history.last_revision_id() == last  # nothing written
    assert again, "the rewound thread was not curated anew"
    assert main(["undo", "--decision", str(again[0]["id"]), "--db", str(db)]) == 0


def test_why_of_an_undo_says_a_user_made_it_not_a_model(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`why --revision` of the user's undo said "finish the thread with `terrarium run`", which
    can never help: no model wrote it, so no context holds it to ask."""
    with GlossaryStore(db, read_only=True) as store:
        decision = next(r for r in store.curation.curator_decisions() if r["revision_id"])
    assert main(["undo", "--decision", str(decision["id"]), "--db", str(db)]) == 0
    with GlossaryStore(db, read_only=True) as store:
        undo = store.history.last_revision_id()
    capsys.readouterr()
    assert main(["why", "--offline", "--revision", str(undo), "--db", str(db)]) == 2
    line = capsys.readouterr().err.strip()
    assert "was made by the user, not by a model" in line and "\n" not in line, line
    assert "terrarium run" not in line
