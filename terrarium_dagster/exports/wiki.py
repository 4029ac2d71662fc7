"""The glossary as a wiki: one Markdown page per entry, an index, and the same pages as HTML.

Layout of ``out_dir``::

    index.md            entries by tag (and "untagged"), then A–Z
    unresolved.md       [[references]] that name no entry, with the page they are on
    <slug>.md           one page per entry (tentative or confirmed)
    <slug>.md           a small redirect page per merged entry, pointing at its target
    html/*.html         the same pages rendered to static HTML (no external assets)

A page has the entry's status, tags, aliases, its definition with ``[[Term]]`` /
``[[Term|label]]`` turned into links (by term or alias, normalized; merged names redirect),
its sources as links to the posts with their quotes, first and last seen, and backlinks: the
pages whose definitions link to it ("Linked from") or name it in plain text ("Mentioned in").
Slugs come from the term; a collision gets the entry id appended. Output is deterministic.
"""

from __future__ import annotations

import functools
import hashlib
import html as html_lib
import re
import secrets
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import markdown
from markdown.extensions.toc import slugify_unicode

from terrarium_dagster.corpus.story import chapter_title, in_quotes, paragraph_number
from terrarium_dagster.exports.entry_records import (
    UrlForPost,
    drop_citations,
    seen_range,
    sorted_sources,
)
from terrarium_dagster.exports.files import staged_directory
from terrarium_dagster.exports.references import (
    NameIndex,
    UnresolvedReference,
    find_references,
    is_page_entry,
    linked_views,
    rejected_references,
    unresolved_references,
)
from terrarium_dagster.store.models import EntryView
from terrarium_dagster.store.normalize import normalize_text

RESERVED_SLUGS = frozenset({"index", "unresolved", "html"})
SLUG_CHARS = 60
SUMMARY_CHARS = 140
MIN_MENTION_CHARS = 3
MAX_MENTION_WORDS = 8

_SLUG_JUNK = re.compile(r"[^\w]+|_+")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")
_MD_HREF = re.compile(r'href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^"#]*?)\.md(#[^"]*)?"')
_UNSAFE_HREF = re.compile(r'href="\s*(?:javascript|vbscript|data):[^"]*"', re.IGNORECASE)


@dataclass(slots=True)
class WikiReport:
    """What `export_wiki` wrote: page slugs by entry id, redirects, unresolved references and
    every file (paths relative to the wiki folder, sorted)."""

    out_dir: Path
    pages: dict[int, str] = field(default_factory=dict)
    redirects: dict[int, str] = field(default_factory=dict)
    unresolved: list[UnresolvedReference] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass(slots=True)
class WikiCache:
    """What one wiki export rendered, for the next export of the same store to reuse: each
    entry's prose n-grams, definition, page and index line (kept while their inputs are equal,
    only those the latest export used), and the HTML of list items (sources, backlinks, index
    lines), converted once."""

    ngrams: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict)
    references: dict[str, tuple[str, ...]] = field(default_factory=dict)
    definitions: dict[tuple[object, ...], str] = field(default_factory=dict)
    pages: dict[int, tuple[tuple[object, ...], list[Block], str, str]] = field(default_factory=dict)
    items: dict[int, tuple[tuple[object, ...], str]] = field(default_factory=dict)
    list_items: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WikiFile:
    """A file of the wiki: the hash of what determines its text, and how to get the text."""

    key: str
    text: Callable[[], str]


def content_key(*parts: str | None) -> str:
    """A short hash of the strings that determine a file's content."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(b"\x00" if part is None else b"\x01" + part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()


def page_html_key(text_key: str, title: str, site: str, redirect_to: str | None) -> str:
    """The content key of a page's HTML: its Markdown's key and what the template adds."""
    return content_key("html", text_key, title, site, redirect_to)


@functools.lru_cache(maxsize=1 << 16)
def slugify(term: str) -> str:
    """A file-name-safe slug: accents dropped, case folded, every non-word run one hyphen."""
    decomposed = unicodedata.normalize("NFKD", term)
    stripped = "".join(char for char in decomposed if not unicodedata.combining(char))
    folded = unicodedata.normalize("NFKC", stripped).casefold()
    slug = _SLUG_JUNK.sub("-", folded).strip("-")
    return slug[:SLUG_CHARS].strip("-")


def md_escape(text: str) -> str:
    """Text safe to put in Markdown as literal characters (link text, headings)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _url_part(url: str) -> str:
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def _page_link(text: str, slug: str, anchor: str = "") -> str:
    return f"[{md_escape(text)}]({_url_part(slug)}.md{anchor})"


