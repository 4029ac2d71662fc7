"""`terrarium import` on shapes of books first met in the sweep of December 2026: a verse epic
whose pictures are captioned twice (The Iliad), a collection of tales one of which is told in
numbered parts (Andersen's Fairy Tales), a play whose contents page lists each act's scenes in a
wrapped paragraph (Hamlet), an HTML heading wrapped by a line break (The Arabian Nights)."""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
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


def test_a_collection_with_one_tale_told_in_numbered_parts_keeps_its_other_tales(
    tmp_path: Path,
) -> None:
    """Andersen's Fairy Tales (1597-0.txt) lists eighteen tales; one of them, "THE SHOES OF
    FORTUNE", is told in parts "I. A Beginning" to "VI. The Best That the Galoshes Gave". The
    book was read as one whose chapters are numbered, three tales before them being fewer than
    six numbers: the fourteen tales after the last part ran together as its text, their titles
    lines of it. A tale told in numbered parts is one chapter, its parts' headings lines of it,
    as Grimms' "THE ADVENTURES OF CHANTICLEER AND PARTLET" ("1. HOW THEY WENT ...") is."""
    tales = ["The Emperor's New Clothes", "The Swineherd", "The Shoes of Fortune"]
    after = ["The Fir Tree", "The Snow Queen", "The Bell", "The Old House", "The Red Shoes"]
    parts = ["A Beginning", "The Councillor", "The Watchman", "The Copying-Clerk"]
    numbers = ["I", "II", "III", "IV"]

    def tale(title: str) -> str:
        return f"{title.upper()}\n\n{_PROSE.format(who=title)}\n\n\n\n"

    text = (
        "CONTENTS\n\n\n"
        + "".join(f"     {title}\n" for title in tales + after)
        + "\n\n\n\n"
        + tale(tales[0])
        + tale(tales[1])
        + "THE SHOES OF FORTUNE\n\n"
        + "".join(
            f"{number}. {part}\n\n{_PROSE.format(who=part)}\n\n\n"
            for number, part in zip(numbers, parts, strict=True)
        )
        + "\n"
        + "".join(tale(title) for title in after)
    )
    chapters = _chapters(imported_book(tmp_path, text))
    assert [title for title, _ in chapters] == [t.upper() for t in tales + after]
    assert chapters[2][1] == [
        line
        for number, part in zip(numbers, parts, strict=True)
        for line in (f"{number}. {part}", _PROSE.format(who=part))
    ]
    assert [paragraphs for _, paragraphs in chapters[3:]] == [
        [_PROSE.format(who=title)] for title in after
    ]


def test_a_numbered_title_that_stops_short_wraps_onto_the_line_under_it(tmp_path: Path) -> None:
    """Andersen's Fairy Tales sets "IV. A Moment of Head Importance--An Evening's “Dramatic
    Readings”--A" over "Most Strange Journey": the second line was a paragraph of its own. A
    numbered title whose line ends on a small word ("A", "and", "the"), a comma or a dash goes on
    on the line right under it."""
    text = "".join(
        f"{number}. {title}\n{under}\n\n{_PROSE.format(who=number)}\n\n\n"
        for number, title, under in [
            ("I", "A Beginning", ""),
            ("II", "What Happened to the Councillor and", "the Watchman"),
            ("III", "An Evening's “Dramatic Readings”--A", "Most Strange Journey"),
            ("IV", "The Best That the Galoshes Gave to the", "Copying-Clerk"),
        ]
    ).replace("\n\n\n\n", "\n\n\n")
    chapters = _chapters(imported_book(tmp_path, text))
    assert [title for title, _ in chapters] == [
        "I. A Beginning",
        "II. What Happened to the Councillor and the Watchman",
        "III. An Evening's “Dramatic Readings”--A Most Strange Journey",
        "IV. The Best That the Galoshes Gave to the Copying-Clerk",
    ]
    assert [paragraphs for _, paragraphs in chapters] == [
        [_PROSE.format(who=number)] for number in ["I", "II", "III", "IV"]
    ]


