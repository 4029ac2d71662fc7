"""The reader's site: one wiki for the whole story with a spoiler shield that holds.

`build_site(store, corpus, out_dir)` writes a static site (no server needed, works offline and
on a phone): `index.html` (page, style and script), `glossary-data.js` (the manifest: the story's
name and, per finished thread, its key and its data file, nothing a reader could be spoiled by)
and `data/thread-0001.js`, one file per thread, holding only what first became visible at the end
of that thread: the versions of entries that changed there, the sources that began (or stopped)
holding there, the posts first cited there and the thread's own title. The versions come from the
revision log (`glossary_as_of_thread` at every finished thread), keeping a version only where the
entry changed, not one copy of the glossary per thread.

The page asks the reader how far they have read ("up to thread N", kept in the browser's
localStorage, or `?upto=<thread key, number or ch3>` in the address) and loads the thread files up
to that thread, and no further: raising the position loads the next files, so the browser never
receives a byte of a later thread. It shows every page, the index, search, categories, backlinks,
sources and redirects exactly as the glossary stood at the end of that thread; an entry with a
reader's edition (`store.editions`) shows the edition as of that thread, its working definition
one click away. Every text is put
in the page as text (never as HTML), and only http(s) or site-local links to posts are made.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from terrarium_dagster.corpus.quote_links import post_path
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import chapter_title, is_book, story_name
from terrarium_dagster.corpus.units import Post
from terrarium_dagster.exports.edition_views import with_editions
from terrarium_dagster.exports.files import (
    refuse_foreign_folder,
    staged_directory,
    write_or_link,
)
from terrarium_dagster.exports.references import linked_views
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView

SITE_DIR = "site"
DATA_FILE = "glossary-data.js"
THREAD_DIR = "data"
_POST_REF = re.compile(r">>(\d+)")


@dataclass(frozen=True)
class SiteReport:
    out_dir: str
    threads: int
    entries: int
    versions: int
    bytes: int
    unit: str = "thread"  # what a thread is called: "chapter" for an imported book
    final: dict[str, int] = field(default_factory=dict)  # entries by their state at the last

    def summary(self) -> str:
        """What the site holds, as `export` and `serve` say it: `34 chapters, 129 entries
        across them: 32 in the glossary after the last chapter, 87 rejected, 10 merged away`."""
        parts = f"{self.threads} {self.unit}{'s' * (self.threads != 1)}"
        entries = f"{self.entries} {'entry' if self.entries == 1 else 'entries'} across them"
        besides = [
            f"{self.final[state]} {state}"
            for state in ("rejected", "merged away", "deleted")
            if self.final.get(state)
        ]
        if not besides:
            return f"{parts}, {entries}"
        live = f"{self.final.get('live', 0)} in the glossary after the last {self.unit}"
        return f"{parts}, {entries}: {', '.join([live, *besides])}"


def _final_state(version: dict[str, Any]) -> str:
    """An entry's state in its last version: live, rejected, merged away or deleted."""
    if version.get("absent") or version.get("deleted"):
        return "deleted"
    return {"rejected": "rejected", "merged": "merged away"}.get(version["status"], "live")


@dataclass
class ThreadPart:
    """What a reader first sees at the end of one thread (the content of its data file)."""

    position: int
    key: str
    title: str
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: list[list[Any]] = field(default_factory=list)  # [entry id, thread key, post, quote]
    ended: list[list[Any]] = field(default_factory=list)  # sources that stop holding here
    posts: dict[str, list[Any]] = field(default_factory=dict)  # post id → [thread key, url]

    def document(self) -> dict[str, Any]:
        """The data file's object: every field, by name."""
        return asdict(self)


def thread_file(position: int) -> str:
    """The data file of the thread at `position` (0 = the first), relative to the site."""
    return f"{THREAD_DIR}/thread-{position + 1:04d}.js"


def _version(view: EntryView) -> dict[str, Any]:
    return {
        "term": view.term,
        "aliases": list(view.aliases),
        "definition": view.definition,
        "edition": view.edition,
        "status": view.status,
        "tags": list(view.tags),
        "merged_into": view.merged_into,
        "deleted": view.deleted,
    }


