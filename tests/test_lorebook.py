"""`terrarium export --format lorebook`: a SillyTavern World Info file, as of a thread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.exports.lorebook import plain_definition
from terrarium_dagster.glossary.store import GlossaryStore

# The fields SillyTavern's World Info editor reads on every entry (its entry template).
ENTRY_FIELDS = {
    "uid", "key", "keysecondary", "comment", "content", "constant", "selective",
    "selectiveLogic", "order", "position", "disable", "probability", "useProbability", "depth",
}  # fmt: skip


@pytest.fixture
def store(sample_db: Path, tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    assert main(["run", "--offline", "--corpus", str(sample_db), "--db", str(db)]) == 0
    return db


def test_the_lorebook_has_one_entry_per_live_term_keyed_by_term_and_aliases(
    store: Path, sample_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "lore"
    args = ["export", "--format", "lorebook", "--out", str(out), "--db", str(store)]
    assert main([*args, "--corpus", str(sample_db)]) == 0
    book = json.loads((out / "lorebook.json").read_text())
    assert isinstance(book["entries"], dict) and book["entries"]
    with GlossaryStore(store) as glossary:
        live = [e for e in glossary.glossary.entries() if e.status not in ("rejected", "merged")]
    assert len(book["entries"]) == len(live)
    for uid, entry in book["entries"].items():
        assert set(entry) >= ENTRY_FIELDS, set(entry) ^ ENTRY_FIELDS
        assert entry["uid"] == int(uid)
        assert entry["key"] and entry["key"][0] == entry["comment"]
        assert "[[" not in entry["content"] and entry["content"]


def test_a_lorebook_as_of_a_thread_holds_nothing_from_later_threads(
    store: Path, sample_db: Path, tmp_path: Path
) -> None:
    with Corpus(sample_db) as corpus:
        first = corpus.threads()[0]
    out = tmp_path / "lore"
    args = ["export", "--format", "lorebook", "--out", str(out), "--db", str(store)]
    assert main([*args, "--corpus", str(sample_db), "--as-of-thread", first.key]) == 0
    book = json.loads((out / "lorebook.json").read_text())
    with GlossaryStore(store) as glossary:
        then = {view.term for view in glossary.history.glossary_as_of_thread(first.id)}
        now = {entry.term for entry in glossary.glossary.entries()}
    terms = {entry["comment"] for entry in book["entries"].values()}
    assert terms <= then and terms < now


def test_links_become_plain_names() -> None:
    text = "Keeper of the [[Ninefold Lantern]] in [[Orrowmere|the lake city]]."
    assert plain_definition(text) == "Keeper of the Ninefold Lantern in the lake city."
