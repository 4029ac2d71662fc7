"""`terrarium import` on shapes of books first met in the sweep of December 2026: a verse epic
whose pictures are captioned twice (The Iliad), a collection of tales one of which is told in
numbered parts (Andersen's Fairy Tales), a play whose contents page lists each act's scenes in a
wrapped paragraph (Hamlet), an HTML heading wrapped by a line break (The Arabian Nights)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.books import imported_book

_PROSE = (
    "{who} walked the long road to the harbour at first light, counting the masts and the gulls, "
    "and wondering aloud whether the ship would wait for a passenger who had paid in promises."
)


def _chapters(corpus: Path) -> list[tuple[str, list[str]]]:
    """Each chapter's title and its paragraphs (scene breaks left out), as the corpus has them."""
    with sqlite3.connect(corpus) as conn:
        threads = conn.execute("SELECT id, title FROM thread ORDER BY id").fetchall()
        return [
            (
                title,
                [
                    body
                    for (body,) in conn.execute(
                        "SELECT body FROM post WHERE thread_id = ? AND id NOT IN "
                        "(SELECT post_id FROM tag WHERE name = 'scene_break') ORDER BY id",
                        (thread,),
                    )
                ],
            )
            for thread, title in threads
        ]


def test_a_caption_set_again_under_its_picture_is_no_paragraph(tmp_path: Path) -> None:
    """The Iliad's 6130-0.txt sets each picture's caption twice: in its marker, "[Illustration:
    MARS.]", and again centred under it, "MARS.": 71 captions were paragraphs of the story (one
    between two speeches of Book I). The caption under its marker goes with it; a line that
    only resembles it, or a marker's caption that the text does not repeat, changes nothing."""
    verse = "  The trembling priest along the shore return’d,\n  And in the anguish mourn’d."
    text = (
        f"BOOK I.\n\n\n{_PROSE.format(who='Chryses')}\n\n"
        "                 [Illustration: HOMER INVOKING\n                 THE MUSE.]\n\n"
        "                         HOMER INVOKING THE MUSE.\n\n\n"
        f"{verse}\n\n"
        "                          [Illustration: MARS.]\n\n"
        "                                  MARS.\n\n"
        "                          [Illustration: VULCAN.]\n\n"
        "  Vulcan, the lame god, rose from his forge.\n\n\n"
        f"BOOK II.\n\n\n{_PROSE.format(who='Agamemnon')}\n\n"
        "MARS.\n\n"
        f"{_PROSE.format(who='Nestor')}\n"
    )
    chapters = _chapters(imported_book(tmp_path, text))
    assert chapters == [
        (
            "BOOK I",
            [
                _PROSE.format(who="Chryses"),
                "The trembling priest along the shore return’d, And in the anguish mourn’d.",
                "Vulcan, the lame god, rose from his forge.",
            ],
        ),
        (
            "BOOK II",
            [_PROSE.format(who="Agamemnon"), "MARS.", _PROSE.format(who="Nestor")],
        ),
    ]
