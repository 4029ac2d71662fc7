"""A source post as a page of its own: what `terrarium serve` answers at `/post/<post_id>`.

The page shows the post's cleaned text (as the agent read it), its author and time, its thread
(for a book `terrarium import` made: its chapter and its place in it, no invented author, time
or quest master), the posts just before and after it, the posts it quotes and the posts that
quote it (every `>>N` is a link to that post's page), and, with `?q=<quote>`, the quoted words
highlighted — the words an entry's provenance recorded. Every source link points here unless the
user configured a public post URL template (`corpus.quote_links`).
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

from terrarium_dagster.corpus.quote_links import post_path
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import chapter_title, is_book, paragraph_number
from terrarium_dagster.corpus.units import Post

NEIGHBOURS = 2
SNIPPET_CHARS = 160
_QUOTE_LINK = re.compile(r"&gt;&gt;(\d+)")
_FOLD = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})

STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 1.5rem auto;
       padding: 0 1rem; color: #222; background: #fafaf7; }
nav a { margin-right: 1rem; }
.post { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .8rem 1rem;
        margin: .8rem 0; }
.post.current { border: 2px solid #8a6d3b; }
.meta { color: #666; font-size: .9rem; }
.text { white-space: pre-wrap; }
mark { background: #ffe58a; }
.snippet { color: #444; }
"""


def highlight_span(text: str, quote: str) -> tuple[int, int] | None:
    """Where `quote` occurs in `text` (whitespace, case, curly quotes and dashes aside)."""
    words = quote.translate(_FOLD).split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)
    match = pattern.search(text.translate(_FOLD))  # same length: the offsets hold for `text`
    return (match.start(), match.end()) if match else None


def _linked(text: str) -> str:
    """Escaped text whose `>>N` quotes link to the quoted post's page."""
    return _QUOTE_LINK.sub(_quote_link, html.escape(text, quote=False))


def _quote_link(match: re.Match[str]) -> str:
    post_id = int(match.group(1))
    return f'<a class="quotelink" href="{post_path(post_id)}">&gt;&gt;{post_id}</a>'


def _body(text: str, quote: str | None) -> tuple[str, bool]:
    span = highlight_span(text, quote) if quote else None
    if span is None:
        return _linked(text), False
    start, end = span
    marked = f'<mark id="quote">{_linked(text[start:end])}</mark>'
    return _linked(text[:start]) + marked + _linked(text[end:]), True


def _author(post: Post) -> str:
    name = post.name or "Anonymous"
    return f"{name} {post.trip_code}" if post.trip_code else name


def _time(post: Post) -> str:
    return datetime.fromtimestamp(post.time, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _meta(post: Post, book: bool = False) -> str:
    if book:
        return f'<div class="meta">Paragraph {paragraph_number(post.id, post.thread_id)}</div>'
    kind = " · quest master" if post.is_qm else ""
    return (
        f'<div class="meta">No. {post.id} · {html.escape(_author(post))} · '
        f'<time datetime="{datetime.fromtimestamp(post.time, tz=UTC).isoformat()}">'
        f"{_time(post)}</time>{kind}</div>"
    )


def _snippet(post: Post, book: bool = False) -> str:
    text = " ".join(post.text.split())
    if len(text) > SNIPPET_CHARS:
        text = text[: SNIPPET_CHARS - 1].rstrip() + "…"
    name = f"paragraph {paragraph_number(post.id, post.thread_id)}" if book else f"post {post.id}"
    return (
        f'<div class="post neighbour">{_meta(post, book)}<a href="{post_path(post.id)}">'
        f"{name}</a> — <span class=snippet>{html.escape(text)}</span></div>"
    )


def _post_list(title: str, ids: list[int]) -> str:
    if not ids:
        return ""
    links = ", ".join(f'<a href="{post_path(i)}">&gt;&gt;{i}</a>' for i in ids)
    return f"<p>{title}: {links}</p>"


def render_post_page(corpus: Corpus, post_id: int, quote: str | None = None) -> str | None:
    """The page of post `post_id`, or None when the corpus has no such post."""
    post = corpus.post(post_id)
    if post is None:
        return None
    thread = corpus.thread(post.thread_id)
    before, after = corpus.neighbours(post, NEIGHBOURS)
    body, found = _body(post.text, quote)
    note = ""
    if quote and not found:
        note = (
            f'<p class="meta">The quoted words “{html.escape(quote)}” are not in this post’s '
            "text as it stands now.</p>"
        )
    subject = f"<h2>{html.escape(post.subject)}</h2>" if post.subject else ""
    book = is_book(corpus)
    if book:
        chapter = chapter_title(thread.title)
        heading = f"Paragraph {paragraph_number(post.id, thread.id)}"
        title, where, start = f"{chapter}, {heading.lower()}", chapter, "Chapter start"
    else:
        named = f": {thread.title}" if thread.title else ""
        heading = f"Post {post.id}"
        title = (
            f"{heading} — {thread.title}" if thread.title else f"{heading} — thread {thread.key}"
        )
        where, start = f"Thread {thread.key}{named}", "Thread start"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        '<nav><a href="/" id="glossary-link">Glossary</a>'
        f'<a href="{post_path(thread.id)}">{start}</a></nav>'
        f"<h1>{heading}</h1>"
        f'<p class="meta">{html.escape(where)}</p>'
        + "".join(_snippet(item, book) for item in before)
        + f'<article class="post current" id="post">{_meta(post, book)}{subject}'
        f'<div class="text">{body}</div></article>'
        + note
        + "".join(_snippet(item, book) for item in after)
        + _post_list("Quotes", corpus.quotes.quotes_of(post.id))
        + _post_list("Quoted by", corpus.quotes.quoted_by(post.id))
        + "</body></html>"
    )