def tag_anchor(tag: str) -> str:
    """The heading id the index's tag section gets (Python-Markdown's toc slug)."""
    return slugify_unicode(tag, "-")


@dataclass(slots=True)
class _Wiki:
    entries: list[EntryView]
    url_for_post: UrlForPost
    thread_titles: Mapping[int, str]
    book: bool  # an imported book: a source is a chapter's paragraph, not a thread's post
    index: NameIndex
    by_id: dict[int, EntryView]
    pages: dict[int, str]
    redirects: dict[int, str]
    linked_from: dict[int, set[int]]
    mentioned_in: dict[int, set[int]]
    unresolved: list[UnresolvedReference]
    to_rejected: list[UnresolvedReference]  # references to names the curator rejected


def _assign_slugs(
    pages: Sequence[EntryView], redirects: Sequence[EntryView]
) -> tuple[dict[int, str], dict[int, str]]:
    taken = set(RESERVED_SLUGS)
    assigned: list[dict[int, str]] = [{}, {}]
    for group, entries in enumerate((pages, redirects)):
        for entry in entries:
            slug = slugify(entry.term) or "entry"
            if slug in taken:
                slug = f"{slug}-{entry.id}"
            while slug in taken:
                slug = f"{slug}-{entry.id}"
            taken.add(slug)
            assigned[group][entry.id] = slug
    return assigned[0], assigned[1]


def _prose_ngrams(definition: str, longest: int) -> frozenset[str]:
    """The normalized word n-grams (1 to `longest` words) of a definition outside [[references]]."""
    prose = definition
    for reference in reversed(find_references(prose)):
        prose = prose[: reference.start] + " " + prose[reference.end :]
    words = normalize_text(prose).split()
    return frozenset(
        " ".join(words[start : start + size])
        for size in range(1, longest + 1)
        for start in range(len(words) - size + 1)
    )


def _mentions(
    page_entries: Sequence[EntryView], index: NameIndex, cache: WikiCache
) -> dict[int, set[int]]:
    """Which pages name another entry in plain text (outside [[references]])."""
    names: dict[str, int] = {}
    for name, entry_id in index.names().items():
        folded = normalize_text(name)
        if len(folded) >= MIN_MENTION_CHARS:
            names.setdefault(folded, entry_id)
    longest = min(MAX_MENTION_WORDS, max((len(n.split()) for n in names), default=0))
    known = set(names)
    mentioned_in: dict[int, set[int]] = defaultdict(set)
    grams_cache: dict[tuple[str, int], frozenset[str]] = {}
    for entry in page_entries:
        key = (entry.definition, longest)
        grams = cache.ngrams.get(key)
        if grams is None:
            grams = _prose_ngrams(entry.definition, longest)
        grams_cache[key] = grams
        for gram in grams & known:
            target = names[gram]
            if target != entry.id:
                mentioned_in[target].add(entry.id)
    cache.ngrams = grams_cache
    return mentioned_in


def _build(
    entries: Sequence[EntryView],
    url_for_post: UrlForPost,
    thread_titles: Mapping[int, str],
    cache: WikiCache,
    index: NameIndex | None = None,
    book: bool = False,
) -> _Wiki:
    written = sorted((e for e in entries if not e.deleted), key=lambda e: (e.norm_term, e.id))
    unresolved = unresolved_references(written)
    to_rejected = rejected_references(written)
    chosen = linked_views(written)
    index = index or NameIndex(chosen)
    page_entries = [e for e in chosen if is_page_entry(e)]
    redirect_entries = [
        e for e in chosen if e.merged_into is not None and index.redirect(e.id) is not None
    ]
    pages, redirects = _assign_slugs(page_entries, redirect_entries)
    linked_from: dict[int, set[int]] = defaultdict(set)
    for entry in page_entries:
        for reference in find_references(entry.definition):
            target = index.resolve(reference.target)
            if target is not None and target != entry.id:
                linked_from[target].add(entry.id)
    mentioned_in = _mentions(page_entries, index, cache)
    for target, sources in linked_from.items():
        mentioned_in[target] -= sources
    return _Wiki(
        entries=chosen,
        url_for_post=url_for_post,
        thread_titles=thread_titles,
        book=book,
        index=index,
        by_id={e.id: e for e in chosen},
        pages=pages,
        redirects=redirects,
        linked_from=linked_from,
        mentioned_in=mentioned_in,
        unresolved=unresolved,
        to_rejected=to_rejected,
    )


