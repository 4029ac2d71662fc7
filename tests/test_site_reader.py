"""The reader's site as a reader uses it, in a real browser (Chromium driven by Playwright).

A book-length story (40 threads, the synthetic generator, annotated offline) is served by
`terrarium serve`; the browser types and clicks: the reading position (and the network log
says which data files came down: none from a later thread), search ranking on typed queries,
the A–Z bar across categories, a phone-sized header, and a source link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.browser import require_chromium, terrarium_serve
from tests.support.cli import run_args

THREADS = 40


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    require_chromium()  # skips (outside CI) before the story is built when there is no browser
    root = tmp_path_factory.mktemp("novel")
    corpus = generate_corpus(root / "novel.db", threads=THREADS, posts_per_thread=6, seed=3)
    store = root / "store" / "terrarium.db"
    store.parent.mkdir()  # a store's folder is not made (a mistyped one would be)
    assert main(run_args(store, corpus)) == 0
    return corpus, store


@pytest.fixture(scope="module")
def site(story: tuple[Path, Path]) -> Iterator[str]:
    corpus, store = story
    with terrarium_serve(store, "--corpus", str(corpus)) as base:
        yield base


def _data_files(page: Any, base: str) -> tuple[list[str], dict[str, int]]:
    """Record the site's data files the page fetches (path → bytes received)."""
    loaded: dict[str, int] = {}

    def seen(response: Any) -> None:
        path = response.url[len(base) :]
        if path.endswith(".js"):
            loaded[path] = len(response.body())

    page.on("response", seen)
    return [], loaded


def _settle(page: Any, loaded: dict[str, int], expected: set[int]) -> None:
    """Let Playwright deliver the responses it has seen (its events reach Python after the page
    has already drawn what they carried), for up to ten seconds; the caller then asserts."""
    for _ in range(100):
        if _thread_numbers(loaded) == expected:
            return
        page.wait_for_timeout(100)


def _thread_numbers(loaded: dict[str, int]) -> set[int]:
    return {int(m.group(1)) for p in loaded if (m := re.search(r"thread-(\d+)\.js$", p))}


def _as_of(store: Path, corpus_path: Path, position: int) -> list[Any]:
    """Every entry as of the end of the thread at `position`, whatever its status."""
    with Corpus(corpus_path) as corpus, GlossaryStore(store) as glossary:
        thread = corpus.threads()[position]
        return glossary.history.glossary_as_of_thread(thread.id)


def _live_as_of(store: Path, corpus_path: Path, position: int) -> dict[int, Any]:
    views = _as_of(store, corpus_path, position)
    return {v.id: v for v in views if v.status not in ("rejected", "merged") and not v.deleted}


def test_a_reader_at_thread_10_downloads_nothing_from_later_threads(
    site: str, story: tuple[Path, Path], page: Any, tmp_path: Path
) -> None:
    corpus, store = story
    _unused, loaded = _data_files(page, site)
    page.goto(f"{site}/?upto=10")
    page.wait_for_selector(".notice >> text=As of the end of thread 10")
    _settle(page, loaded, set(range(1, 11)))
    assert _thread_numbers(loaded) == set(range(1, 11)), sorted(loaded)
    served = Path(store).parent / "exports" / "site"  # where `terrarium serve` built it
    whole = sum(f.stat().st_size for f in (served / "data").glob("*.js"))
    got = sum(size for path, size in loaded.items() if "thread-" in path)
    assert got / whole < 0.35, (got, whole)
    manifest = (served / "glossary-data.js").read_text(encoding="utf-8")
    with Corpus(corpus) as opened:
        titles = [thread.title for thread in opened.threads()]
    assert not any(title in manifest for title in titles), "the manifest names no thread"
    # the terms the story names only after thread 10 (an entry rejected by then and restored
    # later is on the as-of-10 site as the rejected entry it then was)
    later = {v.term for v in _live_as_of(store, corpus, THREADS - 1).values()} - {
        v.term for v in _as_of(store, corpus, 9)
    }
    received = "".join(
        (served / path.lstrip("/")).read_text(encoding="utf-8") for path in loaded if path
    )
    assert later and not [term for term in later if f'"term":"{term}"' in received]
    for title in titles[10:]:
        assert title not in page.content()

    # Raising the position loads the next threads, and only up to it.
    page.select_option("#position", "19")
    page.wait_for_selector(".notice >> text=As of the end of thread 20")
    _settle(page, loaded, set(range(1, 21)))
    assert _thread_numbers(loaded) == set(range(1, 21)), sorted(loaded)
    shown = {int(h.split("/")[-1]) for h in _hrefs(page, "#page a[href^='#/entry/']")}
    assert shown == set(_live_as_of(store, corpus, 19)), "the index is the glossary at thread 20"
    # Lowering it fetches nothing and hides again what came later.
    page.select_option("#position", "4")
    page.wait_for_selector(".notice >> text=As of the end of thread 5")
    assert _thread_numbers(loaded) == set(range(1, 21))
    shown = {int(h.split("/")[-1]) for h in _hrefs(page, "#page a[href^='#/entry/']")}
    assert shown == set(_live_as_of(store, corpus, 4))
    page.screenshot(path=str(tmp_path / "position.png"))


