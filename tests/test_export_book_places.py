"""The JSON and YAML exports of an imported book name its paragraphs as a reader does, as the
reader's site and the wiki do: `ref` "“CHAPTER II”, paragraph 3" with `chapter`, `chapter_title`
and `paragraph` beside the ids, and a definition's `>>N` citation written as that place (it read
"<chapter id>#<paragraph id>" and kept ">>N"). A forum quest's records keep their shape: `ref`
"thread#post", `>>N` as its forum writes it, no chapter fields.

Real imports and offline runs, a definition revised to cite its post (as a curator's REVISE
writes it), exported by the `terrarium` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from terrarium_dagster.cli import main
from tests.support.cli import run_args, terrarium
from tests.support.corpus_builder import simple_quest
from tests.support.glossary_fixtures import cite_first_source

BOOK = Path(__file__).parent / "data" / "lamplighters.txt"
BOOK_FIELDS = {"chapter", "chapter_title", "paragraph"}


def _exported(store: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    json_out, yaml_out = tmp_path / "glossary.json", tmp_path / "glossary.yaml"
    for fmt, out in (("json", json_out), ("yaml", yaml_out)):
        done = terrarium("export", "--db", str(store), "--format", fmt, "--out", str(out))
        assert done.returncode == 0, done.stderr
    return json.loads(json_out.read_text(encoding="utf-8")), yaml.safe_load(yaml_out.read_text())


def _record(document: dict[str, Any], entry_id: int) -> dict[str, Any]:
    return next(record for record in document["entries"] if record["id"] == entry_id)


def test_a_books_records_name_chapter_and_paragraph(tmp_path: Path) -> None:
    corpus, store = tmp_path / "book.db", tmp_path / "store.db"
    assert main(["import", str(BOOK), "--out", str(corpus)]) == 0
    assert main(run_args(store, corpus)) == 0
    entry_id, thread_id, post_id = cite_first_source(store)
    as_json, as_yaml = _exported(store, tmp_path)
    assert as_json == as_yaml, "the two formats carry the same data"
    assert as_json["meta"]["book"].startswith("The Lamplighters of Vell"), "whose glossary it is"
    record = _record(as_json, entry_id)
    paragraph = post_id - thread_id + 1
    [source] = [s for s in record["sources"] if s["post_id"] == post_id][:1]
    assert source["chapter"] == (1 if thread_id == 1 else 2), "the chapter's number in the book"
    assert source["chapter_title"] == source["thread_title"]
    place = f"“{source['chapter_title']}”, paragraph {paragraph}"
    assert source["ref"] == place and source["paragraph"] == paragraph
    assert (source["thread_id"], source["post_id"]) == (thread_id, post_id), "the ids stay"
    assert record["definition"] == f"Seen at the gate ({place}); not at >>999999."
    for link in (record["first_seen"], record["last_seen"]):
        assert set(link) >= BOOK_FIELDS and "#" not in link["ref"]
    sources = [source for record in as_json["entries"] for source in record["sources"]]
    assert all(set(s) >= BOOK_FIELDS and "#" not in s["ref"] for s in sources)


def test_a_quests_records_keep_the_forum_shape(tmp_path: Path) -> None:
    corpus, store = simple_quest(tmp_path / "quest.db"), tmp_path / "store.db"
    assert main(run_args(store, corpus)) == 0
    entry_id, thread_id, post_id = cite_first_source(store)
    as_json, as_yaml = _exported(store, tmp_path)
    assert as_json == as_yaml
    assert "book" not in as_json["meta"]
    record = _record(as_json, entry_id)
    assert record["definition"] == f"Seen at the gate (>>{post_id}); not at >>999999."
    source = next(s for s in record["sources"] if s["post_id"] == post_id)
    assert source["ref"] == f"{thread_id}#{post_id}"
    assert set(source) == {"post_id", "thread_id", "ref", "url", "quote", "thread_title"}
    assert set(record["first_seen"]) == {"post_id", "thread_id", "ref", "url"}