def _post_ref(wiki: _Wiki, post_id: int, thread_id: int) -> str:
    """What a source is called: `thread#post` in a quest; in a book its chapter and paragraph,
    as the reader's site and the post pages call it."""
    if not wiki.book:
        return f"{thread_id}#{post_id}"
    title = wiki.thread_titles.get(thread_id)
    chapter = chapter_title(title) if title else "chapter"
    return f"{md_escape(chapter)}, paragraph {paragraph_number(post_id, thread_id)}"


def _post_link(wiki: _Wiki, post_id: int, thread_id: int, quote: str | None = None) -> str:
    ref = _post_ref(wiki, post_id, thread_id)
    url = wiki.url_for_post(thread_id, post_id, quote)
    return f"[{ref}]({_url_part(url)})" if url else ref


_MD_UNSAFE_LINK = re.compile(
    r"\[([^\]]*)\]\(\s*<?\s*(?:javascript|vbscript|data|file):(?:[^()]|\([^()]*\))*\)",
    re.IGNORECASE,
)


def safe_markdown(text: str) -> str:
    """Model-written Markdown made safe for a page: raw HTML is shown as text (its angle
    brackets escaped), and a link to a `javascript:`, `vbscript:`, `data:` or `file:` address
    keeps only its label."""
    text = _MD_UNSAFE_LINK.sub(lambda match: match.group(1), text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _definition_markdown(wiki: _Wiki, entry: EntryView) -> str:
    text = safe_markdown(entry.definition.strip())
    for reference in reversed(find_references(text)):
        target = wiki.index.resolve(reference.target)
        if target is not None and target in wiki.pages:
            replacement = _page_link(reference.text, wiki.pages[target])
        else:
            replacement = reference.text
        text = text[: reference.start] + replacement + text[reference.end :]
    return text or "*(no definition)*"


_CITATION = re.compile(r"&gt;&gt;(\d+)")
_LIST_AFTER_TEXT = re.compile(r"(?m)^((?![-*] ).*\S.*)\n([-*] )")


def _edition_markdown(wiki: _Wiki, entry: EntryView) -> str:
    """The reader's edition as page Markdown: `[[links]]` to pages, `>>post` citations to the
    posts of the entry's sources (others stay text)."""
    text = _definition_markdown(wiki, entry.model_copy(update={"definition": entry.edition or ""}))
    # a list right after a line of text needs a blank line before it to be a list in Markdown
    text = _LIST_AFTER_TEXT.sub(lambda m: f"{m.group(1)}\n\n{m.group(2)}", text)
    return _cite_posts(wiki, entry, text)


def _cite_posts(wiki: _Wiki, entry: EntryView, text: str) -> str:
    """A page text's `>>post` citations (escaped: `&gt;&gt;N`) as links to the posts of the
    entry's sources, as the reader's site shows them: `>>N` in a quest, `¶N` in a book (the
    chapter in the link's title); a post that is no source of the entry stays text."""
    threads = {item.post_id: item.thread_id for item in entry.provenance}

    def cite(match: re.Match[str]) -> str:
        post_id = int(match.group(1))
        if post_id not in threads:
            return match.group(0)
        thread_id = threads[post_id]
        url = wiki.url_for_post(thread_id, post_id, None)
        if not wiki.book:
            return f"[&gt;&gt;{post_id}]({_url_part(url)})" if url else match.group(0)
        # a book's citation is its paragraph's number in its chapter, the chapter in the title
        label = f"¶{paragraph_number(post_id, thread_id)}"
        where = _post_ref(wiki, post_id, thread_id).replace('"', "")
        return f'[{label}]({_url_part(url)} "{where}")' if url else label

    return _CITATION.sub(cite, text)


def _summary(entry: EntryView) -> str:
    prose = drop_citations(entry.definition)  # the index's one line cites no post
    for reference in reversed(find_references(prose)):
        prose = prose[: reference.start] + reference.text + prose[reference.end :]
    flat = " ".join(prose.split())
    sentence = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0]
    if len(sentence) > SUMMARY_CHARS:
        sentence = sentence[: SUMMARY_CHARS - 1].rstrip() + "…"
    return md_escape(sentence)


