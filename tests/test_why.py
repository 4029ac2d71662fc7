"""`terrarium why` and `terrarium snapshots` end to end: a real corpus annotated by the engine's
loop with the offline backend, whose summon answer comes from the snapshot's record of the edit."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from terrarium_dagster.cli import (
    build_parser,
    cmd_snapshots,
    cmd_why,
)
from terrarium_dagster.config import Settings, load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine import Engine, open_client
from terrarium_dagster.errors import EntryNotFoundError, InputError
from terrarium_dagster.snapshots.context_snapshots import SnapshotNotFoundError
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.summon.why import render_why, snapshots_report, why
from tests.support.corpus_builder import simple_quest

URL = "https://quest.example/q/{thread_id}#{post_id}"


@dataclass
class Annotated:
    corpus_path: Path
    db: Path
    settings: Settings


@pytest.fixture(name="annotated", scope="module")
def annotated_fixture(tmp_path_factory: pytest.TempPathFactory) -> Annotated:
    """Two threads of three scenes annotated and curated (two thread-end snapshots)."""
    root = tmp_path_factory.mktemp("why")
    corpus_path = simple_quest(root / "quest.db", threads=2, scenes_per_thread=3)
    db = root / "store.db"
    settings = load_settings(
        corpus=corpus_path,
        db=str(db),
        url_template=URL,
        offline=True,
        context_budget=8192,
        max_tokens=512,
    )
    with Engine.open(settings, run_id="run-1") as engine:
        for thread in engine.threads:
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)
    return Annotated(corpus_path, db, settings)


@pytest.fixture(name="opened")
def opened_fixture(annotated: Annotated) -> Iterator[tuple[GlossaryStore, Corpus]]:
    store = GlossaryStore(annotated.db)
    corpus = Corpus(annotated.corpus_path, url_template=URL)
    try:
        yield store, corpus
    finally:
        corpus.close()
        store.close()


def test_why_summons_the_context_that_wrote_the_entry_and_returns_its_cited_posts(
    annotated: Annotated, opened: tuple[GlossaryStore, Corpus]
) -> None:
    store, corpus = opened
    entry = store.glossary.find_by_term("Sardomir")
    assert entry is not None
    ends = store.memory.snapshots(kind="thread_end")
    summons_before = len(store.memory.summons())
    with open_client(annotated.settings) as client:
        answer = why(store, corpus, client, "Sardomir", budget=8192, max_tokens=512)

    assert (answer.entry_id, answer.term) == (entry.id, "Sardomir")
    assert answer.question.startswith(f'Why did you change [E{entry.id}] "Sardomir" (')
    assert answer.revision_thread_id == ends[1].thread_id
    assert (answer.snapshot_id, answer.basis) == (ends[1].id, "after")
    assert answer.in_force_snapshot_id == ends[0].id
    # the offline backend answers from the snapshot's own record of the edits
    assert f"I created [E{entry.id}] Sardomir" in answer.answer
    assert f"I updated [E{entry.id}] Sardomir" in answer.answer
    sources = {p.post_id for p in store.provenance.for_entry(entry.id)}
    cited = {post.post_id for post in answer.cited_posts}
    assert cited and cited <= sources
    for post in answer.cited_posts:
        assert post.url == URL.format(thread_id=post.thread_id, post_id=post.post_id)
    assert len(store.memory.summons()) == summons_before + 1
    logged = store.memory.summons()[-1]
    assert logged["id"] == answer.summon_log_id and logged["snapshot_id"] == answer.snapshot_id
    assert logged["exchange"]["answers"] == [answer.answer]
    text = render_why(answer)
    assert "Cited posts:" in text and URL.format(thread_id=1042, post_id=1042) in text


def test_why_about_a_given_revision_with_a_question_of_ones_own(
    annotated: Annotated, opened: tuple[GlossaryStore, Corpus]
) -> None:
    store, corpus = opened
    entry = store.glossary.find_by_term("Orlundel")
    assert entry is not None
    created = next(r for r in store.history.revisions(entry.id) if r.action == "create")
    question = f"Which post first named [E{entry.id}]?"
    with open_client(annotated.settings) as client:
        answer = why(
            store,
            corpus,
            client,
            revision=created.id,
            question=question,
            budget=8192,
            max_tokens=512,
        )
    assert (answer.revision_id, answer.action, answer.question) == (created.id, "create", question)
    assert answer.snapshot_id == store.memory.snapshots(kind="thread_end")[0].id
    assert f"I created [E{entry.id}] Orlundel" in answer.answer
    with open_client(annotated.settings) as client, pytest.raises(InputError, match="not of"):
        why(store, corpus, client, "Sardomir", revision=created.id, budget=8192, max_tokens=512)


def test_why_names_what_is_missing(tmp_path: Path, annotated: Annotated) -> None:
    with GlossaryStore(tmp_path / "fresh.db") as store, open_client(annotated.settings) as client:
        with pytest.raises(EntryNotFoundError, match="no glossary entry named 'Nobody'"):
            why(store, None, client, "Nobody", budget=8192, max_tokens=512)
        store.glossary.create_entry(Actor(kind="agent", run_id="run-1"), "Vaskari", "A name.")
        # worded as `lineage` words it, with the names most likely meant
        with pytest.raises(EntryNotFoundError, match="did you mean: Vaskari"):
            why(store, None, client, "Vaskary", budget=8192, max_tokens=512)
        with pytest.raises(SnapshotNotFoundError, match="no snapshot records the context"):
            why(store, None, client, "E1", budget=8192, max_tokens=512)
        with pytest.raises(InputError, match="give an entry"):
            why(store, None, client, budget=8192, max_tokens=512)


def _parser() -> argparse.ArgumentParser:
    return build_parser()


def test_the_why_command_prints_the_answer_and_the_posts_it_cites(
    annotated: Annotated, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parser().parse_args(
        [
            "why",
            "Tethrick",
            "--db",
            str(annotated.db),
            "--corpus",
            str(annotated.corpus_path),
            "--url-template",
            URL,
            "--offline",
            "--context-budget",
            "8192",
            "--max-tokens",
            "512",
        ]
    )
    assert cmd_why(args) == 0
    out = capsys.readouterr().out
    assert "Tethrick" in out and "\nA: In scene " in out
    assert "Cited posts:" in out and "https://quest.example/q/1042#" in out
    # the thread by its key, as `status` names it (it was the bare id)
    assert re.search(r"^E\d+ Tethrick: revision \d+ \(\w+, thread t\d{5}-\d+, ", out, re.M), out

    options = ["--offline", "--context-budget", "8192", "--max-tokens", "512", "--json"]
    where = ["--db", str(annotated.db), "--corpus", str(annotated.corpus_path)]
    args = _parser().parse_args(["why", "Tethrick", *where, *options])
    assert cmd_why(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["term"] == "Tethrick" and payload["cited_posts"]


def test_the_snapshots_command_lists_every_snapshot_with_its_blame(
    annotated: Annotated, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parser().parse_args(["snapshots", "--db", str(annotated.db), "--json"])
    assert cmd_snapshots(args) == 0
    rows = json.loads(capsys.readouterr().out)
    with GlossaryStore(annotated.db) as store:
        ends = store.memory.snapshots(kind="thread_end")
        assert [row["id"] for row in rows] == [c.id for c in store.memory.snapshots()]
        first = next(row for row in rows if row["id"] == ends[0].id)
        in_force = [r for r in store.history.revisions() if r.snapshot_id == ends[0].id]
        assert first["revisions_in_force"] == len(in_force) > 0
        assert first["thread_key"] == store.progress.thread_states()[0].thread_key
        assert first["history_scenes"] == 3
        assert rows == snapshots_report(store)
    args = _parser().parse_args(["snapshots", "--db", str(annotated.db)])
    assert cmd_snapshots(args) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["id", "kind"]
    assert len(table) == len(rows) + 2  # the header, a row per snapshot, the legend
    assert table[-1].startswith("rev: ")
