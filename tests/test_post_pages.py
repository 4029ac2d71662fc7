"""Source posts readable locally: `terrarium serve` answers `/post/<post_id>` with the post's page,
and every source link points there unless a public post URL template is configured.

The page is checked as rendered HTML (the quote highlighted, `>>` links, neighbours) and in a real
browser (headless Chromium driven by Playwright): from the reader's site's entry page a click on
a source opens the post's page with the quote marked, a `>>` link leads on, and the browser's
back button returns to the entry.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.quote_links import PostLinks, post_path
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine import open_corpus
from terrarium_dagster.exports.post_page import highlight_span, render_post_page
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.browser import terrarium_serve
from tests.support.cli import store_copy


@pytest.fixture(scope="module")
def store(offline_bundled_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample, no template (`terrarium run --offline`: the session's, copied)."""
    return store_copy(offline_bundled_store, tmp_path_factory.mktemp("posts"))


def _quoted_source(db: Path) -> tuple[int, int, str, str]:
    """(entry id, post id, quote, term) of a confirmed entry's first source."""
    with GlossaryStore(db) as glossary:
        for entry in glossary.glossary.entries():
            sources = glossary.provenance.for_entry(entry.id)
            if entry.status == "confirmed" and sources and sources[0].quote:
                return entry.id, sources[0].post_id, sources[0].quote, entry.term
    raise AssertionError("the sample run should confirm an entry with a quoted source")


def test_links_go_to_the_served_post_unless_a_public_template_is_configured() -> None:
    local = PostLinks(None, "http://127.0.0.1:8765/")
    assert local.url(10, 12) == "http://127.0.0.1:8765/post/12"
    assert (
        local.url(10, 12, "the Ember Tithe")
        == "http://127.0.0.1:8765/post/12?q=the%20Ember%20Tithe"
    )
    assert local.href(10, 12) == "/post/12"
    public = PostLinks("https://example.org/q/{thread_id}#{post_id}", "http://127.0.0.1:8765")
    assert public.url(10, 12, "a quote") == "https://example.org/q/10#12"
    assert public.href(10, 12) == "https://example.org/q/10#12"
    assert PostLinks(None, None).url(10, 12) is None
    assert post_path(7, "  two\n words ") == "/post/7?q=two%20words"


def test_the_bundled_sample_links_no_made_up_host(store: Path) -> None:
    settings = load_settings(db=str(store))
    with GlossaryStore(store) as glossary, open_corpus(settings, glossary) as corpus:
        assert corpus.url_template is None
        first = corpus.threads()[0]
        assert corpus.post_url(f"{first.id}#{first.id}") == f"{settings.site_url}/post/{first.id}"


def test_the_lineage_cli_links_the_served_post_with_its_quote(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, post_id, _, term = _quoted_source(store)
    assert main(["lineage", term, "--db", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"http://127.0.0.1:8765/post/{post_id}?q=" in out
    assert "quest.example" not in out


def test_quote_highlight_ignores_whitespace_case_and_curly_quotes() -> None:
    text = "He said: \u201cThe  Ember\nTithe is due\u201d and left."
    span = highlight_span(text, '"the ember tithe is due"')
    assert span and text[span[0] : span[1]] == "\u201cThe  Ember\nTithe is due\u201d"
    assert highlight_span(text, "nowhere in it") is None


def test_a_post_page_shows_the_post_its_neighbours_links_and_the_quote(
    store: Path, sample_db: Path
) -> None:
    _, post_id, quote, _ = _quoted_source(store)
    with Corpus(sample_db) as corpus:
        post = corpus.post(post_id)
        assert post is not None
        before, after = corpus.neighbours(post, 2)
        page = render_post_page(corpus, post_id, quote)
        assert render_post_page(corpus, 1) is None
    assert page is not None
    assert '<mark id="quote">' in page
    marked = re.search(r'<mark id="quote">(.*?)</mark>', page, re.S)
    assert marked and re.sub(r"<[^>]+>", "", marked.group(1)).split() == quote.split()
    assert post.name and post.name in page
    for neighbour in [*before, *after]:
        assert f'href="/post/{neighbour.id}"' in page
    assert before or after, "a sample post has neighbours"


def test_serve_answers_post_pages_and_404_for_unknown_posts(store: Path) -> None:
    _, post_id, quote, _ = _quoted_source(store)
    with terrarium_serve(store) as base:
        page = httpx.get(base + post_path(post_id, quote), timeout=10)
        assert page.status_code == 200 and '<mark id="quote">' in page.text
        assert httpx.get(base + "/post/1", timeout=10).status_code == 404
        assert httpx.get(base + "/post/abc", timeout=10).status_code == 404


def test_in_a_browser_a_source_click_opens_the_post_and_back_returns(
    store: Path, page: object
) -> None:
    entry_id, _, _, term = _quoted_source(store)
    with terrarium_serve(store) as base:
        page.goto(base + "/")  # type: ignore[attr-defined]
        page.click(f'a[href="#/entry/{entry_id}"]')  # type: ignore[attr-defined]
        page.wait_for_selector("#entry-title")  # type: ignore[attr-defined]
        assert page.inner_text("#entry-title") == term  # type: ignore[attr-defined]
        source = page.locator("a.source").first  # type: ignore[attr-defined]
        href = source.get_attribute("href")
        assert href and href.startswith("/post/"), href
        source.click()
        page.wait_for_selector("article#post")  # type: ignore[attr-defined]
        assert page.url.startswith(base + "/post/")  # type: ignore[attr-defined]
        assert page.locator("article#post .text").inner_text().strip()  # type: ignore[attr-defined]
        neighbour = page.locator(".neighbour a").first  # type: ignore[attr-defined]
        if neighbour.count():
            target = neighbour.get_attribute("href")
            neighbour.click()
            page.wait_for_url(base + target)  # type: ignore[attr-defined]
            page.go_back()  # type: ignore[attr-defined]
        page.go_back()  # type: ignore[attr-defined]
        page.wait_for_selector("#entry-title")  # type: ignore[attr-defined]
        assert page.inner_text("#entry-title") == term  # type: ignore[attr-defined]
        assert page.url.endswith(f"#/entry/{entry_id}")  # type: ignore[attr-defined]
