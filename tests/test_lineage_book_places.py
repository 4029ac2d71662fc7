"""`terrarium lineage` of an imported book names a cited paragraph as it names its sources: a
curator's reason, a definition and a change citing `>>N` read "“CHAPTER II: ...”, paragraph 3".
Seen: a book's lineage said "why: Recorded from 4 paragraphs (>>201, >>203, >>204 and 1 more)"
(Moby-Dick), the corpus's post ids, beside sources named by chapter and paragraph. A quest's
lineage keeps `>>N` as its forum writes it.

Real imports and offline runs, a definition revised to cite its post, traced by the command."""

from __future__ import annotations

import json
from pathlib import Path

from terrarium_dagster.cli import main
from tests.support.cli import run_args, terrarium
from tests.support.corpus_builder import simple_quest
from tests.support.glossary_fixtures import cite_first_source

BOOK = Path(__file__).parent / "data" / "lamplighters.txt"


def _traced(store: Path, entry_id: int) -> tuple[str, dict[str, object]]:
    text = terrarium("lineage", f"E{entry_id}", "--db", str(store))
    as_json = terrarium("lineage", f"E{entry_id}", "--db", str(store), "--json")
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr + as_json.stderr
    return text.stdout, json.loads(as_json.stdout)


def test_a_books_lineage_names_a_cited_paragraph_by_its_place(tmp_path: Path) -> None:
    corpus, store = tmp_path / "book.db", tmp_path / "store.db"
    assert main(["import", str(BOOK), "--out", str(corpus)]) == 0
    assert main(run_args(store, corpus)) == 0
    entry_id, thread_id, post_id = cite_first_source(store, reason="Revised from >>{post}.")
    text, trail = _traced(store, entry_id)
    sources = [s for s in trail["sources"] if s["post_id"] == post_id]  # type: ignore[union-attr]
    title = sources[0]["thread_title"]
    place = f"“{title}”, paragraph {post_id - thread_id + 1}"
    assert f"why: Revised from {place}." in text
    assert f"definition: Seen at the gate ({place}); not at >>999999." in text
    curated = [line for line in text.splitlines() if line.strip().startswith("why:")]
    assert curated and not any(">>" in line for line in curated), curated
    revised = trail["revisions"][-1]  # type: ignore[index]
    assert revised["reason"] == f"Revised from {place}."
    assert trail["entry"]["definition"] == f"Seen at the gate ({place}); not at >>999999."  # type: ignore[index]


def test_a_quests_lineage_keeps_the_forum_citations(tmp_path: Path) -> None:
    corpus, store = simple_quest(tmp_path / "quest.db"), tmp_path / "store.db"
    assert main(run_args(store, corpus)) == 0
    entry_id, _thread_id, post_id = cite_first_source(store, reason="Revised from >>{post}.")
    text, trail = _traced(store, entry_id)
    assert f"why: Revised from >>{post_id}." in text
    assert f"definition: Seen at the gate (>>{post_id}); not at >>999999." in text
    assert trail["revisions"][-1]["reason"] == f"Revised from >>{post_id}."  # type: ignore[index]
