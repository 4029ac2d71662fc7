"""An imported novel is shown as a novel: chapters and paragraphs, no invented post times, no
forum roles, "Chapter I" rather than "Thread 1: I".

Real books are imported, annotated offline and served by `terrarium` (its main
in-process); the
reader's site is read by headless Chromium.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from terrarium_dagster.corpus.story import chapter_title
from terrarium_dagster.corpus.units import format_thread_key
from tests.support.browser import require_chromium, terrarium_serve
from tests.support.cli import run_args, store_copy, terrarium_main

MARS = Path(__file__).parent / "data" / "books" / "princess-of-mars-ch1-10.txt"
_terrarium = partial(terrarium_main, clean=True)

# A short book whose chapters are headed by bare Roman numerals, as The War of the Worlds' are.
NUMBERED = """THE LAMP OF ORRIN

I

Orrin Vale kept the lamp of the Saltmarch lighthouse, and every night he climbed the two hundred
steps of the Greywatch tower with oil for the Beacon of Hathe. The harbourmaster Idris Pell
watched him go from the quay, as she had watched his father.

Idris Pell had a ledger of every ship that came past the Greywatch, and in it she wrote the
names the sailors gave: the Saltmarch Company, the Hathe Wardens, the widow of the Copper Fen.

II

The Hathe Wardens came in autumn with a writ from the Saltmarch Company. Orrin Vale read it by
the light of the Beacon of Hathe and gave it to Idris Pell, who tore it along the seal.

