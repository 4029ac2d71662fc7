"""`terrarium run` / `status` end to end on real corpora with the offline backend."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.sample import gold_terms
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.normalize import normalize_term
from tests.support.cli import run_args
from tests.support.corpus_builder import simple_quest
from tests.support.store_dump import glossary_fingerprint


@pytest.fixture(scope="module")
def sample_run(offline_sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole sample quest annotated (and curated) once with the offline backend."""
    db = tmp_path_factory.mktemp("run") / "store.db"
    shutil.copyfile(offline_sample_store, db)
    return db


def test_offline_run_finds_at_least_70_percent_of_the_gold_terms(sample_run: Path) -> None:
    with GlossaryStore(sample_run) as store:
        names = set()
        for entry in store.glossary.entries(include_deleted=True):
            names.add(normalize_term(entry.term))
            names.update(normalize_term(alias) for alias in entry.aliases)
    gold = gold_terms()
    found = [
        term.term
        for term in gold
        if any(normalize_term(name) in names for name in (term.term, *term.aliases))
    ]
    recall = len(found) / len(gold)
    assert recall >= 0.70, (
        f"recall {recall:.0%}; missing: {sorted(set(t.term for t in gold) - set(found))}"
    )


def test_offline_run_annotates_and_curates_every_thread_with_sources(sample_run: Path) -> None:
    with GlossaryStore(sample_run) as store:
        states = store.progress.thread_states()
        assert states and all(state.status == "curated" for state in states)
        live = [e for e in store.glossary.entries() if e.status not in ("rejected", "merged")]
        assert live
        for entry in live:
            assert store.provenance.for_entry(entry.id), f"{entry.term} has no source post"
        assert all(state.snapshot_id for state in states)


