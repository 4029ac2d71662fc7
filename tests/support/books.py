"""A book written by a test, imported as `terrarium import` does, and what the curator decided
about one of its names."""

from __future__ import annotations

from pathlib import Path

from terrarium_dagster.cli import main
from terrarium_dagster.store.annotator import GlossaryStore


def imported_book(tmp_path: Path, text: str) -> Path:
    """`text` as book.txt in `tmp_path`, imported into book.db (the corpus's path)."""
    book = tmp_path / "book.txt"
    book.write_text(text, encoding="utf-8")
    corpus = tmp_path / "book.db"
    assert main(["import", str(book), "--out", str(corpus)]) == 0
    return corpus


def curator_decisions(db: Path, term: str) -> list[tuple[int, str, str]]:
    """The curator's decisions about the entry named `term`: (thread, decision, reasoning)."""
    with GlossaryStore(db) as store:
        entry = store.glossary.find_by_term(term)
        assert entry is not None, term
        return [
            (row["thread_id"], row["decision"], row["reasoning"] or "")
            for row in store.curation.curator_decisions()
            if row["entry_id"] == entry.id
        ]
