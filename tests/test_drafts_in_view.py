"""What a drafted scene is held to beyond its own message: the entries an earlier scene of its
block put in the conversation, which a serial run's model reads before deciding the scene.

A scene that names a known thing only in another form ("the Vorthaks of the South" beside an
entry "Vorthak") gets no line of it in its own message; serially the model still has it in view
when the scene before listed it, and makes no second entry. A draft made from the block's start
had not: it is decided again once that earlier scene has committed. Real `terrarium run`s,
offline, on a hand-built corpus.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from terrarium_dagster.agent.scene_lines import name_words, names_a_word
from terrarium_dagster.cli import main
from terrarium_dagster.store.models import Entry
from tests.support.cli import run_args
from tests.support.corpus_builder import PostSpec, ThreadSpec, build_corpus

CONCURRENCY = 8


def _scene(*sentences: str) -> list[PostSpec]:
    """A scene: one QM post of these sentences among filler, then a player's reply."""
    body = " ".join(f"The road was cold. {sentence}" for sentence in sentences)
    return [PostSpec(body + " Nobody spoke."), PostSpec("&gt;keep going", qm=False)]


def _live_terms(db: Path) -> list[str]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT term FROM entry WHERE deleted = 0 AND status NOT IN ('merged', 'rejected') "
            "ORDER BY lower(term)"
        ).fetchall()
    return [str(term) for (term,) in rows]


def _redrafts(db: Path) -> int:
    """How many scenes of the run were decided again (the threads' answer tallies)."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT extra FROM thread_state").fetchall()
    return sum(
        int((json.loads(extra).get("answers") or {}).get("redrafts", 0)) for (extra,) in rows
    )


def test_a_draft_not_shown_what_an_earlier_scene_of_its_block_listed_is_decided_again(
    tmp_path: Path,
) -> None:
    corpus = build_corpus(
        tmp_path / "quest.db",
        [
            ThreadSpec(
                "One",
                [
                    *_scene("The riders of Vorthak came at dawn.", "Later Vorthak fell silent."),
                    *_scene("Rain fell all night."),
                ],
            ),
            ThreadSpec(
                "Two",
                [
                    # lists Vorthak (its name occurs): in the conversation for the next scene
                    *_scene("The banners of Vorthak flew at the ford."),
                    # names it only as a people of it: no line of Vorthak in its own message
                    *_scene("Beyond the ford camped the Vorthaks of the South, a horde."),
                    *_scene("Rain fell all night."),
                ],
            ),
        ],
    )
    serial, parallel = tmp_path / "serial.db", tmp_path / "parallel.db"
    assert main(run_args(serial, corpus, concurrency=1)) == 0
    assert main(run_args(parallel, corpus, concurrency=CONCURRENCY)) == 0
    assert _live_terms(serial) == ["Vorthak"]  # serially the people is read as Vorthak's
    assert _live_terms(parallel) == _live_terms(serial)
    assert _redrafts(parallel) >= 1  # the scene of the people was decided again


def test_a_plural_in_a_scene_names_a_word_of_an_entry_and_an_english_word_does_not() -> None:
    vorthak = Entry(id=1, term="Vorthak", norm_term="vorthak", definition="", status="tentative")
    river = Entry(id=2, term="River Iss", norm_term="river iss", definition="", status="tentative")
    assert names_a_word(vorthak, name_words("the Vorthaks of the South"))
    assert names_a_word(vorthak, name_words("Vorthak's banners"))
    assert not names_a_word(river, name_words("two rivers met"))
