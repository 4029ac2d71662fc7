"""The reader's site: one wiki for the whole story with a spoiler shield.

`build_site(store, corpus, out_dir)` writes a static site (no server needed, works offline and
on a phone): `index.html` (page, style and script) and `glossary-data.js` (the data). The data
holds, per entry, its versions keyed by the position of the thread from which each holds: built
from the revision log (`glossary_as_of_thread` at every finished thread), keeping a version only
where the entry changed and each source once with the positions it holds for, not one copy of
the glossary per thread. The page asks the reader how
far they have read ("up to thread N", kept in the browser's localStorage, or `?upto=<thread
key>` in the address) and shows every page, the index, search, categories, backlinks, sources and
redirects exactly as the glossary stood at the end of that thread. Every text is put in the page
as text (never as HTML), and only http(s) links to posts are made.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.exports.files import staged_directory
from terrarium_dagster.exports.references import linked_views
from terrarium_dagster.glossary.models import EntryView
from terrarium_dagster.glossary.store import GlossaryStore

SITE_DIR = "site"
DATA_FILE = "glossary-data.js"
_POST_REF = re.compile(r">>(\d+)")


@dataclass(frozen=True)
class SiteReport:
    out_dir: str
    threads: int
    entries: int
    versions: int
    bytes: int


def _version(view: EntryView) -> dict[str, Any]:
    return {
        "term": view.term,
        "aliases": list(view.aliases),
        "definition": view.definition,
        "status": view.status,
        "tags": list(view.tags),
        "merged_into": view.merged_into,
        "deleted": view.deleted,
    }


def site_data(store: GlossaryStore, corpus: Corpus, *, story: str) -> dict[str, Any]:
    """Everything the page needs, versions keyed by thread position (0 = the first thread)."""
    all_threads = corpus.threads()
    thread_keys = {thread.id: thread.key for thread in all_threads}
    finished = []
    for thread in all_threads:
        state = store.progress.thread_state(thread.id)
        if state is None or state.end_revision_id is None:
            break  # threads finish in story order: the first unfinished one ends the story so far
        finished.append(thread)
    versions: dict[int, list[dict[str, Any]]] = {}
    last: dict[int, str] = {}
    # Sources only accumulate (a merge moves them): each is kept once, with the positions from
    # which and until which it holds, not repeated in every version of its entry.
    sources: dict[int, dict[tuple[str, int, str], list[Any]]] = {}
    cited_posts: set[int] = set()
    for position, thread in enumerate(finished):
        seen: set[int] = set()
        views = store.glossary.glossary_as_of_thread(thread.id, include_deleted=True)
        for view in linked_views(views):
            version = _version(view)
            fingerprint = json.dumps(version, sort_keys=True)
            seen.add(view.id)
            if last.get(view.id) != fingerprint:
                versions.setdefault(view.id, []).append({"from": position, **version})
                last[view.id] = fingerprint
                cited_posts.update(int(n) for n in _POST_REF.findall(view.definition))
            held = sources.setdefault(view.id, {})
            now = set()
            for item in view.provenance:
                key = (
                    thread_keys.get(item.thread_id, str(item.thread_id)),
                    item.post_id,
                    item.quote,
                )
                now.add(key)
                if key not in held or held[key][4] is not None:
                    held[key] = [*key, position, None]
                    cited_posts.add(item.post_id)
            for key, record in held.items():
                if key not in now and record[4] is None:
                    record[4] = position
        for entry_id in list(last):
            if entry_id not in seen and last[entry_id] != "absent":
                versions[entry_id].append({"from": position, "absent": True})
                last[entry_id] = "absent"
    posts: dict[str, list[Any]] = {}
    for post_id in sorted(cited_posts):
        post = corpus.post(post_id)
        if post is None:
            continue
        url = corpus.post_url(post)
        posts[str(post_id)] = [thread_keys.get(post.thread_id, ""), url if _http(url) else None]
    return {
        "story": story,
        "threads": [
            {"key": thread.key, "title": thread.title, "position": index}
            for index, thread in enumerate(finished)
        ],
        "thread_titles": {thread.key: thread.title for thread in all_threads},
        "entries": {str(entry_id): history for entry_id, history in sorted(versions.items())},
        "sources": {
            str(entry_id): list(held.values()) for entry_id, held in sorted(sources.items()) if held
        },
        "posts": posts,
    }


def _http(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("http://", "https://"))


def build_site(
    store: GlossaryStore, corpus: Corpus, out_dir: str | Path, *, story: str | None = None
) -> SiteReport:
    """Write the site into `out_dir` (replaced whole, atomically)."""
    title = story or _story_name(corpus)
    data = site_data(store, corpus, story=title)
    page = resources.files("terrarium_dagster.exports.site_assets").joinpath("index.html")
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    payload = payload.replace("</", "<\\/")  # never closes the script element it sits in
    target = Path(out_dir)
    with staged_directory(target) as staging:
        (staging / "index.html").write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
        (staging / DATA_FILE).write_text(f"window.TERRARIUM_SITE = {payload};\n", encoding="utf-8")
    size = sum(path.stat().st_size for path in target.rglob("*") if path.is_file())
    return SiteReport(
        out_dir=str(target),
        threads=len(data["threads"]),
        entries=len(data["entries"]),
        versions=sum(len(history) for history in data["entries"].values()),
        bytes=size,
    )


def _story_name(corpus: Corpus) -> str:
    threads = corpus.threads()
    if threads:
        first = threads[0].title
        name = re.split(r"\s*(?:#\d+|:|—| - )", first, maxsplit=1)[0].strip()
        if name:
            return name
    return corpus.path.stem