def _sorted_links(wiki: _Wiki, entry_ids: set[int]) -> list[str]:
    chosen = sorted(
        (wiki.by_id[i] for i in entry_ids if i in wiki.pages),
        key=lambda e: (e.norm_term, e.id),
    )
    return [f"- {_page_link(e.term, wiki.pages[e.id])}" for e in chosen]


Block = tuple[bool, list[str]]
"""A run of a page's Markdown lines; True when they are the items of one list."""


def _entry_blocks(wiki: _Wiki, entry: EntryView, definition: str | None = None) -> list[Block]:
    lines = [f"# {md_escape(entry.term)}", ""]
    facts = [f"**Status:** {entry.status}"]
    if entry.tags:
        tags = ", ".join(
            f"[{md_escape(tag)}](index.md#{tag_anchor(tag)})" for tag in sorted(entry.tags)
        )
        facts.append(f"**Tags:** {tags}")
    lines += [" · ".join(facts), ""]
    if entry.aliases:
        lines += ["**Also known as:** " + "; ".join(md_escape(a) for a in entry.aliases), ""]
    if definition is None:
        definition = _definition_markdown(wiki, entry)
    if entry.edition:  # the reader's edition first; the working definition one click away
        lines += [
            _edition_markdown(wiki, entry),
            "",
            "[Working definition](#working-definition)",
            "",
        ]
        lines += ["## Working definition", ""]
    lines += [_cite_posts(wiki, entry, definition), ""]
    first, last = seen_range(entry)
    seen = []
    if first:
        seen.append(f"**First seen:** {_post_link(wiki, *first)}")
    if last:
        seen.append(f"**Last seen:** {_post_link(wiki, *last)}")
    if seen:
        lines += [" · ".join(seen), ""]
    lines += ["## Sources", ""]
    blocks: list[Block] = [(False, lines)]
    sources = sorted_sources(entry.provenance)
    if not sources:
        lines += ["*(no sources recorded)*", ""]
    items = []
    for item in sources:
        title = None if wiki.book else wiki.thread_titles.get(item.thread_id)
        where = f" (thread “{md_escape(title)}”)" if title else ""  # a book's link names it
        quote = f": {in_quotes(md_escape(item.quote))}" if item.quote.strip() else ""
        link = _post_link(wiki, item.post_id, item.thread_id, item.quote)
        items.append(f"- {link}{where}{quote}")
    if items:
        blocks += [(True, items), (False, [""])]
    for heading, ids in (
        ("Linked from", wiki.linked_from.get(entry.id, set())),
        ("Mentioned in", wiki.mentioned_in.get(entry.id, set())),
    ):
        links = _sorted_links(wiki, ids)
        if links:
            blocks += [(False, [f"## {heading}", ""]), (True, links), (False, [""])]
    blocks.append((False, ["---", "", "[Index](index.md)", ""]))
    return blocks


def blocks_markdown(blocks: Sequence[Block]) -> str:
    return "\n".join(line for _is_list, lines in blocks for line in lines)


def _entry_page(wiki: _Wiki, entry: EntryView) -> str:
    return blocks_markdown(_entry_blocks(wiki, entry))


def _redirect_page(wiki: _Wiki, entry: EntryView) -> str:
    target = wiki.by_id[wiki.index.redirect(entry.id) or 0]
    return "\n".join(
        [
            f"# {md_escape(entry.term)}",
            "",
            f"Merged into {_page_link(target.term, wiki.pages[target.id])}.",
            "",
            "---",
            "",
            "[Index](index.md)",
            "",
        ]
    )


def _index_item(wiki: _Wiki, entry: EntryView) -> str:
    summary = _summary(entry)
    status = "" if entry.status == "confirmed" else f" *({entry.status})*"
    return f"- {_page_link(entry.term, wiki.pages[entry.id])}{status}" + (
        f" — {summary}" if summary else ""
    )