def test_a_plays_contents_listing_each_acts_scenes_heads_no_act(tmp_path: Path) -> None:
    """Hamlet's 1524-0.txt lists each act's scenes in a paragraph under "Contents" ("ACT III
    Scene I. A room in the Castle. Scene II. A hall in the Castle." over the rest): the entries
    read as acts' headings, the first play's chapter was "ACT III Scene I. ... Scene IV. ..."
    holding the fourth act's entry, and the cast was kept as "ACT V Scene I. A churchyard. Scene
    II. A hall in the Castle: Dramatis Personæ". A line naming two scenes with their titles is a
    listing: the contents page is left out whole, the cast kept aside under its own name, and
    the acts are the play's chapters, a speech a paragraph with its speaker."""
    speech = "HAMLET. " + _PROSE.format(who="Horatio")
    reply = "OPHELIA. Good my lord, how does your honour for this many a day? I pray you, now."
    text = (
        "THE TRAGEDY OF HAMLET, PRINCE OF DENMARK\n\n\nby William Shakespeare\n\n\n\n"
        "Contents\n\n"
        "ACT I Scene I. Elsinore. A platform before the Castle. Scene II.\n"
        "Elsinore. A room of state in the Castle Scene III. A room in Polonius’s\n"
        "house.\n\n"
        "ACT II Scene I. A room in Polonius’s house. Scene II. A room in the\nCastle.\n\n"
        "ACT III Scene I. A room in the Castle. Scene II. A hall in the Castle.\n"
        "Scene III. A room in the Castle. Scene IV. Another room in the Castle.\n\n"
        "ACT IV Scene I. A churchyard. Scene II. A hall in the Castle.\n\n\n\n"
        " Dramatis Personæ\n\n"
        "HAMLET, Prince of Denmark. CLAUDIUS, King of Denmark, Hamlet’s uncle.\n\n\n\n"
        + "".join(
            f"ACT {act}\n\nSCENE I. A room in the Castle.\n\n Enter Hamlet.\n\n"
            + f"{speech[:60]}\n{speech[60:]} {act}.\n\n{reply}\n\n" * 3
            + "\n"
            for act in ["I", "II", "III", "IV"]
        )
    )
    corpus = imported_book(tmp_path, text)
    chapters = _chapters(corpus)
    assert [title for title, _ in chapters] == ["ACT I", "ACT II", "ACT III", "ACT IV"]
    assert chapters[2][1] == [
        "SCENE I. A room in the Castle.",
        "Enter Hamlet.",
        *[f"{speech} III.", reply] * 3,
    ]
    reference = corpus.with_name(corpus.name + ".reference.md").read_text(encoding="utf-8")
    assert "## Dramatis Personæ\n" in reference and "Scene" not in reference


def test_an_html_heading_wrapped_by_a_line_break_is_one_title(tmp_path: Path) -> None:
    """The Arabian Nights' 128-h.htm heads a story "<H3>The Story of the Three Calenders, Sons of
    Kings,<BR>and of Five Ladies of Bagdad</H3>": its two lines were two headings, the chapter
    titled "The Story of the Three Calenders, Sons of Kings,: and of Five Ladies of Bagdad". A
    line that stops short (a comma, a small word) or a line opening in lower case goes on the
    line before; a number over its title ("CHAPTER II<br/>THE VOYAGE") is still two."""
    prose = "".join(f"<p>{_PROSE.format(who=who)}</p>" for who in ["Sindbad", "Zobeida"])
    source = tmp_path / "nights.htm"
    source.write_text(
        "<html><body>"
        f"<h3>The Story of the Fisherman</h3>{prose}"
        "<h3>The Story of the Three Calenders, Sons of Kings,<br>and of Five Ladies of\n"
        f"Bagdad</h3>{prose}"
        f"<h3>The Story of the Barber's Fifth Brother and the<br/>Glass Merchant</h3>{prose}"
        f"<h3>The Seven Voyages of Sindbad<br>the Sailor</h3>{prose}"
        f"<h3>CHAPTER II<br/>THE VOYAGE</h3>{prose}"
        "</body></html>",
        encoding="utf-8",
    )
    corpus = tmp_path / "nights.db"
    assert main(["import", str(source), "--out", str(corpus)]) == 0
    assert [title for title, _ in _chapters(corpus)] == [
        "The Story of the Fisherman",
        "The Story of the Three Calenders, Sons of Kings, and of Five Ladies of Bagdad",
        "The Story of the Barber's Fifth Brother and the Glass Merchant",
        "The Seven Voyages of Sindbad the Sailor",
        "CHAPTER II: THE VOYAGE",
    ]


