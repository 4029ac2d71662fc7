"""`terrarium import`: a contents page that numbers its chapters from one again under each
part, a title page's publication line over a long preface, a rule of dashes over a heading, and
a numbered sentence of a book told in numbered paragraphs."""

from __future__ import annotations

from terrarium_dagster.corpus.importers.chapters import chapters_from_blocks
from terrarium_dagster.corpus.importers.plain_text import blocks_from_text

_PROSE = (
    "{who} walked the long road to the harbour at first light, counting the masts and the gulls, "
    "and wondering aloud whether the ship would wait for a passenger who had paid in promises."
)


def test_a_contents_page_numbering_each_parts_chapters_from_one_lists_every_part() -> None:
    """Madame Bovary (14155) lists "PREMIÈRE PARTIE" over "I" to "IX", "DEUXIÈME PARTIE" over
    "I" to "XV", "TROISIÈME PARTIE" over "I" to "XI": the page was read to end at the second
    "I", so the third part's bare heading was never listed, ran on as the last paragraph of the
    second part's last chapter, and its eleven chapters were named with the second part."""
    prose = _PROSE.format(who="Emma")
    parts = {"PREMIÈRE PARTIE": 2, "DEUXIÈME PARTIE": 3, "TROISIÈME PARTIE": 2}
    numbers = ["I", "II", "III"]
    contents = "".join(
        f"{part}\n" + "".join(f"{n}\n" for n in numbers[:count]) for part, count in parts.items()
    )
    body = "".join(
        f"{part}\n\n\n" + "".join(f"{n}\n\n{prose}\n\n{prose}\n\n\n" for n in numbers[:count])
        for part, count in parts.items()
    )
    text = f"Madame Bovary\n\n\nTable des matières\n\n{contents}\n\nÀ Louis Bouilhet\n\n\n{body}"
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "PREMIÈRE PARTIE: I", "PREMIÈRE PARTIE: II",
        "DEUXIÈME PARTIE: I", "DEUXIÈME PARTIE: II", "DEUXIÈME PARTIE: III",
        "TROISIÈME PARTIE: I", "TROISIÈME PARTIE: II",
    ]  # fmt: skip
    assert all(c.paragraphs == [prose, prose] for c in chapters)


def test_a_title_listed_again_after_the_contents_page_still_ends_it() -> None:
    """The first part's title again after the page is its heading, not a line of the page; a
    page that lists one numbering, never restarted, ends at its first chapter's number again."""
    prose = _PROSE.format(who="Charles")
    text = (
        "CONTENTS\n\nTHE VILLAGE\nI\nII\nTHE TOWN\nIII\nIV\n\n\n"
        f"THE VILLAGE\n\n\nI\n\n{prose}\n\n\nII\n\n{prose}\n\n\n"
        f"THE TOWN\n\n\nIII\n\n{prose}\n\n\nIV\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == ["I", "II", "III", "IV"]
    assert all(c.paragraphs == [prose] for c in chapters)  # no part's title left a paragraph
