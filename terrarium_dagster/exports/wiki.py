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

import html as html_lib
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import markdown
from markdown.extensions.toc import slugify_unicode

from terrarium_dagster.exports.files import staged_directory
from terrarium_dagster.exports.records import UrlForPost, seen_range, sorted_sources
from terrarium_dagster.exports.references import (
    NameIndex,
    UnresolvedReference,
    find_references,
    is_page_entry,
    linked_views,
    unresolved_references,
)
from terrarium_dagster.glossary.models import EntryView
from terrarium_dagster.glossary.normalize import normalize_text

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
    index: NameIndex
    by_id: dict[int, EntryView]
    pages: dict[int, str]
    redirects: dict[int, str]
    linked_from: dict[int, set[int]]
    mentioned_in: dict[int, set[int]]
    unresolved: list[UnresolvedReference]


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


def _mentions(page_entries: Sequence[EntryView], index: NameIndex) -> dict[int, set[int]]:
    """Which pages name another entry in plain text (outside [[references]])."""
    names: dict[str, int] = {}
    for name, entry_id in index.names().items():
        folded = normalize_text(name)
        if len(folded) >= MIN_MENTION_CHARS:
            names.setdefault(folded, entry_id)
    longest = min(MAX_MENTION_WORDS, max((len(n.split()) for n in names), default=0))
    mentioned_in: dict[int, set[int]] = defaultdict(set)
    for entry in page_entries:
        prose = entry.definition
        for reference in reversed(find_references(prose)):
            prose = prose[: reference.start] + " " + prose[reference.end :]
        words = normalize_text(prose).split()
        for size in range(1, longest + 1):
            for start in range(len(words) - size + 1):
                target = names.get(" ".join(words[start : start + size]))
                if target is not None and target != entry.id:
                    mentioned_in[target].add(entry.id)
    return mentioned_in


def _build(
    entries: Sequence[EntryView], url_for_post: UrlForPost, thread_titles: Mapping[int, str]
) -> _Wiki:
    written = sorted((e for e in entries if not e.deleted), key=lambda e: (e.norm_term, e.id))
    unresolved = unresolved_references(written)
    chosen = linked_views(written)
    index = NameIndex(chosen)
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
    mentioned_in = _mentions(page_entries, index)
    for target, sources in linked_from.items():
        mentioned_in[target] -= sources
    return _Wiki(
        entries=chosen,
        url_for_post=url_for_post,
        thread_titles=thread_titles,
        index=index,
        by_id={e.id: e for e in chosen},
        pages=pages,
        redirects=redirects,
        linked_from=linked_from,
        mentioned_in=mentioned_in,
        unresolved=unresolved,
    )


def _post_link(wiki: _Wiki, post_id: int, thread_id: int) -> str:
    ref = f"{thread_id}#{post_id}"
    url = wiki.url_for_post(thread_id, post_id)
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


def _summary(entry: EntryView) -> str:
    prose = entry.definition
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


def _entry_page(wiki: _Wiki, entry: EntryView) -> str:
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
    lines += [_definition_markdown(wiki, entry), ""]
    first, last = seen_range(entry)
    seen = []
    if first:
        seen.append(f"**First seen:** {_post_link(wiki, *first)}")
    if last:
        seen.append(f"**Last seen:** {_post_link(wiki, *last)}")
    if seen:
        lines += [" · ".join(seen), ""]
    lines += ["## Sources", ""]
    sources = sorted_sources(entry.provenance)
    if not sources:
        lines += ["*(no sources recorded)*", ""]
    for item in sources:
        title = wiki.thread_titles.get(item.thread_id)
        where = f" (thread “{md_escape(title)}”)" if title else ""
        quote = f": “{md_escape(item.quote)}”" if item.quote.strip() else ""
        lines.append(f"- {_post_link(wiki, item.post_id, item.thread_id)}{where}{quote}")
    if sources:
        lines.append("")
    for heading, ids in (
        ("Linked from", wiki.linked_from.get(entry.id, set())),
        ("Mentioned in", wiki.mentioned_in.get(entry.id, set())),
    ):
        links = _sorted_links(wiki, ids)
        if links:
            lines += [f"## {heading}", "", *links, ""]
    lines += ["---", "", "[Index](index.md)", ""]
    return "\n".join(lines)


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


