"""Names in any letters: the offline backend finds "Zoë", "Héloïse", "José Arcadio" and "Ñuño"
whether the text writes their accents composed (NFC) or as a letter and a combining mark (NFD,
where they had been cut: "Zoe", "He" + "loi" + "se", "Arcadio"), and a name written only in a
script without capitals ("李明", "김민준"), which had been skipped. A real offline run of a small
quest and of an imported novel; `terms.letters.MARKS` checked against this Python's Unicode."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.terms.candidates import find_candidates
from terrarium_dagster.terms.letters import MARKS
from terrarium_dagster.terms.text_search import find_term
from tests.support.cli import run_args
from tests.support.corpus_builder import PostSpec, ThreadSpec, build_corpus

NAMES = {"Zoë", "Héloïse", "José Arcadio", "Ñuño", "李明", "Valdoria"}
POSTS = (
    "Zoë walked into the market of Valdoria at dawn. Héloïse waited by the fountain with "
    "José Arcadio, who carried the lantern.",
    "Ñuño the smith hammered the blade while Zoë watched. Héloïse said that José Arcadio would "
    "pay in silver.",
    "At noon 李明 arrived from the east with a letter. Zoë read it aloud; 李明 bowed to Héloïse "
    "and to Ñuño.",
    "José Arcadio and Ñuño argued about the price. 李明 laughed. Zoë and Héloïse left for "
    "Valdoria.",
)


def _terms(store: Path, tmp_path: Path) -> dict[str, str]:
    out = tmp_path / "glossary.json"
    assert main(["export", "--db", str(store), "--format", "json", "--out", str(out)]) == 0
    entries = json.loads(out.read_text(encoding="utf-8"))["entries"]
    return {unicodedata.normalize("NFC", e["term"]): e["status"] for e in entries}


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_an_offline_run_finds_accented_and_uncased_names_whole(tmp_path: Path, form: str) -> None:
    posts = [PostSpec(unicodedata.normalize(form, text)) for text in POSTS]
    corpus = build_corpus(
        tmp_path / "quest.db",
        [ThreadSpec("The Market", posts[:2]), ThreadSpec("The Letter", posts[2:])],
    )
    store = tmp_path / "store.db"
    assert main(run_args(store, corpus)) == 0
    terms = _terms(store, tmp_path)
    assert set(terms) == NAMES, terms  # whole, and nothing cut from them ("Zoe", "He", "loi")
    assert set(terms.values()) == {"confirmed"}


NOVEL = """CHAPTER I

Héloïse Marchetti came down from the hills of Ávila with her brother Ñuño in the first week
of the rains. Zoë kept the inn at the crossroads, and it was Zoë who gave them bread.

"You are late," said 김민준, who had waited three days at the inn for Héloïse.

Ñuño laughed and said nothing. 김민준 paid Zoë for the room.

CHAPTER II

In the morning Héloïse and Ñuño rode on toward Ávila. 김민준 followed them at a distance, and
Zoë watched the road until the dust settled.
"""


def test_an_imported_novel_written_decomposed_keeps_its_names(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    book.write_text(unicodedata.normalize("NFD", NOVEL), encoding="utf-8")
    corpus, store = tmp_path / "book.db", tmp_path / "store.db"
    assert main(["import", str(book), "--out", str(corpus)]) == 0
    assert main(run_args(store, corpus)) == 0
    terms = _terms(store, tmp_path)
    assert {"Héloïse Marchetti", "Zoë", "Ñuño", "김민준", "Ávila"} <= set(terms), terms
    assert terms["Ávila"] == "rejected", "a real place named in passing, whole"
    assert not {"Zoe", "He", "Nun", "Avila", "Marchetti"} & set(terms), terms


def test_a_term_is_found_in_text_written_either_way_and_never_inside_a_word() -> None:
    decomposed = unicodedata.normalize("NFD", "Then Héloïse spoke to Zoë’s brother.")
    assert find_term(decomposed, "Héloïse")
    assert find_term(decomposed, "Zoë")
    assert not find_term(unicodedata.normalize("NFD", "Zoë"), "Zoe")  # "Zoe" + a mark
    assert not find_term(decomposed, "loïse")


def test_a_long_run_of_uncased_letters_is_a_phrase_not_a_name() -> None:
    found = {
        c.term
        for c in find_candidates("He wrote 我们明天早上在城门见面 on the wall, and 李明 read it.")
    }
    assert "李明" in found and not any(len(term) > 4 and "我" in term for term in found)


def test_marks_are_every_combining_mark_of_this_python() -> None:
    marks = {
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)).startswith("M")
    }
    import re

    listed = re.compile(f"[{MARKS}]")
    assert all(listed.match(mark) for mark in marks), "a mark is missing"
    assert not any(listed.match(chr(code)) for code in range(0x250) if chr(code) not in marks)