def site_parts(store: GlossaryStore, corpus: Corpus) -> list[ThreadPart]:
    """One part per finished thread, in story order: what became visible at its end."""
    all_threads = corpus.threads()
    thread_keys = {thread.id: thread.key for thread in all_threads}
    parts: list[ThreadPart] = []
    last: dict[int, str] = {}
    # Sources only accumulate (a merge moves them): each is announced once where it begins to
    # hold and once where it stops, not repeated in every version of its entry.
    held: dict[int, dict[tuple[str, int, str], bool]] = {}
    cited: set[int] = set()
    for position, thread in enumerate(all_threads):
        state = store.progress.thread_state(thread.id)
        if state is None or state.end_revision_id is None:
            break  # threads finish in story order: the first unfinished one ends the story so far
        part = ThreadPart(position, thread.key, thread.title)
        parts.append(part)
        seen: set[int] = set()
        new_posts: set[int] = set()
        views = store.history.glossary_as_of_thread(thread.id, include_deleted=True)
        views = with_editions(store, views, position)  # the reader's edition as of this thread
        for view in linked_views(views):
            version = _version(view)
            fingerprint = json.dumps(version, sort_keys=True)
            seen.add(view.id)
            if last.get(view.id) != fingerprint:
                part.versions[str(view.id)] = version
                last[view.id] = fingerprint
                new_posts.update(int(n) for n in _POST_REF.findall(view.definition))
                new_posts.update(int(n) for n in _POST_REF.findall(view.edition or ""))
            current = held.setdefault(view.id, {})
            now = set()
            for item in view.provenance:
                key = (
                    thread_keys.get(item.thread_id, str(item.thread_id)),
                    item.post_id,
                    item.quote,
                )
                now.add(key)
                if not current.get(key):
                    current[key] = True
                    part.sources.append([view.id, *key])
                    new_posts.add(item.post_id)
            for key, holding in current.items():
                if holding and key not in now:
                    current[key] = False
                    part.ended.append([view.id, *key])
        for entry_id in sorted(last):
            if entry_id not in seen and last[entry_id] != "absent":
                part.versions[str(entry_id)] = {"absent": True}
                last[entry_id] = "absent"
        for post_id in sorted(new_posts - cited):
            post = corpus.post(post_id)
            if post is None:
                continue
            cited.add(post_id)
            part.posts[str(post_id)] = [
                thread_keys.get(post.thread_id, ""),
                post_href(corpus, post),
            ]
    return parts


def site_manifest(parts: list[ThreadPart], *, story: str, unit: str = "thread") -> dict[str, Any]:
    """What the page loads first: the story's name, what its parts are called (`unit`:
    "chapter" for an imported book, "thread" for a quest) and each finished thread's key and
    file — no title, entry or source (those are in the thread files, loaded only up to the
    position)."""
    return {
        "story": story,
        "unit": unit,
        "threads": [{"key": part.key, "file": thread_file(part.position)} for part in parts],
    }


def post_href(corpus: Corpus, post: Post) -> str:
    """Where a source links: the post's public address when the corpus has an http(s) URL
    template, else its page on the local server (`terrarium serve`'s `/post/<id>`)."""
    return corpus.links.href(post.thread_id, post.id) or post_path(post.id)


def _payload(document: dict[str, Any]) -> str:
    payload = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return payload.replace("</", "<\\/")  # never closes a script element it may sit in


_THREAD_FILE = re.compile(r"thread-\d{4,}\.js")


def _site_file(path: Path) -> bool:
    """Whether `path`, in a site's folder, is what `build_site` writes there."""
    if path.name == THREAD_DIR and path.is_dir():
        return all(_THREAD_FILE.fullmatch(part.name) for part in path.iterdir())
    return path.name in ("index.html", DATA_FILE) and path.is_file()


def _titled(page: str, story: str) -> str:
    """The page with the story's name where it says "Glossary" before its script runs: the
    browser's tab, a bookmark, a link preview and a reader without scripts see which story."""
    name = html.escape(f"{story} — glossary")
    return page.replace("<title>Glossary</title>", f"<title>{name}</title>", 1).replace(
        '<a href="#/" id="story-title">Glossary</a>', f'<a href="#/" id="story-title">{name}</a>', 1
    )


def _site_texts(
    page: str, manifest: dict[str, Any], parts: list[ThreadPart]
) -> Iterator[tuple[str, str]]:
    """The site's files (path in the site, text), each thread's made when it is asked for."""
    yield "index.html", page
    yield DATA_FILE, f"window.TERRARIUM_SITE = {_payload(manifest)};\n"
    for part in parts:
        yield thread_file(part.position), f"window.TERRARIUM_THREAD({_payload(part.document())});\n"


def build_site(
    store: GlossaryStore, corpus: Corpus, out_dir: str | Path, *, story: str | None = None
) -> SiteReport:
    """Write the site into `out_dir` (replaced whole, atomically)."""
    target = Path(out_dir)
    refuse_foreign_folder(target, _site_file, "the reader's site")  # before any work
    title = story or story_name(corpus)
    parts = site_parts(store, corpus)
    book = is_book(corpus)
    if book:  # a novel's chapters: "Chapter I", not "Thread 1: I"
        for part in parts:
            part.title = chapter_title(part.title)
    page = resources.files("terrarium_dagster.exports.site_assets").joinpath("index.html")
    manifest = site_manifest(parts, story=title, unit="chapter" if book else "thread")
    with staged_directory(target) as staging:
        (staging / THREAD_DIR).mkdir()
        for name, text in _site_texts(
            _titled(page.read_text(encoding="utf-8"), title), manifest, parts
        ):
            # A file the site already holds stays the same file: a site written again with
            # nothing changed is left as it was (a reader, rsync or a backup sees no change).
            write_or_link(staging / name, text.encode("utf-8"), target / name)
    size = sum(path.stat().st_size for path in target.rglob("*") if path.is_file())
    last = {entry: version for part in parts for entry, version in part.versions.items()}
    final: dict[str, int] = {}
    for version in last.values():
        state = _final_state(version)
        final[state] = final.get(state, 0) + 1
    return SiteReport(
        out_dir=str(target),
        threads=len(parts),
        entries=len(last),
        versions=sum(len(part.versions) for part in parts),
        bytes=size,
        unit="chapter" if book else "thread",
        final=final,
    )