def _index_blocks(wiki: _Wiki, title: str, subtitle: str | None, cache: WikiCache) -> list[Block]:
    page_entries = [e for e in wiki.entries if e.id in wiki.pages]
    items: dict[int, tuple[tuple[object, ...], str]] = {}

    def item(entry: EntryView) -> str:
        if entry.id not in items:
            inputs = (entry, wiki.pages[entry.id])
            cached = cache.items.get(entry.id)
            line = cached[1] if cached and cached[0] == inputs else _index_item(wiki, entry)
            items[entry.id] = (inputs, line)
        return items[entry.id][1]

    lines = [f"# {md_escape(title)}", ""]
    if subtitle:
        lines += [md_escape(subtitle), ""]
    count = len(page_entries)
    lines += [f"{count} entr{'y' if count == 1 else 'ies'}.", ""]
    if wiki.unresolved:
        many = len(wiki.unresolved)
        noun = "reference" if many == 1 else "references"
        lines += [f"[{many} unresolved {noun}](unresolved.md)", ""]
    blocks: list[Block] = [(False, lines)]

    def section(heading: str, entries: Sequence[EntryView]) -> None:
        blocks.extend([(False, [heading, ""]), (True, [item(e) for e in entries]), (False, [""])])

    by_tag: dict[str, list[EntryView]] = defaultdict(list)
    untagged: list[EntryView] = []
    for entry in page_entries:
        for tag in sorted(set(entry.tags)):
            by_tag[tag].append(entry)
        if not entry.tags:
            untagged.append(entry)
    blocks.append((False, ["## By tag", ""]))
    for tag in sorted(by_tag, key=lambda t: (t.casefold(), t)):
        section(f"### {md_escape(tag)}", by_tag[tag])
    if untagged:
        section("### Untagged", untagged)
    blocks.append((False, ["## A–Z", ""]))
    by_letter: dict[str, list[EntryView]] = defaultdict(list)
    for entry in page_entries:
        initial = entry.norm_term[:1].upper()
        by_letter[initial if initial.isalpha() else "#"].append(entry)
    for letter in sorted(by_letter):
        section(f"### {md_escape(letter)}", by_letter[letter])
    if wiki.redirects:
        merged = []
        for entry in sorted(
            (wiki.by_id[i] for i in wiki.redirects), key=lambda e: (e.norm_term, e.id)
        ):
            target = wiki.by_id[wiki.index.redirect(entry.id) or 0]
            merged.append(
                f"- {_page_link(entry.term, wiki.redirects[entry.id])} → "
                f"{_page_link(target.term, wiki.pages[target.id])}"
            )
        blocks.extend([(False, ["## Merged names", ""]), (True, merged), (False, [""])])
    cache.items = items
    return blocks


def _index_page(wiki: _Wiki, title: str, subtitle: str | None) -> str:
    return blocks_markdown(_index_blocks(wiki, title, subtitle, WikiCache()))


# A list's place in a page while the rest is converted: a token no page text can hold.
_LIST_SLOT = f"terrariumlist{secrets.token_hex(8)}n{{}}"
LIST_ITEMS_KEPT = 200_000


def _blocks_html(blocks: Sequence[Block], converter: markdown.Markdown, cache: WikiCache) -> str:
    """A page's HTML body: what converting its whole Markdown gives, built from its headings and
    paragraphs converted together (heading ids stay unique) and each list item converted on its
    own (kept in the cache: a source or a backlink is converted once for every page)."""
    skeleton: list[str] = []
    lists: list[list[str]] = []
    for is_list, lines in blocks:
        if is_list:
            skeleton.append(_LIST_SLOT.format(len(lists)))
            lists.append(lines)
        else:
            skeleton.extend(lines)
    body = _markdown_to_html("\n".join(skeleton), converter)
    if len(cache.list_items) > LIST_ITEMS_KEPT:
        cache.list_items.clear()
    known = cache.list_items

    def list_item(line: str) -> str:
        html = known.get(line)
        if html is None:
            html = _markdown_to_html(line, converter)
            html = html.removeprefix("<ul>\n").removesuffix("\n</ul>")
            known[line] = html
        return html

    for number, lines in enumerate(lists):
        rendered = "<ul>\n" + "\n".join(list_item(line) for line in lines) + "\n</ul>"
        body = body.replace(f"<p>{_LIST_SLOT.format(number)}</p>", rendered, 1)
    return body


def _unresolved_page(wiki: _Wiki) -> str:
    lines = ["# Unresolved references", ""]
    if not wiki.unresolved:
        lines += ["Every [[reference]] in the glossary resolves to an entry.", ""]
    else:
        lines += ["References in definitions that name no entry of the glossary:", ""]
        lines += _reference_lines(wiki, wiki.unresolved)
    if wiki.to_rejected:
        lines += [
            "## Names the curator rejected",
            "",
            "These references name an entry the curation rejected; the pages show them as plain "
            "text:",
            "",
        ]
        lines += _reference_lines(wiki, wiki.to_rejected)
    lines += ["---", "", "[Index](index.md)", ""]
    return "\n".join(lines)