def test_status_json_reports_threads_entries_and_tokens(
    sample_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--db", str(sample_run), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["entries"] > 0
    assert report["calls"] > 0 and report["prompt_tokens"] > 0
    assert set(report["threads_by_status"]) == {"curated"}


def test_run_on_a_missing_corpus_exits_2_with_one_line_and_creates_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    code = main(run_args(db, tmp_path / "nope.db"))
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "nope.db" in err
    assert not db.exists()


def test_run_on_a_corpus_missing_a_column_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = simple_quest(tmp_path / "c.db")
    with sqlite3.connect(corpus) as connection:
        connection.execute("ALTER TABLE post DROP COLUMN body")
    code = main(run_args(tmp_path / "s.db", corpus))
    assert code == 2
    assert "body" in capsys.readouterr().err


def test_bad_configuration_exits_2_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = simple_quest(tmp_path / "c.db")
    code = main(run_args(tmp_path / "s.db", corpus, context_budget=100))
    assert code == 2
    assert "context_budget" in capsys.readouterr().err


def test_unknown_thread_range_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = simple_quest(tmp_path / "c.db")
    code = main(run_args(tmp_path / "s.db", corpus, threads="999..1000"))
    assert code == 2
    assert "999" in capsys.readouterr().err


def test_max_scenes_stops_early_and_a_second_run_resumes_to_the_same_glossary(
    tmp_path: Path,
) -> None:
    corpus = simple_quest(tmp_path / "c.db", threads=2, scenes_per_thread=3)
    whole = tmp_path / "whole.db"
    assert main(run_args(whole, corpus)) == 0
    parts = tmp_path / "parts.db"
    args = run_args(parts, corpus)
    assert main([*args, "--max-scenes", "2"]) == 0
    with GlossaryStore(parts) as store:
        assert sum(state.scenes_done for state in store.progress.thread_states()) == 2
    assert main([*args, "--max-scenes", "3"]) == 0
    assert main(args) == 0
    assert glossary_fingerprint(parts) == glossary_fingerprint(whole)


def test_threads_range_annotates_only_the_range_in_order(tmp_path: Path) -> None:
    corpus = simple_quest(tmp_path / "c.db", threads=3, scenes_per_thread=1)
    db = tmp_path / "s.db"
    args = run_args(db, corpus)
    assert main([*args, "--threads", "..t00001-1014"]) == 0
    with GlossaryStore(db) as store:
        assert [
            s.status for s in sorted(store.progress.thread_states(), key=lambda s: s.position)
        ] == [
            "curated",
            "curated",
        ]


def test_a_thread_out_of_order_exits_2_naming_the_missing_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = simple_quest(tmp_path / "c.db", threads=3, scenes_per_thread=1)
    code = main(run_args(tmp_path / "s.db", corpus, threads="t00002-1028.."))
    assert code == 2
    assert "t00000-1000" in capsys.readouterr().err


def _live_glossary(db: Path) -> list[tuple[str, str, str]]:
    with GlossaryStore(db) as store:
        return sorted(
            (e.term, e.definition, e.status)
            for e in store.glossary.entries()
            if e.status != "merged"
        )


def test_from_snapshot_rolls_back_then_redoes_the_later_threads_identically(
    tmp_path: Path,
) -> None:
    corpus = simple_quest(tmp_path / "c.db", threads=3, scenes_per_thread=2)
    db = tmp_path / "s.db"
    args = run_args(db, corpus)
    assert main(args) == 0
    before = _live_glossary(db)
    with GlossaryStore(db) as store:
        first = min(store.progress.thread_states(), key=lambda s: s.position)
        snapshot_id = first.snapshot_id
        revisions_before = store.history.last_revision_id()
    assert snapshot_id is not None
    assert main([*args, "--from-snapshot", str(snapshot_id)]) == 0
    assert _live_glossary(db) == before
    with GlossaryStore(db) as store:
        actions = {r.action for r in store.history.revisions(since_id=revisions_before)}
        assert "rollback" in actions, "the rollback is recorded as revisions"
        assert all(s.status == "curated" for s in store.progress.thread_states())


def test_rewind_redoes_a_thread_that_later_threads_built_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = simple_quest(tmp_path / "c.db", threads=3, scenes_per_thread=1)
    db = tmp_path / "s.db"
    args = run_args(db, corpus)
    assert main(args) == 0
    before = _live_glossary(db)
    assert main([*args, "--threads", "t00001-1014..", "--rewind"]) == 0
    assert _live_glossary(db) == before
    with GlossaryStore(db) as store:
        assert any(r.action == "rollback" for r in store.history.revisions())


def test_a_malformed_config_file_exits_2_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "terrarium.yaml"
    config.write_text("corpus: [1, 2\n")
    monkeypatch.setenv("TERRARIUM_CONFIG", str(config))
    assert main(["status", "--db", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err
    assert "terrarium.yaml" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["snapshots"],
        ["lineage", "X"],
        ["why", "X", "--offline"],
        ["export", "--format", "json", "--out", "out.json"],
    ],
)
def test_readers_refuse_a_missing_store_and_create_none(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "missing.db"
    assert main([*command, "--db", str(db)]) == 2
    assert "no annotator store" in capsys.readouterr().err
    assert not db.exists()


def test_why_about_an_unknown_entry_exits_2(
    sample_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["why", "E99999", "--offline", "--db", str(sample_run)]) == 2
    assert "E99999" in capsys.readouterr().err


def test_a_books_chapter_out_of_order_is_named_as_a_chapter(tmp_path: Path) -> None:
    """Dagster's failure line and the CLI's said "thread t00002-130 cannot be annotated before
    t00000-1" of an imported book, whose threads every other line calls chapters."""
    from tests.support.cli import run_args, terrarium_main

    paragraph = (
        "The clerk wrote every entry of the day in the ledger by the window, and when the lamp "
        "was lit he read them over again, slowly, before he put the book away for the night."
    )
    text = "".join(f"CHAPTER {n}\n\n{paragraph}\n\n{paragraph}\n\n\n" for n in ("I", "II", "III"))
    book = tmp_path / "ledger.txt"
    book.write_text(text, encoding="utf-8")
    corpus = tmp_path / "ledger.corpus.db"
    assert terrarium_main("import", str(book), "--out", str(corpus)).returncode == 0
    done = terrarium_main(*run_args(tmp_path / "ledger.db", corpus), "--threads", "ch3")
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "chapter 3 (" in line and "cannot be annotated before chapter 1 (" in line, line
    assert "chapters are annotated in story order" in line and "\n" not in line