def test_a_chapter_over_the_books_title_keeps_its_division(tmp_path: Path) -> None:
    """Don Quixote's 996.txt sets the book's title, "DON QUIXOTE", under the first volume's last
    chapter, over "Volume II.": the title is no paragraph of that chapter, and taking it out
    lost the chapter's division, "CHAPTER LII" standing alone among "VOLUME I: CHAPTER LI" and
    "VOLUME II: CHAPTER LII". The chapter keeps its division."""
    header = "Title: Don Quixote\n\n*** START OF THIS PROJECT GUTENBERG EBOOK DON QUIXOTE ***\n\n"
    text = header + "".join(
        f"VOLUME {volume}.\n\n\n"
        + "".join(
            f"CHAPTER {number}.\n\n{_PROSE.format(who=f'Sancho {volume}-{number}')}\n\n\n"
            for number in ["I", "II"]
        )
        + ("DON QUIXOTE\n\n\n" if volume == "I" else "")
        for volume in ["I", "II"]
    )
    chapters = _chapters(imported_book(tmp_path, text))
    assert [title for title, _ in chapters] == [
        "VOLUME I: CHAPTER I",
        "VOLUME I: CHAPTER II",
        "VOLUME II: CHAPTER I",
        "VOLUME II: CHAPTER II",
    ]
    assert chapters[1][1] == [_PROSE.format(who="Sancho I-II")]


def test_a_plays_first_scene_headed_under_its_act_opens_the_act(tmp_path: Path) -> None:
    """Hamlet's 1524-h.htm heads each act "<h3>ACT I</h3>" over "<h4>SCENE I. Elsinore. A
    platform before the Castle.</h4>": the two made one title, "ACT I: SCENE I. Elsinore. A
    platform before the Castle.", and the first scene's setting was no line of the act, while
    its other scenes' headings were (and the plain text sets them all as lines). The first
    scene's heading is the act's first line: the HTML and the text editions now import alike."""
    speeches = "".join(
        f"<p>{who}. {_PROSE.format(who='Horatio')}</p>" for who in ["HAMLET", "OPHELIA"] * 3
    )
    acts = "".join(
        f"<h3>ACT {act}</h3><h4>SCENE I. A room in the Castle.</h4><p>Enter Hamlet.</p>"
        f"{speeches}<h4>SCENE II. A hall in the Castle.</h4>{speeches}"
        for act in ["I", "II", "III", "IV"]
    )
    source = tmp_path / "hamlet.htm"
    source.write_text(f"<html><body>{acts}</body></html>", encoding="utf-8")
    corpus = tmp_path / "hamlet.db"
    assert main(["import", str(source), "--out", str(corpus)]) == 0
    chapters = _chapters(corpus)
    assert [title for title, _ in chapters] == ["ACT I", "ACT II", "ACT III", "ACT IV"]
    spoken = [f"{who}. {_PROSE.format(who='Horatio')}" for who in ["HAMLET", "OPHELIA"] * 3]
    assert chapters[0][1] == [
        "SCENE I. A room in the Castle.",
        "Enter Hamlet.",
        *spoken,
        "SCENE II. A hall in the Castle.",
        *spoken,
    ]


def _numbered_chapters(numbers: list[str], titles: list[str], who: str) -> str:
    """Chapters "CHAPTER I." and so on, each under its title, with prose naming `who`."""
    return "".join(
        f"CHAPTER {n}.\n{title}\n\n{_PROSE.format(who=f'{who} {n}')}\n\n\n\n"
        for n, title in zip(numbers, titles, strict=True)
    )