def _reference_lines(wiki: _Wiki, items: Sequence[UnresolvedReference]) -> list[str]:
    lines = []
    for item in items:
        where = _page_link(item.term, wiki.pages[item.entry_id])
        lines.append(f"- “{md_escape(item.target)}” on {where}")
    return [*lines, ""]


# -- HTML --------------------------------------------------------------------------------------

CSS = """
:root { color-scheme: light dark; --fg: #1d1f21; --bg: #fdfdfc; --muted: #666; --link: #0b5cad;
  --rule: #ddd; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #16181a; --muted: #9a9a9a;
  --link: #7ab7ff; --rule: #333; } }
html { background: var(--bg); color: var(--fg); }
body { font: 17px/1.6 Georgia, "Iowan Old Style", "Palatino Linotype", serif; max-width: 44rem;
  margin: 0 auto; padding: 1.5rem 1.2rem 4rem; }
nav { font: 14px/1.4 system-ui, sans-serif; border-bottom: 1px solid var(--rule);
  padding-bottom: .6rem; margin-bottom: 1.5rem; }
h1, h2, h3 { font-family: system-ui, sans-serif; line-height: 1.25; }
h1 { font-size: 1.9rem; margin: .2rem 0 1rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
ul { padding-left: 1.3rem; } li { margin: .2rem 0; }
hr { border: 0; border-top: 1px solid var(--rule); margin: 2rem 0 1rem; }
code { font-size: .9em; }
blockquote { margin: 0; padding-left: 1rem; border-left: 3px solid var(--rule);
  color: var(--muted); }
"""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>{head}
<style>{css}</style>
</head>
<body>
<nav><a href="index.html">{site}</a></nav>
<main>
{body}
</main>
</body>
</html>
"""


def markdown_converter() -> markdown.Markdown:
    """The Markdown-to-HTML converter of the wiki (reusable: it is reset between pages)."""
    converter = markdown.Markdown(extensions=["toc", "sane_lists"], output_format="html")
    # Definitions come from a model reading untrusted posts: raw HTML is shown as text.
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return converter


def _markdown_to_html(text: str, converter: markdown.Markdown) -> str:
    body = converter.reset().convert(text)
    body = _UNSAFE_HREF.sub('href="#"', body)
    return _MD_HREF.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', body)


def html_page(
    markdown_text: str,
    *,
    title: str,
    site: str,
    redirect_to: str | None = None,
    converter: markdown.Markdown | None = None,
) -> str:
    """A Markdown page as a standalone HTML document (inline CSS, nav back to the index)."""
    body = _markdown_to_html(markdown_text, converter or markdown_converter())
    return _html_document(body, title=title, site=site, redirect_to=redirect_to)


def _html_document(body: str, *, title: str, site: str, redirect_to: str | None) -> str:
    head = ""
    if redirect_to:
        head = f'\n<meta http-equiv="refresh" content="0; url={html_lib.escape(redirect_to)}">'
    return _TEMPLATE.format(
        title=html_lib.escape(f"{title} · {site}" if title != site else site),
        head=head,
        css=CSS.strip(),
        site=html_lib.escape(site),
        body=body.strip(),
    )


def _no_url(_thread_id: int, _post_id: int, _quote: str | None = None) -> str | None:
    return None


def _definition(wiki: _Wiki, entry: EntryView, cache: WikiCache, used: WikiCache) -> str:
    """`_definition_markdown`, kept while the definition and where its links point are equal."""
    targets = used.references.get(entry.definition)
    if targets is None:
        targets = cache.references.get(entry.definition)
        if targets is None:
            safe = safe_markdown(entry.definition.strip())
            targets = tuple(reference.target for reference in find_references(safe))
        used.references[entry.definition] = targets
    key = (entry.definition, *(wiki.pages.get(wiki.index.resolve(t) or -1) for t in targets))
    text = used.definitions.get(key) or cache.definitions.get(key)
    if text is None:
        text = _definition_markdown(wiki, entry)
    used.definitions[key] = text
    return text


def render_wiki(
    entries: Sequence[EntryView],
    *,
    url_for_post: UrlForPost | None = None,
    html: bool = True,
    thread_titles: Mapping[int, str] | None = None,
    title: str = "Glossary",
    subtitle: str | None = None,
    cache: WikiCache | None = None,
    index: NameIndex | None = None,
    book: bool = False,
) -> tuple[WikiReport, dict[str, WikiFile]]:
    """The wiki's files (paths relative to the wiki folder), rendered when asked for.

    With a `cache` from an earlier call, only pages whose inputs changed are rendered again (the
    result is the same as without it). ``index``: the entries' `NameIndex`, if already built.
    ``book``: the corpus is an imported book (sources are named by chapter and paragraph)."""
    cache = cache if cache is not None else WikiCache()
    used = WikiCache(ngrams=cache.ngrams, list_items=cache.list_items)
    wiki = _build(entries, url_for_post or _no_url, thread_titles or {}, cache, index, book)
    converter = markdown_converter()
    files: dict[str, WikiFile] = {}

    def add(
        slug: str,
        blocks: list[Block] | None,
        text: str,
        text_key: str,
        page_title: str,
        redirect: str | None = None,
        html_key: str | None = None,
    ) -> None:
        files[f"{slug}.md"] = WikiFile(text_key, lambda: text)
        if not html:
            return
        redirect_to = f"{redirect}.html" if redirect else None

        def document() -> str:
            body = (
                _blocks_html(blocks, converter, cache)
                if blocks is not None
                else _markdown_to_html(text, converter)
            )
            return _html_document(body, title=page_title, site=title, redirect_to=redirect_to)

        if html_key is None:
            html_key = page_html_key(text_key, page_title, title, redirect_to)
        files[f"html/{slug}.html"] = WikiFile(html_key, document)

    for entry in wiki.entries:
        if entry.id in wiki.pages:
            definition = _definition(wiki, entry, cache, used)
            inputs = (
                entry,
                definition,
                tuple(_sorted_links(wiki, wiki.linked_from.get(entry.id, set()))),
                tuple(_sorted_links(wiki, wiki.mentioned_in.get(entry.id, set()))),
            )
            cached = cache.pages.get(entry.id)
            if cached is None or cached[0] != inputs:
                blocks = _entry_blocks(wiki, entry, definition)
                text = blocks_markdown(blocks)
                text_key = content_key(text)
                html_key = page_html_key(text_key, entry.term, title, None)
                cached = (inputs, blocks, text, text_key, html_key)
            used.pages[entry.id] = cached
            add(
                wiki.pages[entry.id],
                cached[1],
                cached[2],
                cached[3],
                entry.term,
                html_key=cached[4],
            )
        elif entry.id in wiki.redirects:
            redirect = wiki.pages[wiki.index.redirect(entry.id) or 0]
            text = _redirect_page(wiki, entry)
            add(wiki.redirects[entry.id], None, text, content_key(text), entry.term, redirect)
    unresolved = _unresolved_page(wiki)
    add("unresolved", None, unresolved, content_key(unresolved), "Unresolved references")
    blocks = _index_blocks(wiki, title, subtitle, cache)
    index = blocks_markdown(blocks)
    add("index", blocks, index, content_key(index), title)
    cache.pages, cache.references, cache.definitions = (
        used.pages,
        used.references,
        used.definitions,
    )
    report = WikiReport(
        out_dir=Path(),
        pages=dict(wiki.pages),
        redirects=dict(wiki.redirects),
        unresolved=list(wiki.unresolved),
        files=sorted(files),
    )
    return report, dict(sorted(files.items()))


def export_wiki(
    entries: Sequence[EntryView],
    out_dir: str | Path,
    *,
    url_for_post: UrlForPost | None = None,
    html: bool = True,
    thread_titles: Mapping[int, str] | None = None,
    title: str = "Glossary",
    subtitle: str | None = None,
) -> WikiReport:
    """Write the wiki into ``out_dir`` (replaced as a whole: built beside it, then swapped in,
    so a failure leaves the previous wiki intact). ``url_for_post(thread_id, post_id)`` gives
    the link of a source post (None: the reference is shown as text)."""
    target = Path(out_dir)
    report, files = render_wiki(
        entries,
        url_for_post=url_for_post,
        html=html,
        thread_titles=thread_titles,
        title=title,
        subtitle=subtitle,
    )
    with staged_directory(target) as staging:
        if html:
            (staging / "html").mkdir()
        for name, file in files.items():
            (staging / name).write_text(file.text(), encoding="utf-8", newline="\n")
    report.out_dir = target
    return report