“The Greywatch is not theirs,” said Idris Pell. “The Copper Fen built it, and the Fen's widow
keeps its deed in the ledger, under the names of every ship.”
"""


def _site_manifest(folder: Path) -> dict[str, Any]:
    text = (folder / "glossary-data.js").read_text(encoding="utf-8")
    return json.loads(text.split("=", 1)[1].strip().rstrip(";"))


def _thread_part(folder: Path, number: int) -> dict[str, Any]:
    text = (folder / "data" / f"thread-{number:04d}.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def test_a_bare_numeral_is_a_chapter_and_other_titles_stand() -> None:
    assert chapter_title("I") == "Chapter I"
    assert chapter_title("12.") == "Chapter 12"
    assert chapter_title("CHAPTER I: ON THE ARIZONA HILLS") == "CHAPTER I: ON THE ARIZONA HILLS"
    assert chapter_title("FOREWORD") == "FOREWORD"


@pytest.fixture(scope="module")
def numbered_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("numbered")
    book = folder / "orrin.txt"
    book.write_text(NUMBERED.replace("\n", "\r\n"), encoding="utf-8")  # Gutenberg's CRLF
    corpus, store = folder / "orrin.db", folder / "orrin-glossary.db"
    assert _terrarium("import", str(book), "--out", str(corpus)).returncode == 0
    done = _terrarium(*run_args(store, corpus))
    assert done.returncode == 0, done.stderr
    return corpus, store


def test_the_site_of_a_novel_names_chapters(numbered_book: tuple[Path, Path], tmp_path: Path):
    _corpus, store = numbered_book
    site = tmp_path / "site"
    done = _terrarium("export", "--db", str(store), "--format", "site", "--out", str(site))
    assert done.returncode == 0, done.stderr
    manifest = _site_manifest(site)
    assert manifest["unit"] == "chapter"
    titles = [_thread_part(site, n + 1)["title"] for n in range(len(manifest["threads"]))]
    assert titles == ["Chapter I", "Chapter II"]
    # the page names the story before its script runs (a tab, a bookmark, a link preview)
    page = (site / "index.html").read_text(encoding="utf-8")
    assert f"<title>{manifest['story']} — glossary</title>" in page
    assert "<title>Glossary</title>" not in page


@pytest.fixture(scope="module")
def mars(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("mars")
    corpus, store = folder / "mars.db", folder / "mars-glossary.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    done = _terrarium(*run_args(store, corpus, threads="..1"))
    assert done.returncode == 0, done.stderr
    return corpus, store


@pytest.fixture(scope="module")
def served(mars: tuple[Path, Path]) -> Iterator[str]:
    corpus, store = mars
    with terrarium_serve(store, "--corpus", str(corpus)) as base:
        yield base


def test_a_paragraph_page_has_no_invented_time_author_or_forum_role(
    mars: tuple[Path, Path], served: str
) -> None:
    corpus, _store = mars
    with sqlite3.connect(corpus) as conn:
        first = conn.execute("SELECT id, title FROM thread ORDER BY id LIMIT 1").fetchone()
    page = httpx.get(f"{served}/post/{first[0] + 2}", timeout=10)
    assert page.status_code == 200
    text = re.sub(r"<[^>]+>", " ", page.text)
    assert "Paragraph 3" in text and first[1] in text
    for forum in ("UTC", "quest master", "Thread start", "Thread t0", "No. "):
        assert forum not in text, forum
    assert "Chapter start" in text and "paragraph 2" in text  # the paragraph before it


def test_the_reader_sees_chapters_and_paragraphs(served: str, page: Any) -> None:
    require_chromium()
    page.goto(f"{served}/?upto=1")
    notice = page.wait_for_selector(".notice")
    assert notice.inner_text().startswith("As of the end of CHAPTER I: ON THE ARIZONA HILLS:")
    assert "later chapters" in notice.inner_text()
    options = [option.inner_text() for option in page.query_selector_all("#position option")]
    assert options[0] == "CHAPTER I: ON THE ARIZONA HILLS", options
    assert all(not option.startswith("Thread") for option in options), options
    page.click("#page a[href^='#/entry/']")
    source = page.wait_for_selector("a.source")
    assert re.fullmatch(r"CHAPTER I: ON THE ARIZONA HILLS, paragraph \d+", source.inner_text())


def test_an_entry_not_yet_in_the_glossary_names_the_chapter_by_its_title(
    served: str, page: Any
) -> None:
    # Frankenstein's 28th part is "Chapter 24" (four letters come first): the notice names
    # the chapter as the book does, never by its place in story order ("chapter 28").
    require_chromium()
    page.goto(f"{served}/?upto=1#/entry/999999")
    notice = page.wait_for_selector(".notice")
    assert notice.inner_text() == "Not in the glossary as of CHAPTER I: ON THE ARIZONA HILLS."


@pytest.fixture(scope="module")
def served_numbered(numbered_book: tuple[Path, Path]) -> Iterator[str]:
    corpus, store = numbered_book
    with terrarium_serve(store, "--corpus", str(corpus)) as base:
        yield base


def test_a_source_quoting_speech_is_not_put_in_quotes_twice(
    served_numbered: str, page: Any
) -> None:
    # A paragraph of speech in curly quotes (Frankenstein's, Dickens's): its quotation keeps its
    # own marks, as the wiki shows it (`in_quotes`), not "““Your affectionate father…”".
    require_chromium()
    base = served_numbered
    page.goto(f"{base}/?upto=2")
    page.wait_for_selector("#page a[href^='#/entry/']")
    hrefs = {a.get_attribute("href") for a in page.query_selector_all("#page a[href^='#/entry/']")}
    quotes = []
    for href in sorted(hrefs):
        page.goto(f"{base}/?upto=2{href}")
        page.wait_for_selector("#entry-title")
        quotes += [q.inner_text() for q in page.query_selector_all(".quote")]
    assert any(quote.startswith("“The Greywatch") for quote in quotes), quotes
    assert not [quote for quote in quotes if "““" in quote or "””" in quote]


def test_an_unread_chapter_is_named_by_its_place_in_the_book_not_a_made_up_number(
    served_numbered: str, page: Any
) -> None:
    # Frankenstein's site at its fourth letter offered "Chapter 5 (not read yet)" up to
    # "Chapter 28 (not read yet)": its fifth part is its Chapter 1, and it has 24 chapters.
    # An unread chapter's title stays hidden (a title can spoil); its place is no chapter number.
    require_chromium()
    page.goto(f"{served_numbered}/?upto=1")
    page.wait_for_selector(".notice")
    options = [option.inner_text() for option in page.query_selector_all("#position option")]
    assert options == ["Chapter I", "2 of 2 (not read yet)"]


def test_the_wiki_of_a_novel_names_chapters_and_paragraphs(
    mars: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, store = mars
    with sqlite3.connect(corpus) as conn:
        first_id, first_title = conn.execute(
            "SELECT id, title FROM thread ORDER BY id LIMIT 1"
        ).fetchone()
    out = tmp_path / "wiki"
    args = ("export", "--db", str(store), "--format", "wiki", "--out", str(out))
    for _ in range(2):  # the same command again gives the same pages
        done = _terrarium(*args, "--as-of-thread", str(first_id))
        assert done.returncode == 0, done.stderr
    index = (out / "wiki" / "index.md").read_text(encoding="utf-8")
    assert f"As of the end of the chapter “{first_title}”." in index
    pages = [p for p in (out / "wiki").glob("*.md") if p.name not in ("index.md", "unresolved.md")]
    sources = [
        line
        for page in pages
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("- [")
    ]
    assert sources
    for line in sources:
        assert re.match(rf"- \[{re.escape(first_title)}, paragraph \d+\]\(http", line), line
        assert "thread" not in line.split("](")[0] and "#" not in line.split("](")[0], line
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "(thread “" not in text and f"[{first_id}#" not in text, page.name


def test_status_of_a_novels_store_counts_chapters_and_paragraphs(mars: tuple[Path, Path]) -> None:
    _corpus, store = mars
    done = _terrarium("status", "--db", str(store))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"store {store} (the book “A Princess of Mars”)"
    # the book's other chapters were never started: counted, not left out
    assert re.match(r"chapters: (\d+) \(curated 1, not started (\d+)\)", lines[1]), lines[1]
    assert any(line.startswith("source paragraphs: ") for line in lines)
    assert not any(line.startswith(("threads:", "source posts:")) for line in lines)
    # the offline backend's calls are the offline backend's, not a server at a made-up address
    assert any(re.fullmatch(r"  the offline backend: \d+ calls", line) for line in lines), lines
    assert "offline.invalid" not in done.stdout


def test_a_novels_chapters_are_named_by_their_number(
    numbered_book: tuple[Path, Path], tmp_path: Path
) -> None:
    """`status` lists a book's chapters as ch1, ch2, and `--threads` takes those numbers: a run
    of ch2 alone after ch1, and a number past the last refused in one line naming the last."""
    corpus, _store = numbered_book
    store = tmp_path / "by-number.db"
    first = _terrarium(*run_args(store, corpus, threads="ch1..ch1"))
    assert first.returncode == 0, first.stderr
    listed = _terrarium("status", "--db", str(store)).stdout.splitlines()
    assert [line.split()[0] for line in listed if line.startswith("  ch")] == ["ch1"]
    second = _terrarium(*run_args(store, corpus, threads="ch2"))
    assert second.returncode == 0, second.stderr
    listed = _terrarium("status", "--db", str(store)).stdout.splitlines()
    chapters = [line.split() for line in listed if line.startswith("  ch")]
    assert [(words[0], words[1][:7], words[2]) for words in chapters] == [
        ("ch1", "t00000-", "curated"),
        ("ch2", "t00001-", "curated"),
    ]
    past = _terrarium(*run_args(store, corpus, threads="ch3"))
    assert past.returncode == 2
    assert past.stderr.strip().endswith("the last ch2)"), past.stderr


def test_the_exports_page_of_a_novel_speaks_of_chapters(served: str) -> None:
    page = httpx.get(f"{served}/exports/", timeout=10)
    assert page.status_code == 200
    assert "as of the end of each chapter (nothing from later chapters)" in page.text
    assert "thread" not in page.text


def test_the_exports_page_names_a_novels_export_by_its_chapter(
    mars: tuple[Path, Path], served: str
) -> None:
    # Dagster's glossary_export folders are named by thread key ("t00000-1"): a reader of the
    # book is told which chapter each one is the glossary of.
    corpus, store = mars
    with sqlite3.connect(corpus) as conn:
        (first_id,) = conn.execute("SELECT id FROM thread ORDER BY id LIMIT 1").fetchone()
    key = format_thread_key(0, first_id)
    out = store.parent / "exports" / key
    args = ("export", "--db", str(store), "--format", "json", "--out", str(out))
    done = _terrarium(*args, "--as-of-thread", key)
    assert done.returncode == 0, done.stderr
    page = httpx.get(f"{served}/exports/", timeout=10)
    assert f">CHAPTER I: ON THE ARIZONA HILLS ({key})</a>" in page.text, page.text


def test_lineage_and_why_of_a_novels_entry_name_chapters_and_paragraphs(
    mars: tuple[Path, Path],
) -> None:
    corpus, store = mars
    with sqlite3.connect(store) as conn:
        (entry_id,) = conn.execute(
            "SELECT e.id FROM entry e JOIN provenance p ON p.entry_id = e.id "
            "WHERE e.deleted = 0 ORDER BY e.id LIMIT 1"
        ).fetchone()
    with sqlite3.connect(corpus) as conn:
        (title,) = conn.execute("SELECT title FROM thread ORDER BY id LIMIT 1").fetchone()
    chapter = f"“{chapter_title(title)}”"
    done = _terrarium("lineage", f"E{entry_id}", "--db", str(store))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    block = text.split("Sources (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    sources = [line for line in block if not line.startswith("      ")]  # not the quotes
    assert sources and all(
        re.match(rf"  {re.escape(chapter)}, paragraph \d+", line) for line in sources
    ), sources
    assert f"Chapters (1):\n  {chapter}: " in text
    assert ">>" not in text and "thread" not in text and "scene " not in text, text

    done = _terrarium("why", f"E{entry_id}", "--offline", "--db", str(store))
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[:2]
    assert chapter in head[0] and re.search(r"paragraph \d+\)", head[0]), head
    assert "thread" not in "\n".join(head) and "scene" not in "\n".join(head), head
    assert "Which paragraphs is it based on?" in done.stdout and "Which posts" not in done.stdout


def test_the_curation_of_a_novel_speaks_of_paragraphs_not_a_quest_master(
    mars: tuple[Path, Path],
) -> None:
    """The curator's evidence labels a book's paragraphs "text" (a novel has no quest master and
    no readers), and the reasons it gives count paragraphs."""
    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.curation.curator import gather_items
    from terrarium_dagster.curation.review_prompt import build_curate_message
    from terrarium_dagster.store.annotator import GlossaryStore

    corpus_path, store = mars
    with GlossaryStore(store, read_only=True) as glossary:
        reasons = [d["reasoning"] or "" for d in glossary.curation.curator_decisions()]
        with Corpus(corpus_path) as corpus:
            first = corpus.threads()[0].id
            items, _deferred, _unchanged = gather_items(glossary, corpus, first)
    assert any(reason.startswith("Recorded from ") for reason in reasons), reasons
    for reason in reasons:
        assert "QM" not in reason and " posts" not in reason, reason
    evidence = [line for line in build_curate_message(items).splitlines() if line.startswith(">>")]
    assert evidence and all(
        line.split(":", 1)[0].endswith(("(text)", "(text, first appearance)")) for line in evidence
    ), evidence[:3]


def test_the_annotator_of_a_novel_is_told_of_paragraphs_not_a_forum(
    mars: tuple[Path, Path],
) -> None:
    """A novel's annotator is told it reads a novel of paragraphs: no forum, no quest master, no
    posts, in every request's system prompt (each snapshot keeps the one its context was sent
    with); a quest's prompt is the quest's."""
    from terrarium_dagster.context.prompts import BOOK_SYSTEM_PROMPT, SYSTEM_PROMPT, system_prompt

    _corpus, store = mars
    with sqlite3.connect(store) as conn:
        prompts = {
            prompt
            for (prompt,) in conn.execute(
                "SELECT json_extract(state, '$.system_prompt') FROM snapshot"
            )
        }
    assert prompts == {BOOK_SYSTEM_PROMPT}
    for word in ("forum", "QM", "post ", "posts", "serialized"):
        assert word not in BOOK_SYSTEM_PROMPT.replace("[post 123]", ""), word
    assert "paragraph" in BOOK_SYSTEM_PROMPT and "novel" in BOOK_SYSTEM_PROMPT
    assert system_prompt(book=False) == SYSTEM_PROMPT and "forum mechanics" in SYSTEM_PROMPT


def test_a_novels_edition_cites_paragraphs_not_forum_posts(
    mars: tuple[Path, Path], tmp_path: Path
) -> None:
    # Before, the reader's edition of a novel cited its sources as a forum does (">>70").
    corpus, built = mars
    store = store_copy(built, tmp_path)
    with sqlite3.connect(corpus) as conn:
        (first_id,) = conn.execute("SELECT id FROM thread ORDER BY id LIMIT 1").fetchone()
    as_of = ("--as-of-thread", str(first_id))
    done = _terrarium("edition", "--db", str(store), "--corpus", str(corpus), "--offline", *as_of)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "wiki"
    done = _terrarium("export", "--db", str(store), "--format", "wiki", "--out", str(out), *as_of)
    assert done.returncode == 0, done.stderr
    pages = [p.read_text(encoding="utf-8") for p in (out / "wiki").glob("*.md")]
    cited = [line for text in pages for line in text.splitlines() if re.search(r"\[¶\d+\]\(", line)]
    assert cited, "no edition cites a paragraph"
    assert all(re.search(r'\[¶\d+\]\(http\S+ "[^"]+, paragraph \d+"\)', line) for line in cited)
    assert not any("&gt;&gt;" in text or ">>" in text for text in pages)


def test_the_site_shows_a_novels_edition_citing_paragraphs(
    mars: tuple[Path, Path], tmp_path: Path, page: Any
) -> None:
    require_chromium()
    corpus, built = mars
    store = store_copy(built, tmp_path)
    done = _terrarium(
        "edition", "--db", str(store), "--corpus", str(corpus), "--offline", "--as-of-thread", "1"
    )
    assert done.returncode == 0, done.stderr
    with terrarium_serve(store, "--corpus", str(corpus)) as base:
        page.goto(f"{base}/?upto=1")
        page.wait_for_selector("#page a[href^='#/entry/']")
        hrefs = [
            a.get_attribute("href") for a in page.query_selector_all("#page a[href^='#/entry/']")
        ]
        cited: list[str] = []
        for href in hrefs[:8]:
            page.goto(f"{base}/?upto=1{href}")
            page.wait_for_selector("h1, h2")
            cited += [a.inner_text() for a in page.query_selector_all(".edition a[href^='/post/']")]
            assert ">>" not in (page.inner_text("#page") or "")
    assert cited and all(re.fullmatch(r"¶\d+", label) for label in cited), cited


def test_a_novels_edited_source_is_named_by_its_chapter_and_paragraph(
    mars: tuple[Path, Path], tmp_path: Path
) -> None:
    # Before, the warning, status and the sources check named it as a forum's "post 1#65".
    built_corpus, _built = mars
    corpus, store = tmp_path / "mars.db", tmp_path / "terrarium.db"
    corpus.write_bytes(built_corpus.read_bytes())
    assert _terrarium(*run_args(store, corpus, threads="..1")).returncode == 0
    with sqlite3.connect(store) as conn:
        post_id, thread_id = conn.execute(
            "SELECT post_id, thread_id FROM provenance WHERE length(quote) > 20 ORDER BY id"
        ).fetchone()
    with sqlite3.connect(corpus) as conn:
        (title,) = conn.execute("SELECT title FROM thread WHERE id = ?", (thread_id,)).fetchone()
        conn.execute("UPDATE post SET body = 'Rewritten.' WHERE id = ?", (post_id,))
    place = f"“{chapter_title(title)}”, paragraph {post_id - thread_id + 1}"
    done = _terrarium(*run_args(store, corpus, threads="..1"))
    assert f"source changed: {place} edited" in done.stderr, done.stderr
    status = _terrarium("status", "--db", str(store))
    assert status.returncode == 0, status.stderr
    assert f"{place} edited" in status.stdout, status.stdout
    assert f"{thread_id}#{post_id}" not in status.stdout, status.stdout