def _index_page(wiki: _Wiki, title: str, subtitle: str | None) -> str:
    page_entries = [e for e in wiki.entries if e.id in wiki.pages]
    lines = [f"# {md_escape(title)}", ""]
    if subtitle:
        lines += [md_escape(subtitle), ""]
    count = len(page_entries)
    lines += [f"{count} entr{'y' if count == 1 else 'ies'}.", ""]
    if wiki.unresolved:
        many = len(wiki.unresolved)
        noun = "reference" if many == 1 else "references"
        lines += [f"[{many} unresolved {noun}](unresolved.md)", ""]

    def item(entry: EntryView) -> str:
        summary = _summary(entry)
        status = "" if entry.status == "confirmed" else f" *({entry.status})*"
        return f"- {_page_link(entry.term, wiki.pages[entry.id])}{status}" + (
            f" — {summary}" if summary else ""
        )

    by_tag: dict[str, list[EntryView]] = defaultdict(list)
    untagged: list[EntryView] = []
    for entry in page_entries:
        for tag in sorted(set(entry.tags)):
            by_tag[tag].append(entry)
        if not entry.tags:
            untagged.append(entry)
    lines += ["## By tag", ""]
    for tag in sorted(by_tag, key=lambda t: (t.casefold(), t)):
        lines += [f"### {md_escape(tag)}", "", *(item(e) for e in by_tag[tag]), ""]
    if untagged:
        lines += ["### Untagged", "", *(item(e) for e in untagged), ""]
    lines += ["## A–Z", ""]
    by_letter: dict[str, list[EntryView]] = defaultdict(list)
    for entry in page_entries:
        initial = entry.norm_term[:1].upper()
        by_letter[initial if initial.isalpha() else "#"].append(entry)
    for letter in sorted(by_letter):
        lines += [f"### {md_escape(letter)}", "", *(item(e) for e in by_letter[letter]), ""]
    if wiki.redirects:
        lines += ["## Merged names", ""]
        for entry in sorted(
            (wiki.by_id[i] for i in wiki.redirects), key=lambda e: (e.norm_term, e.id)
        ):
            target = wiki.by_id[wiki.index.redirect(entry.id) or 0]
            lines.append(
                f"- {_page_link(entry.term, wiki.redirects[entry.id])} → "
                f"{_page_link(target.term, wiki.pages[target.id])}"
            )
        lines.append("")
    return "\n".join(lines)


def _unresolved_page(wiki: _Wiki) -> str:
    lines = ["# Unresolved references", ""]
    if not wiki.unresolved:
        lines += ["Every [[reference]] in the glossary resolves to an entry.", ""]
    else:
        lines += ["References in definitions that name no entry of the glossary:", ""]
        for item in wiki.unresolved:
            where = _page_link(item.term, wiki.pages[item.entry_id])
            lines.append(f"- “{md_escape(item.target)}” on {where}")
        lines.append("")
    lines += ["---", "", "[Index](index.md)", ""]
    return "\n".join(lines)


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
    head = ""
    if redirect_to:
        head = f'\n<meta http-equiv="refresh" content="0; url={html_lib.escape(redirect_to)}">'
    return _TEMPLATE.format(
        title=html_lib.escape(f"{title} · {site}" if title != site else site),
        head=head,
        css=CSS.strip(),
        site=html_lib.escape(site),
        body=_markdown_to_html(markdown_text, converter or markdown_converter()).strip(),
    )


def _no_url(_thread_id: int, _post_id: int) -> str | None:
    return None


def export_wiki(
    entries: Sequence[EntryView],
    out_dir: str | Path,
    *,
    url_for_post: Callable[[int, int], str | None] | None = None,
    html: bool = True,
    thread_titles: Mapping[int, str] | None = None,
    title: str = "Glossary",
    subtitle: str | None = None,
) -> WikiReport:
    """Write the wiki into ``out_dir`` (replaced as a whole: built beside it, then swapped in,
    so a failure leaves the previous wiki intact). ``url_for_post(thread_id, post_id)`` gives
    the link of a source post (None: the reference is shown as text)."""
    target = Path(out_dir)
    wiki = _build(entries, url_for_post or _no_url, thread_titles or {})
    pages: dict[str, tuple[str, str, str | None]] = {
        "index": (_index_page(wiki, title, subtitle), title, None),
        "unresolved": (_unresolved_page(wiki), "Unresolved references", None),
    }
    for entry in wiki.entries:
        if entry.id in wiki.pages:
            pages[wiki.pages[entry.id]] = (_entry_page(wiki, entry), entry.term, None)
        elif entry.id in wiki.redirects:
            redirect = wiki.pages[wiki.index.redirect(entry.id) or 0]
            pages[wiki.redirects[entry.id]] = (_redirect_page(wiki, entry), entry.term, redirect)
    files: list[str] = []
    converter = markdown_converter()
    with staged_directory(target) as staging:
        if html:
            (staging / "html").mkdir()
        for slug, (text, page_title, redirect) in pages.items():
            (staging / f"{slug}.md").write_text(text, encoding="utf-8", newline="\n")
            files.append(f"{slug}.md")
            if html:
                document = html_page(
                    text,
                    title=page_title,
                    site=title,
                    redirect_to=f"{redirect}.html" if redirect else None,
                    converter=converter,
                )
                (staging / "html" / f"{slug}.html").write_text(
                    document, encoding="utf-8", newline="\n"
                )
                files.append(f"html/{slug}.html")
    return WikiReport(
        out_dir=target,
        pages=dict(wiki.pages),
        redirects=dict(wiki.redirects),
        unresolved=list(wiki.unresolved),
        files=sorted(files),
    )