def _left_out(source: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the dry run of importing `source` says it left out, each as the report says it."""
    capsys.readouterr()
    assert main(["import", str(source), "--out", str(source.with_suffix(".db")), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return [line.strip().removeprefix("left out: ") for line in lines if "left out: " in line]


_GUTENBERG = "Title: {title}\n\n*** START OF THIS PROJECT GUTENBERG EBOOK {title} ***\n\n\n"


def test_a_contents_page_parted_by_blank_lines_is_one_contents_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Les Misérables' 135-0.txt sets three blank lines between its volumes' listings on its
    contents page: each volume's name read as a heading, and a wrapped listing's line too, and
    the report said 13 sections "(no prose)" named after the listing's lines ("VOLUME
    II.--COSETTE", "BOOK SIXTH.--JAVERT CHAPTER I--THE BEGINNING OF REPOSE ..."). The listing
    is the contents page's, one "Contents" left out; a heading after it over prose is a
    chapter, and a title page under a heading of its own after it is said as it is."""
    chapters = "".join(f"  CHAPTER {n}--THE {n} HOURS\n" for n in ["I", "II", "III", "IV"])
    listing = (
        "Contents\n\n\n\nLES MISÉRABLES\n\nVOLUME I.--FANTINE.\n\nPREFACE\n\n"
        f"  BOOK FIRST--A JUST MAN\n{chapters}\n  BOOK SECOND--THE FALL\n{chapters}\n"
        "  BOOK SIXTH.--JAVERT\n  CHAPTER I--THE BEGINNING OF REPOSE\n"
        "  CHAPTER II--HOW JEAN MAY BECOME CHAMP\n\n"
        f"  BOOK SEVENTH.--THE CHAMPMATHIEU AFFAIR\n{chapters}\n\n\n"
        f"  VOLUME II.--COSETTE\n\n  BOOK FIRST.--WATERLOO\n{chapters}\n\n\n"
    )
    story = "".join(
        f"VOLUME {volume}.--{name}.\n\n\n\nBOOK FIRST--A JUST MAN\n\n\n\n"
        + "".join(
            f"CHAPTER {number}--{title}\n\n{_PROSE.format(who=title.title())}\n\n\n\n"
            for number, title in [("I", "M. MYRIEL"), ("II", "M. WELCOME")]
        )
        for volume, name in [("I", "FANTINE"), ("II", "COSETTE")]
    )
    source = tmp_path / "miserables.txt"
    source.write_text(_GUTENBERG.format(title="LES MISÉRABLES") + listing + story, "utf-8")
    assert _left_out(source, capsys) == ["Contents (contents)"]
    assert len(_chapters(imported_book(tmp_path, source.read_text("utf-8")))) == 4

    # an epigraph's page under a heading of its own after the contents page is no listing
    epigraph = "PART ONE\n\n\n\nSo long as there shall exist ignorance and misery.\n\n\n\n"
    source.write_text(_GUTENBERG.format(title="X") + listing + epigraph + story, "utf-8")
    assert _left_out(source, capsys) == ["Contents (contents)", "PART ONE (no prose)"]


def test_a_contents_page_is_named_by_its_heading_and_always_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Don Quixote's 996.txt sets a contents page before each volume. The second, "CONTENTS"
    over "Part II." and its chapters' numbers and titles, was said as "CHAPTER LXXIV: OF HOW DON
    QUIXOTE FELL SICK, ... (contents)", the last line it lists; the first, whose listing runs
    into the preface's heading, was left out unsaid; and the second volume's title page
    ("Volume II." and "Complete" over its bylines) was "Volume II: Complete (no prose)"."""
    numbers = ["I", "II", "III", "IV", "V", "VI"]
    titles = [f"OF WHAT BEFELL DON QUIXOTE ON THE {n} DAY" for n in numbers]

    def contents(part: str) -> str:
        listed = "".join(
            f"CHAPTER {n}\n{title}\n\n" for n, title in zip(numbers, titles, strict=True)
        )
        return f"CONTENTS\n\n{part}\n\n\n{listed}\n\n\n"

    text = (
        _GUTENBERG.format(title="DON QUIXOTE")
        + "DON QUIXOTE\n\nComplete\n\nby Miguel de Cervantes [Saavedra]\n\n\n"
        + contents("Volume I")
        + "TRANSLATOR'S PREFACE\n\nI: ABOUT THIS TRANSLATION\n\n"
        + f"{_PROSE.format(who='Ormsby')}\n\n\n"
        + "VOLUME I.\n\n\n"
        + _numbered_chapters(numbers, titles, "Sancho")
        + "END OF PART I.\n\n\n\n"
        + "DON QUIXOTE\n\nVolume II.\n\nComplete\n\nby Miguel de Cervantes\n\n\n"
        + "Translated by John Ormsby\n\n\n\n\n"
        + contents("Part II.")
        + "DON QUIXOTE\n\n\nPART II.\n\n\n"
        + _numbered_chapters(numbers, titles, "Teresa")
    )
    source = tmp_path / "quixote.txt"
    source.write_text(text, "utf-8")
    assert _left_out(source, capsys) == [
        "CONTENTS (contents)",
        "Volume II: Complete (title page)",
        "CONTENTS (contents)",
        "“END OF PART I.” (a line closing a chapter)",
    ]


def test_a_pictures_link_after_a_bracketed_line_and_a_mark_after_parentheses_go(
    tmp_path: Path,
) -> None:
    """Les Misérables' 135-0.txt ends its first volume '[THE END OF VOLUME I. "FANTINE"]
    Enlarge', the HTML edition's link to a picture set on the same line, and marks a note
    after a question in parentheses, "(Why Romainville?)5": both were kept as the story's
    words. The link and the mark go; "Enlarge" in a sentence and a number that is one stay."""
    prose = _PROSE.format(who="Fantine")
    text = (
        f"CHAPTER I\n\n{prose}\n\n"
        '"I entered a village. I reflected that it must be Romainville. (Why Romainville?)5\n'
        'Romainville was near, and I said (what else?) 3 words."\n\n'
        "Enlarge\n\n"
        f"{prose}\n\n"
        '[THE END OF VOLUME I. "FANTINE"] Enlarge\n\n\n\n'
        f"CHAPTER II\n\n{prose} They would Enlarge\nthe house.\n"
    )
    chapters = _chapters(imported_book(tmp_path, text))
    assert chapters == [
        (
            "CHAPTER I",
            [
                prose,
                '"I entered a village. I reflected that it must be Romainville. (Why '
                'Romainville?) Romainville was near, and I said (what else?) 3 words."',
                prose,
                '[THE END OF VOLUME I. "FANTINE"]',
            ],
        ),
        ("CHAPTER II", [f"{prose} They would Enlarge the house."]),
    ]


def test_a_titles_closing_stop_goes_as_a_headings_does(tmp_path: Path) -> None:
    """The Iliad's 6130-0.txt heads each book "BOOK I." over its argument's label and its
    title, "THE CONTENTION OF ACHILLES AND AGAMEMNON.": the number's stop went, as a heading
    line's does, and a title's on the number's line ("CHAPTER 1. Loomings."), but the title's
    under it stayed ("BOOK I: THE CONTENTION OF ACHILLES AND AGAMEMNON."), in its HTML too. A
    title's closing stop goes; an abbreviation's ("AND CO.") and an ellipsis stay."""
    prose = _PROSE.format(who="Achilles")
    text = (
        f"INTRODUCTION.\n\n\n{prose}\n\n\n\n"
        "BOOK I.\n\n\nARGUMENT.(40)\n\nTHE CONTENTION OF ACHILLES AND AGAMEMNON.\n\n"
        f"{prose}\n\n\n\nBOOK II.\n\n\nTHE MERCHANT AND CO.\n\n{prose}\n\n\n\n"
        f"BOOK III.\n\n\nTHE SHIPS WAIT...\n\n{prose}\n\n\n\n"
        f"BOOK IV.\n\nTHE DUEL OF MENELAUS\nAND PARIS.\n\n{prose}\n"
    )
    expected = [
        "INTRODUCTION",
        "BOOK I: THE CONTENTION OF ACHILLES AND AGAMEMNON",
        "BOOK II: THE MERCHANT AND CO.",
        "BOOK III: THE SHIPS WAIT...",
        "BOOK IV: THE DUEL OF MENELAUS AND PARIS",
    ]
    assert [title for title, _ in _chapters(imported_book(tmp_path, text))] == expected

    # the HTML edition's headings read alike ("<h2>INTRODUCTION.</h2>" kept its stop too)
    html = "".join(
        f"<h2>{heading}</h2><p>{prose}</p>"
        for heading in [
            "INTRODUCTION.",
            "BOOK I.<br/>THE CONTENTION OF ACHILLES AND AGAMEMNON.",
            "BOOK II.<br/>THE MERCHANT AND CO.",
            "BOOK III.<br/>THE SHIPS WAIT...",
            "BOOK IV.<br/>THE DUEL OF MENELAUS AND PARIS.",
        ]
    )
    source, corpus = tmp_path / "iliad.html", tmp_path / "iliad.db"
    source.write_text(f"<html><body>{html}</body></html>", encoding="utf-8")
    assert main(["import", str(source), "--out", str(corpus)]) == 0
    assert [title for title, _ in _chapters(corpus)] == expected


def _ebookmaker_epub(path: Path, body: str, navigation: list[tuple[str, str]]) -> None:
    """An EPUB 2 laid out as Project Gutenberg's ebookmaker makes one: a cover page, the book's
    `body` in one XHTML file named after the HTML it was split from, a toc.ncx whose entries
    (label, element id) point into it."""
    document = "@public@vhost@g@gutenberg@html@files@1@1-h@1-h-0.htm.html"
    page = (
        '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN"'
        ' "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n<html xmlns="http://www.w3.org/1999/'
        'xhtml" xml:lang="en"><head><title>The Book</title></head>'
        f'<body class="x-ebookmaker">{body}</body></html>'
    )
    cover = (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        '<head><title>Cover</title></head><body><div class="x-ebookmaker-cover">'
        '<img alt="The Book" src="images/cover.jpg"/></div></body></html>'
    )
    points = "".join(
        f'<navPoint id="np-{n}" playOrder="{n}"><navLabel><text>{label}</text></navLabel>'
        f'<content src="{document}#{anchor}"/></navPoint>'
        for n, (label, anchor) in enumerate(navigation, 1)
    )
    ncx = (
        '<?xml version="1.0" encoding="utf-8"?>\n<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/"'
        ' version="2005-1"><head><meta name="dtb:uid" content="urn:1"/></head><docTitle><text>'
        f"The Book</text></docTitle><navMap>{points}</navMap></ncx>"
    )
    opf = (
        '<?xml version="1.0" encoding="utf-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" '
        'version="2.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"'
        '><dc:identifier id="id">urn:1</dc:identifier><dc:title>The Book</dc:title><dc:language>'
        'en</dc:language></metadata><manifest><item id="cover" href="wrap0000.html" media-type='
        f'"application/xhtml+xml"/><item id="item1" href="{document}" media-type="application/'
        'xhtml+xml"/><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        '</manifest><spine toc="ncx"><itemref idref="cover"/><itemref idref="item1"/></spine>'
        "</package>"
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:'
        'xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type='
        '"application/oebps-package+xml"/></rootfiles></container>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        for name, content in [
            ("content.opf", opf),
            ("toc.ncx", ncx),
            ("wrap0000.html", cover),
            (document, page),
        ]:
            archive.writestr(f"OEBPS/{name}", content)


def test_an_epubs_navigation_to_a_chapters_division_names_it_once(tmp_path: Path) -> None:
    """An EPUB 2 made by ebookmaker from A Tale of Two Cities' HTML splits it at each
    `<div class="chapter">`, and its toc.ncx points at the division's `pgepubid` id, not at the
    `<h2>` inside it: the entry's label, set as a heading, and the heading made every chapter
    "Book the First—Recalled to Life: I. The Period: I. The Period", and Ontboezemingen's
    "OM DEN ZUID[11].: OM DEN ZUID" (the label keeps the note's mark). A label the division's
    own heading says is that heading: the EPUB reads as the HTML it was made from."""
    prose = "".join(f"<p>{_PROSE.format(who=who)}</p>" for who in ["Lorry", "Manette"])
    note = '<a id="FNanchor_1"/><a href="#Footnote_1" class="fnanchor">[1]</a>'
    books = [("the First", "Recalled to Life"), ("the Second", "the Golden Thread")]
    chapters = [("I", "The Period"), ("II", "The Mail")]
    navigation = []
    body = ""
    for book, name in books:
        navigation.append((f"Book {book}—{name}", f"book-{len(navigation)}"))
        body += f'<div class="chapter" id="{navigation[-1][1]}"><h2>Book {book}—{name}</h2></div>'
        for number, title in chapters:
            navigation.append((f"{number}. {title}", f"pgepubid{len(navigation):05d}"))
            body += (
                f'<div class="chapter" id="{navigation[-1][1]}"><h2>{number}. {title}</h2>'
                f"{prose}</div>"
            )
    body += f'<div class="chapter" id="zuid"><h2>OM DEN ZUID{note}.</h2>{prose}</div>'
    navigation.append(("OM DEN ZUID[1].", "zuid"))
    source = tmp_path / "cities.epub"
    _ebookmaker_epub(source, body, navigation)
    corpus = tmp_path / "cities.db"
    assert main(["import", str(source), "--out", str(corpus)]) == 0
    chapters = _chapters(corpus)
    assert [title for title, _ in chapters] == [
        "Book the First—Recalled to Life: I. The Period",
        "Book the First—Recalled to Life: II. The Mail",
        "Book the Second—the Golden Thread: I. The Period",
        "Book the Second—the Golden Thread: II. The Mail",
    ]
    # a titled piece inside the last chapter (a poem's title, in a book of numbered chapters)
    # is one line of it, without its note's mark
    assert chapters[-1][1][2] == "OM DEN ZUID."
    assert len(chapters[-1][1]) == 5

    # the HTML it was made from reads alike
    html, from_html = tmp_path / "cities.html", tmp_path / "cities-html.db"
    html.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    assert main(["import", str(html), "--out", str(from_html)]) == 0
    assert [title for title, _ in _chapters(from_html)][:3] == [title for title, _ in chapters[:3]]


def test_a_division_listed_on_a_contents_page_names_no_chapter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contents page set as headings ("CONTENTS" over "Volume I" and six chapters' numbers
    and titles) running into a named section ("TRANSLATOR'S PREFACE"), in a book whose
    chapters' titles come again in its second part: the listing's "Volume I" and its lines up
    to "CHAPTER V" had become the division of every chapter after it, the preface and each
    chapter titled "Volume I: CHAPTER I: ...: CHAPTER V: ...: CHAPTER II: ...". A division
    listed over chapters is a line of the listing; the second part's heading names its own."""
    numbers = ["I", "II", "III", "IV"]
    titles = [f"OF WHAT BEFELL DON QUIXOTE ON THE {n} DAY" for n in numbers]
    listed = "".join(f"CHAPTER {n}\n{title}\n\n" for n, title in zip(numbers, titles, strict=True))

    text = (
        _GUTENBERG.format(title="DON QUIXOTE")
        + "DON QUIXOTE\n\nComplete\n\n\n"
        + f"CONTENTS\n\nVolume I\n\n\n{listed}\n\n\n"
        + f"TRANSLATOR'S PREFACE\n\n{_PROSE.format(who='Ormsby')}\n\n\n\n"
        + _numbered_chapters(numbers, titles, "Sancho")
        + "PART II.\n\n\n"
        + _numbered_chapters(numbers, titles, "Teresa")
    )
    source = tmp_path / "quixote.txt"
    source.write_text(text, "utf-8")
    assert _left_out(source, capsys) == ["CONTENTS (contents)"]
    chapters_read = _chapters(imported_book(tmp_path, text))
    assert [title for title, _ in chapters_read] == [
        "TRANSLATOR'S PREFACE",
        *(f"CHAPTER {n}: {title}" for n, title in zip(numbers, titles, strict=True)),
        *(f"PART II: CHAPTER {n}: {title}" for n, title in zip(numbers, titles, strict=True)),
    ]
    assert chapters_read[1][1] == [_PROSE.format(who="Sancho I")]


def test_a_notes_mark_set_apart_after_the_word_it_explains_goes(tmp_path: Path) -> None:
    """Les Misérables' 135-0.txt sets one note's mark apart, after a space: "to write to Liège 2
    for corks", its note at the book's end "2 (return) [ Liège: a cork-tree. ...]". The mark was
    kept as a word of the story. It goes where the note it numbers opens with the word before
    it; the same number after any other word is the story's own ("he was 2 years old")."""
    opening = _PROSE.format(who="Tholomyès")
    text = (
        _GUTENBERG.format(title="LES MISERABLES")
        + f"CHAPTER I\n\n{opening}\n\n"
        + "It would be a mistake to write to Liège 2 for corks, and to Pau for gloves. He was\n"
        + "2 years in Liège, and came back at 2 in the morning.\n\n\n"
        + f'CHAPTER II\n\n{opening}\n\nShe had a cat,_"Tso-maraude."_1 Then she went.\n\n\n'
        + "FOOTNOTES: 1 (return) [ Patois of the French Alps: _chat de maraude_,\n"
        + "rascally marauder.]\n\n\n"
        + "2 (return) [ Liège: a cork-tree. Pau: a jest on _peau_, skin.]\n"
    )
    chapters = _chapters(imported_book(tmp_path, text))
    assert [title for title, _ in chapters][:2] == ["CHAPTER I", "CHAPTER II"]
    assert chapters[0][1][1] == (
        "It would be a mistake to write to Liège for corks, and to Pau for gloves. He was "
        "2 years in Liège, and came back at 2 in the morning."
    )


def test_a_signature_run_into_the_paragraph_it_signs_is_a_paragraph_of_its_own(
    tmp_path: Path,
) -> None:
    """Candide's 19942.txt wraps its introduction's signature into the introduction's last
    paragraph ("... the pen runs and laughs. PHILIP" / "LITTELL."), which its HTML sets as a
    paragraph of its own: the plain text had one paragraph fewer (719 to 720). The name the
    title page credits ("INTRODUCTION BY PHILIP LITTELL"), closing the last paragraph before a
    heading, is set apart; a name nothing credits stays the sentence it is."""
    prose = _PROSE.format(who="Voltaire")
    text = (
        _GUTENBERG.format(title="CANDIDE")
        + "CANDIDE\n\nBY VOLTAIRE\n\nINTRODUCTION BY PHILIP LITTELL\n\n"
        + "BONI AND LIVERIGHT, INC.\n\n\n\n\nINTRODUCTION\n\n\n"
        + f"{prose}\n\n"
        + "That is why the present is one of the right moments to republish it. In\n"
        + "Voltaire's fingers, as Anatole France has said, the pen runs and laughs. PHILIP\n"
        + "LITTELL.\n\n\n\n"
        + "".join(
            f"{number}\n\n{_PROSE.format(who=who)}\n\nSo said the old woman to {who}. MARTIN.\n\n\n"
            for number, who in [("I", "Candide"), ("II", "Pangloss"), ("III", "Cunegonde")]
        )
    )
    chapters = _chapters(imported_book(tmp_path, text))
    assert [title for title, _ in chapters] == ["INTRODUCTION", "I", "II", "III"]
    assert chapters[0][1] == [
        prose,
        "That is why the present is one of the right moments to republish it. In Voltaire's "
        "fingers, as Anatole France has said, the pen runs and laughs.",
        "PHILIP LITTELL.",
    ]
    assert chapters[1][1][-1] == "So said the old woman to Candide. MARTIN."


def test_two_contents_pages_in_one_run_of_headings_are_both_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Huckleberry Finn's 76-0.txt sets its contents page, "CONTENTS." over a line for each
    chapter, each read as a heading, right over its list of illustrations, "ILLUSTRATIONS.":
    the two fall in one run of headings, and the report named only the run's last, the
    contents page left out unsaid. Both pages left out are said."""
    numbers = ["I", "II", "III"]
    listed = "".join(f"CHAPTER {n}. Civilizing Huck.--Miss Watson.\n\n" for n in numbers)
    text = (
        _GUTENBERG.format(title="HUCKLEBERRY FINN")
        + f"CONTENTS.\n\n{listed}\n\n\n"
        + "ILLUSTRATIONS.\n\n\nThe Widows\n\nMoses and the “Bulrushers”\n\nMiss Watson\n\n\n\n\n"
        + f"EXPLANATORY\n\n{_PROSE.format(who='The author')}\n\n\n\n"
        + "".join(f"CHAPTER {n}.\n\n{_PROSE.format(who=f'Huck {n}')}\n\n\n\n" for n in numbers)
    )
    source = tmp_path / "huck.txt"
    source.write_text(text, "utf-8")
    assert _left_out(source, capsys) == ["CONTENTS (contents)", "ILLUSTRATIONS (contents)"]
    assert [title for title, _ in _chapters(imported_book(tmp_path, text))] == [
        "EXPLANATORY",
        "CHAPTER I",
        "CHAPTER II",
        "CHAPTER III",
    ]
