"""`terrarium import`: what ends a book that is no story (a transcriber's end notes and their
marks, a closing "FINIS"), a drop cap's mark, and parts and episodes numbered in decoration."""

from __future__ import annotations

from pathlib import Path

from terrarium_dagster.corpus.importers import read_book
from terrarium_dagster.corpus.importers.chapters import chapters_from_blocks
from terrarium_dagster.corpus.importers.plain_text import blocks_from_text

_PROSE = (
    "{who} walked the long road to the harbour at first light, counting the masts and the gulls, "
    "and wondering aloud whether the ship would wait for a passenger who had paid in promises."
)


def _story(book_chapters: list[list[str]]) -> str:
    return " ".join(p for paragraphs in book_chapters for p in paragraphs)


def test_a_transcribers_end_notes_and_their_marks_are_no_story(tmp_path: Path) -> None:
    """A Study in Scarlet's text editions (244-0.txt) end with "ORIGINAL TRANSCRIBER’S NOTES:",
    "[Footnote 1: ...]" to "[Footnote 29: ...]", which were 26 paragraphs of its last chapter,
    and mark them in the story in brackets set apart: "No. 221B, [5] Baker Street", "[19] the
    injured part" opening a line, "THE LAURISTON GARDEN MYSTERY [6]" in a chapter's title. The
    notes are kept aside as reference, as a book's "FOOTNOTES" are; the marks go, but not a
    number in brackets the book gives no note for. The HTML edition (244-h.htm) heads its notes
    alike, "29 (return) [ Heber C. Kemball, ... ]"."""
    prose = _PROSE.format(who="Holmes")
    text = (
        f"CHAPTER I. MR. SHERLOCK HOLMES.\n\n\n{prose}\n\n"
        "We inspected the rooms at No. 221B, [1] Baker Street, of which he had spoken, and\n"
        "she said, shoving\n[3] the injured part up to him, that the list was [7] long.\n\n\n"
        f"CHAPTER II. THE LAURISTON GARDEN MYSTERY [2]\n\n\n{prose}\n\n{prose}\n\n\n\n"
        "ORIGINAL TRANSCRIBER’S NOTES:\n\n\n"
        "[Footnote 1: “221B”: the B is in small caps]\n\n"
        "[Footnote 2: “THE LAURISTON GARDEN MYSTERY”: the table-of-contents lists this chapter\n"
        "as “...GARDENS MYSTERY”--plural, and probably more correct.]\n\n"
        "[Footnote 3: “shoving”: later editions have “showing”.]\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "CHAPTER I. MR. SHERLOCK HOLMES",
        "CHAPTER II. THE LAURISTON GARDEN MYSTERY",
    ]
    assert book.chapters[0].paragraphs[1] == (
        "We inspected the rooms at No. 221B, Baker Street, of which he had spoken, and she "
        "said, shoving the injured part up to him, that the list was [7] long."
    )
    assert book.chapters[-1].paragraphs == [prose, prose]
    assert "Footnote" not in _story([c.paragraphs for c in book.chapters])
    assert [r.title for r in book.reference] == ["ORIGINAL TRANSCRIBER’S NOTES:"]
    assert book.reference[0].paragraphs[0] == "[Footnote 1: “221B”: the B is in small caps]"

    source = tmp_path / "scarlet.htm"
    chapters = "".join(
        f"<h2>CHAPTER {n}.</h2><p>{prose}</p><p>{prose}</p>" for n in ["I", "II", "III"]
    )
    source.write_text(
        f"<html><body>{chapters}<h2>ORIGINAL TRANSCRIBER&rsquo;S NOTES:</h2>"
        '<p class="foot">29 (<a href="#linknoteref-29">return</a>)<br /> [ Heber C. Kemball, in'
        " one of his sermons, alludes to his hundred wives under this endearing epithet.]</p>"
        "</body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.chapters[-1].paragraphs == [prose, prose]
    assert [r.title for r in book.reference] == ["ORIGINAL TRANSCRIBER’S NOTES:"]


def test_notes_after_each_chapter_and_their_marks_are_no_story() -> None:
    """The Art of War's text edition (132.txt) sets each chapter's notes after its last
    section, "[1]  \"Words on Wellington,\" by Sir. W. Fraser.", and marks them in brackets set
    apart, often inside a commentary in brackets: 'what mine are?" [1] ]'. The notes were 14
    paragraphs of story (and sources in the glossary), their marks in 13 paragraphs. A note is
    a paragraph opening with a number in brackets that the text before it marks; it is kept
    aside as reference, and its marks go. A number in brackets that no note follows stays, and
    so does a paragraph opening with a number nothing marked."""
    prose = _PROSE.format(who="Sun Tzu")
    text = (
        f"I. LAYING PLANS\n\n\n{prose}\n\n"
        '     [Chang Yu says: how can you expect me to tell you what\nmine are?" [1] ]\n\n'
        "The list was [7] long, and the general[2] counted it twice.\n\n\n"
        '[1]  "Words on Wellington," by Sir. W. Fraser.\n\n'
        '[2]  "Forty-one Years in India,"\nchapter 46.\n\n'
        "-----------------------------------------------------------------\n\n"
        f"II. WAGING WAR\n\n\n{prose}\n\n"
        "[1] the year of the flood, as the annals tell it, the river rose.\n\n"
        f"Accordingly, he marched. [3]\n\n{prose}\n\n[3]  See Col. Henderson, op. cit.\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.paragraphs for chapter in book.chapters] == [
        [
            prose,
            '[Chang Yu says: how can you expect me to tell you what mine are?"]',
            "The list was [7] long, and the general counted it twice.",
        ],
        [
            prose,
            "[1] the year of the flood, as the annals tell it, the river rose.",
            "Accordingly, he marched.",
            prose,
        ],
    ]
    assert [(r.title, r.paragraphs) for r in book.reference] == [
        (
            "NOTES",
            [
                '[1]  "Words on Wellington," by Sir. W. Fraser.',
                '[2]  "Forty-one Years in India," chapter 46.',
                "[3]  See Col. Henderson, op. cit.",
            ],
        )
    ]


def test_a_drop_caps_mark_opening_a_chapter_is_no_text() -> None:
    """Anne of Green Gables' text editions (45-0.txt, 45.txt, 45-8.txt) mark each chapter's
    initial capital with a bar: "|MRS. Rachel Lynde lived just where ...", "|MATTHEW Cuthbert
    and the sorrel mare ...": 37 paragraphs opened with it. A table's row ("| Name | Age |")
    keeps its bars."""
    prose = _PROSE.format(who="Marilla")
    text = (
        f"CHAPTER I. Mrs. Rachel Lynde is Surprised\n\n\n|MRS. Rachel Lynde lived just where the"
        f" Avonlea main road\ndipped down into a little hollow.\n\n{prose}\n\n\n"
        f"CHAPTER II. Matthew Cuthbert is surprised\n\n\n|MATTHEW Cuthbert and the sorrel mare\n"
        f"jogged comfortably over the eight miles.\n\n| Name | Age |\n|------|-----|\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert chapters[0].paragraphs[0] == (
        "MRS. Rachel Lynde lived just where the Avonlea main road dipped down into a little hollow."
    )
    assert chapters[1].paragraphs[:2] == [
        "MATTHEW Cuthbert and the sorrel mare jogged comfortably over the eight miles.",
        "| Name | Age | |------|-----|",
    ]


def test_finis_after_the_last_paragraph_is_no_story(tmp_path: Path) -> None:
    """Emma ends "FINIS" in every edition (158-0.txt, 158-h.htm, book.asciidoc): the last
    paragraph of its last chapter, where "THE END" set apart is a heading that ends the story.
    The word inside the story, with more after it, stays (Tristram Shandy's "Finis." to Trim's
    sermon)."""
    prose = _PROSE.format(who="Emma")
    text = (
        f"CHAPTER I\n\n\n{prose}\n\nFinis.\n\n{prose}\n\n\n"
        f"CHAPTER II\n\n\n{prose}\n\n{prose}\n\n\n\n\nFINIS\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert chapters[0].paragraphs == [prose, "Finis.", prose]
    assert chapters[1].paragraphs == [prose, prose]

    source = tmp_path / "emma.htm"
    source.write_text(
        f"<html><body><h2>CHAPTER I</h2><p>{prose}</p><h2>CHAPTER II</h2><p>{prose}</p>"
        f"<h2>CHAPTER III</h2><p>{prose}</p><p>FINIS <br /> <br /></p></body></html>",
        encoding="utf-8",
    )
    assert read_book(source).chapters[-1].paragraphs == [prose]


def _episodes(prose: str, *, html: bool) -> str:
    """A book of three parts "— I —" to "— III —" and episodes "[ 1 ]" to "[ 12 ]", the seventh
    opening with a headline (under it in HTML, an <h3> as the other headlines are), "I." and "M"
    alone on their lines inside the first."""
    if html:
        head = "<h2>{}</h2>".format
        headline, line = "<h3>{}</h3>".format, "<p>{}</p>".format
    else:
        head = headline = line = "\n\n\n{}\n\n".format
    parts = {1: "— I —", 4: "— II —", 10: "— III —"}
    text = ""
    for number in range(1, 13):
        text += head(parts[number]) if number in parts else ""
        text += head(f"[ {number} ]")
        if number == 7:
            text += headline("IN THE HEART OF THE HIBERNIAN METROPOLIS") + line(prose)
            text += headline("THE WEARER OF THE CROWN")
        text += line(prose) + line(prose)
        if number == 1:
            text += line("I.") + line(prose) + line("M") + line(prose)
        text += line(" ".join([prose] * 20))  # an episode is longer than a page
    return f"<html><body>{text}</body></html>" if html else text


def test_parts_and_episodes_numbered_in_decoration_are_the_chapters(tmp_path: Path) -> None:
    """Ulysses (4300-0.txt) sets its three parts "— I —" to "— III —" and its eighteen episodes
    "[ 1 ]" to "[ 18 ]" alone on their lines: read as no heading, its chapters were "Prologue"
    and two lines of the story alone, Milly's letter signed "M" and the "I." Bloom writes in the
    sand. Its HTML (4300-h.htm) had 69 chapters: the Aeolus episode's newspaper headlines were
    chapters, and its first one the episode's title. Each episode is a chapter, titled by its
    number after its part's over the first ("I: 1", "2", "II: 4"), as a part's heading over a
    chapter's is; the headlines are lines of their episode, the first too where every other
    number stands alone. A page's number set so ("- 12 -", a page apart) heads nothing."""
    titles = ["I: 1", "2", "3", "II: 4", "5", "6", "7", "8", "9", "III: 10", "11", "12"]
    prose = _PROSE.format(who="Bloom")
    chapters = chapters_from_blocks(blocks_from_text(_episodes(prose, html=False))).chapters
    assert [c.title for c in chapters] == titles
    page = " ".join([prose] * 20)
    assert chapters[0].paragraphs == [prose, prose, "I.", prose, "M", prose, page]
    assert chapters[6].paragraphs == [
        "IN THE HEART OF THE HIBERNIAN METROPOLIS", prose, "THE WEARER OF THE CROWN", prose, prose,
        page,
    ]  # fmt: skip

    paged = "".join(f"{prose}\n\n{prose}\n\n- {n} -\n\n" for n in range(1, 6))
    paged_book = chapters_from_blocks(blocks_from_text(f"CHAPTER I\n\n{paged}"))
    assert [c.title for c in paged_book.chapters] == ["CHAPTER I"]

    source = tmp_path / "ulysses.htm"
    source.write_text(_episodes(prose, html=True), encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == titles
    assert book.chapters[6].paragraphs == chapters[6].paragraphs


def test_a_pictures_enlarge_link_standing_alone_is_no_text() -> None:
    """Les Misérables' 135-0.txt keeps its HTML edition's label of each picture's link to its
    larger image, "Enlarge", on a line of its own: 21 paragraphs of its chapters. The word in a
    sentence stays."""
    prose = _PROSE.format(who="Valjean")
    text = (
        f"CHAPTER I\n\n\n{prose}\n\nEnlarge\n\n\n{prose}\n\n\nCHAPTER II\n\n\nEnlarge\n\n"
        f"{prose}\n\nThey would enlarge the garden.\nEnlarge\nit they did.\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert chapters[0].paragraphs == [prose, prose]
    assert chapters[1].paragraphs == [
        prose, "They would enlarge the garden. Enlarge it they did."
    ]  # fmt: skip


def test_the_end_line_set_in_stars_and_a_braced_mark_on_a_title_are_no_story() -> None:
    """A Study in Scarlet's 1990s edition (study10.txt) ends "***********  End Of Project
    Gutenberg Etext study10.txt *************", which was its last chapter's last paragraph, and
    marks a chapter's title "THE LAURISTON GARDEN MYSTERY {6}"."""
    prose = _PROSE.format(who="Watson")
    text = (
        f"CHAPTER I.\n\nMR. SHERLOCK HOLMES.\n\n{prose}\n\nCHAPTER II.\n\n"
        f"THE LAURISTON GARDEN MYSTERY {{6}}\n\n{prose}\n\n\n"
        "***********  End Of Project Gutenberg Etext study10.txt *************\n\n\n"
        "Some later text of the archive's own.\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "CHAPTER I: MR. SHERLOCK HOLMES", "CHAPTER II: THE LAURISTON GARDEN MYSTERY"
    ]  # fmt: skip
    assert chapters[-1].paragraphs == [prose]


def test_an_html_editions_link_to_a_note_left_in_a_plain_text_is_no_text() -> None:
    """Les Misérables' 135-0.txt keeps 25 of its HTML edition's links to its notes, tags and
    all, after the verse they annotate, split over two lines: 'Comme la nuit se fait lorsque le
    jour s'en va.<a href="#linknote-70"' over 'name="linknoteref-70" id="linknoteref-70">70</a>'."""
    prose = _PROSE.format(who="Marius")
    verse = (
        "     Il dort. Quoique le sort fût pour lui bien étrange,\n"
        "     Il vivait. Il mourut quand il n'eut plus son ange.\n"
        "     La chose simplement d'elle-même arriva,\n"
        '     Comme la nuit se fait lorsque le jour s\'en va.<a href="#linknote-70"\n'
        'name="linknoteref-70" id="linknoteref-70">70</a>'
    )
    text = (
        f'CHAPTER I\n\n{prose}\n\n{verse}\n\nShe sang it, "J\'aime mieux ma mère!"'
        '<a href="#linknote-25" name="linknoteref-25"\nid="linknoteref-25">25</a> and wept.\n\n'
        f"CHAPTER II\n\n{prose}\n\n{prose}\n"
    )
    paragraphs = chapters_from_blocks(blocks_from_text(text)).chapters[0].paragraphs
    assert "<a" not in " ".join(paragraphs) and "70" not in " ".join(paragraphs)
    assert paragraphs[1].endswith("Comme la nuit se fait lorsque le jour s'en va.")
    assert paragraphs[2] == 'She sang it, "J\'aime mieux ma mère!" and wept.'