def _hrefs(page: Any, selector: str) -> list[str]:
    return [str(a.get_attribute("href")) for a in page.query_selector_all(selector)]


def test_typed_searches_rank_the_name_first_then_prefixes_then_definitions(
    site: str, story: tuple[Path, Path], page: Any
) -> None:
    corpus, store = story
    live = _live_as_of(store, corpus, THREADS - 1)
    page.goto(f"{site}/?upto={THREADS}")
    page.wait_for_selector(".notice")
    # A name that other entries' definitions mention: substring search would not put it first.
    mentioned = [
        entry
        for entry in live.values()
        if sum(entry.term.casefold() in other.definition.casefold() for other in live.values()) > 2
    ]
    assert mentioned, "the story should have names mentioned in other definitions"
    for entry in mentioned[:3]:
        page.fill("#search", "")
        page.type("#search", entry.term)
        page.wait_for_selector("#result-count")
        first = page.query_selector("#results li a")
        assert first is not None and first.inner_text() == entry.term, entry.term
    # A prefix: every name starting with it comes before any definition-only match.
    term = sorted(live.values(), key=lambda v: v.term)[0].term
    prefix = normalize_term(term)[:3]
    page.fill("#search", "")
    page.type("#search", prefix)
    page.wait_for_selector("#result-count")
    names = [a.inner_text() for a in page.query_selector_all("#results li > a")]
    starts = [normalize_term(n).startswith(prefix) for n in names]
    assert starts[0] and starts == sorted(starts, reverse=True), names
    # The index line shows the term once (the gloss does not open with it again).
    page.fill("#search", "")
    for line in page.query_selector_all("#page ul.entries li")[:40]:
        term_text = line.query_selector("a").inner_text()
        assert not line.query_selector(".gloss").inner_text().lstrip("— ").startswith(term_text)


def test_a_to_z_reaches_every_category_and_lands_below_the_header(
    site: str, story: tuple[Path, Path], page: Any
) -> None:
    corpus, store = story
    live = _live_as_of(store, corpus, THREADS - 1)
    page.goto(f"{site}/?upto={THREADS}")
    page.wait_for_selector(".az a")
    by_letter: dict[str, list[Any]] = {}
    for view in live.values():
        by_letter.setdefault(view.term[0].upper(), []).append(view)
    letter = max(by_letter, key=lambda k: len({(v.tags or ("-",))[0] for v in by_letter[k]}))
    page.mouse.wheel(0, 3000)
    page.click(f".az a:text-is('{letter}')")
    heading = page.wait_for_selector(f"#letter-{letter}")
    listed = {a.inner_text() for a in page.query_selector_all("#page ul.entries li > a")}
    assert listed == {v.term for v in by_letter[letter]}
    header = page.query_selector("header").bounding_box()
    box = heading.bounding_box()
    assert box["y"] >= header["y"] + header["height"] - 1, (box, header)
    assert box["y"] + box["height"] <= 900


def test_the_header_is_compact_on_a_phone(site: str, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(f"{site}/?upto=3")
        page.wait_for_selector(".notice")
        height = page.query_selector("header").bounding_box()["height"]
        assert height <= 90, height
        assert page.query_selector("#search").is_visible()
        assert page.query_selector("#position").is_visible()
    finally:
        context.close()


def test_a_source_reads_thread_title_and_post_and_opens_the_post(
    site: str, story: tuple[Path, Path], page: Any
) -> None:
    corpus, store = story
    live = _live_as_of(store, corpus, THREADS - 1)
    entry = next(v for v in live.values() if v.provenance)
    page.goto(f"{site}/?upto={THREADS}#/entry/{entry.id}")
    link = page.wait_for_selector("a.source")
    with Corpus(corpus) as opened:
        source = entry.provenance[0]
        title = opened.thread(source.thread_id).title
    labels = [a.inner_text() for a in page.query_selector_all("a.source")]
    assert f"{title}, post {source.post_id}" in labels, labels
    href = str(link.get_attribute("href"))
    assert re.fullmatch(rf"/post/{source.post_id}(\?q=\S+)?|https?://\S+", href), href
    if href.startswith("/post/"):  # the local post page: a click opens it
        page.click(f"a.source[href='{href}']")
        page.wait_for_url(re.compile(rf"/post/{source.post_id}"))
        assert title in page.inner_text("body")
