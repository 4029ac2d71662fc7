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


_RULE = "-" * 65


def _numbered_paragraphs(count: int) -> str:
    return "\n\n".join(
        f"{n}.  Sun Tzu said: The art of war is of vital importance to the State, a matter of "
        "life and death, a road either to safety or to ruin, never to be neglected."
        for n in range(1, count + 1)
    )


def test_a_heading_right_under_a_rule_of_dashes_is_a_heading() -> None:
    """The Art of War (132) sets "INTRODUCTION" on the line right under a rule of dashes, and
    "Preface to the Project Gutenberg Etext" right over one: neither stood alone between blank
    lines, so neither was a heading, and Giles's preface and introduction (13,302 words) ran on
    under the title page's "First Published in 1910", left out as its front matter."""
    prose = _PROSE.format(who="Giles")
    text = (
        "SUN TZU ON THE ART OF WAR\n\n                     First Published in 1910\n\n"
        f"{_RULE}\n\n                          To my brother\n"
        "                  Captain Valentine Giles, R.G.\n"
        "                  this translation is affectionately dedicated.\n\n"
        f"{_RULE}\n\nPreface to the Project Gutenberg Etext\n{'-' * 38}\n\n{prose}\n\n"
        f"{_RULE}\nINTRODUCTION\n\n\n{prose}\n\n{prose}\n\n{_RULE}\n\n"
        f"I.  LAYING PLANS\n\n{_numbered_paragraphs(3)}\n\n{_RULE}\n\n"
        f"II.  WAGING WAR\n\n{_numbered_paragraphs(3)}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "Preface to the Project Gutenberg Etext", "INTRODUCTION",
        "I. LAYING PLANS", "II. WAGING WAR",
    ]  # fmt: skip
    assert book.chapters[1].paragraphs == [prose, prose]
    assert book.dropped == ["First Published in 1910 (front matter; 12 words)"]


def test_front_matter_is_never_dropped_unseen() -> None:
    """Prose under a title page's line ("First Published in 1910") is told under no heading of
    its own, as before the first heading: long, it is the "Prologue"; under a section named as
    front matter (a dedication) it is left out, and the report says how many words."""
    preface = " ".join([_PROSE.format(who="Giles")] * 5)
    prefaces = "\n\n".join([preface] * 13)  # 2,145 words
    chapters = f"I.  LAYING PLANS\n\n{_numbered_paragraphs(3)}\n\n\nII.  WAGING WAR\n\n" + (
        _numbered_paragraphs(3)
    )
    book = chapters_from_blocks(
        blocks_from_text(f"First Published in 1910\n\n\n{prefaces}\n\n\n{chapters}\n")
    )
    assert [c.title for c in book.chapters] == ["Prologue", "I. LAYING PLANS", "II. WAGING WAR"]
    assert book.chapters[0].paragraphs == [preface] * 13
    assert book.dropped == []

    book = chapters_from_blocks(blocks_from_text(f"DEDICATION\n\n\n{preface}\n\n\n{chapters}\n"))
    assert [c.title for c in book.chapters] == ["I. LAYING PLANS", "II. WAGING WAR"]
    assert book.dropped == ["DEDICATION (front matter; 165 words)"]


def test_a_numbered_sentence_after_the_numbered_paragraph_before_it_is_no_heading() -> None:
    """The Art of War (132) numbers its paragraphs ("1.  Sun Tzu said: ..."); chapter VII ends
    with "36.  When you surround an army, leave an outlet free.", a long commentary, and
    "37.  Such is the art of warfare.": a number and a sentence standing alone, read as a
    heading over no prose and left out. The next of the numbered paragraphs is one of them."""
    commentary = " ".join([_PROSE.format(who="Tu Mu")] * 4)
    text = (
        f"I.  LAYING PLANS\n\n{_numbered_paragraphs(2)}\n\n"
        "     3.  When you surround an army, leave an outlet free.\n\n"
        f"[{commentary}]\n\n     4.  Such is the art of warfare.\n\n\n"
        f"II.  WAGING WAR\n\n{_numbered_paragraphs(3)}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["I. LAYING PLANS", "II. WAGING WAR"]
    assert book.chapters[0].paragraphs[-1] == "4.  Such is the art of warfare."
    assert book.dropped == []
