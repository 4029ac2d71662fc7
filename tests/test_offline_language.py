"""The offline backend on a story in another language says so before it runs.

Its word rules are English's (word frequencies, titles, sentence shapes): on a Dutch book
(Ontboezemingen, Gutenberg 24675) it confirmed "toen", "gij", "kunnen", "zonder" and "omdat" as
terms with no word of warning. A run of `--offline` on a story that does not read as English
now says so in one line, and runs as before; an English story, a forum quest, and a run with
nothing left to do say nothing of it.
"""

from __future__ import annotations

from pathlib import Path

from terrarium_dagster.terms.english import ENGLISH_SHARE, english_share
from tests.support.cli import run_args, terrarium_main

NOTE = "does not read as English"

DUTCH = """\
HOOFDSTUK I

Toen wij des morgens vroeg van de kade vertrokken, was de lucht nog grijs en de zee zoo stil als \
een vijver; de kapitein stond op het dek en riep dat wij zonder uitstel moesten gaan, omdat de \
wind zou draaien voor den middag.

Mijne reisgenooten waren niet allen even vroolijk, want het afscheid van huis en haard viel hun \
zwaar; doch toen het schip de haven uit was en de golven ons begonnen te wiegen, vergaten zij \
hunne zorgen en zongen een lied van de zee.

HOOFDSTUK II

Des avonds zaten wij bijeen in de kajuit, en de stuurman vertelde van zijne reizen naar de \
Oost, van stormen en windstilten, van eilanden waar het altijd zomer is en de menschen nooit \
haast hebben, en wij luisterden tot diep in den nacht.
"""

ENGLISH = """\
CHAPTER I

When we left the quay early in the morning the sky was still grey and the sea as calm as a pond; \
the captain stood on the deck and called that we must go without delay, because the wind would \
turn before noon.

My fellow travellers were not all equally cheerful, for the farewell to home and hearth weighed \
on them; but when the ship was out of the harbour and the waves began to rock us, they forgot \
their cares and sang a song of the sea.

CHAPTER II

In the evening we sat together in the cabin, and the mate told of his voyages to the East, of \
storms and calms, of islands where it is always summer and the people are never in a hurry, \
and we listened deep into the night.
"""


def _run(tmp_path: Path, name: str, text: str) -> list[str]:
    book = tmp_path / f"{name}.txt"
    book.write_text(text, encoding="utf-8")
    corpus, db = tmp_path / f"{name}.corpus.db", tmp_path / f"{name}.db"
    imported = terrarium_main("import", str(book), "--out", str(corpus))
    assert imported.returncode == 0, imported.stderr
    stderrs = []
    for _ in range(2):  # the first run annotates, the second has nothing left to do
        done = terrarium_main(*run_args(db, corpus))
        assert done.returncode == 0, done.stderr
        stderrs.append(done.stderr)
    return stderrs


def test_the_offline_backend_says_in_one_line_that_a_story_is_not_english(tmp_path: Path) -> None:
    assert english_share(DUTCH) < ENGLISH_SHARE <= english_share(ENGLISH)

    first, again = _run(tmp_path, "zee", DUTCH)
    said = [line for line in first.splitlines() if NOTE in line]
    assert len(said) == 1, first
    assert "offline backend" in said[0] and "--agent-url" in said[0]
    assert NOTE not in again  # nothing left to do: nothing to warn of

    first, _again = _run(tmp_path, "sea", ENGLISH)
    assert NOTE not in first


def test_the_bundled_forum_quest_reads_as_english(tmp_path: Path) -> None:
    done = terrarium_main(*run_args(tmp_path / "quest.db"), "--max-scenes", "1")
    assert done.returncode == 0, done.stderr
    assert NOTE not in done.stderr
