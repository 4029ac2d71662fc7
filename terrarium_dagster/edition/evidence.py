"""An entry's evidence as of a thread: what its edition request may show the model.

Everything here is read as of the thread's end (the glossary boundary): the entry's state and
live sources, its revisions up to the boundary, the source posts (their text around the quote
and the posts just before and after, within a character budget), and the entries its working
definition links to as they stood then. Nothing of a later thread is read, except to name what
the answer must not hold: the names the reader meets only later (`later_names`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.edition.rewrite_prompt import EditionRequest, NameMatcher, SourceShown
from terrarium_dagster.exports.references import NameIndex, find_references, is_page_entry
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView
from terrarium_dagster.store.normalize import normalize_term

MAX_REVISIONS = 8
REVISION_CHARS = 240
LINKED_CHARS = 240
MAX_LINKED = 8
MAX_SOURCES = 12
FIRST_SOURCES = 4  # of a long list: the first few and the latest ones
EXCERPT_CHARS = 420
NEARBY_CHARS = 200
NEARBY_POSTS = 1


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _around(text: str, quote: str, limit: int) -> str:
    """`limit` characters of `text` centred on `quote` (its start when it is not found)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    at = flat.lower().find(" ".join(quote.split()).lower()) if quote else -1
    start = max(0, at - limit // 3) if at >= 0 else 0
    piece = flat[start : start + limit]
    return ("…" if start else "") + piece.strip() + ("…" if start + limit < len(flat) else "")


@dataclass(frozen=True)
class ThreadGlossary:
    """The glossary as of one thread's end, with what resolves its names."""

    thread: Thread
    boundary: int
    views: dict[int, EntryView]
    index: NameIndex

    @classmethod
    def read(cls, store: GlossaryStore, thread: Thread, boundary: int) -> ThreadGlossary:
        views = store.history.glossary_as_of(boundary, include_deleted=True)
        return cls(thread, boundary, {view.id: view for view in views}, NameIndex(views))

    def names(self) -> set[str]:
        """Every name (term or alias, deleted entries' too) the reader could have met by now."""
        found: set[str] = set()
        for view in self.views.values():
            found.add(normalize_term(view.term))
            found.update(normalize_term(alias) for alias in view.aliases)
        return found


def store_names(store: GlossaryStore) -> list[str]:
    """Every name (term or alias) of every entry the store has now, deleted ones included."""
    newest = store.history.glossary_as_of(store.history.last_revision_id(), include_deleted=True)
    return sorted({name for view in newest for name in (view.term, *view.aliases)})


def later_names(
    store: GlossaryStore, known: ThreadGlossary, names: Sequence[str] | None = None
) -> list[str]:
    """The names of entries (terms and aliases) the store has only after the thread: what an
    answer as of the thread must not hold (unless the evidence it was shown holds it too,
    `unshown`). `names`: the store's names now (`store_names`), when already read."""
    seen = known.names()
    chosen = store_names(store) if names is None else names
    return [name for name in chosen if (norm := normalize_term(name)) and norm not in seen]


def unshown(names: Sequence[str] | NameMatcher, shown: str) -> NameMatcher:
    """The names of `names` that the text shown does not hold as words."""
    matcher = names if isinstance(names, NameMatcher) else NameMatcher(names)
    held = set(matcher.found_in(shown))
    return NameMatcher(name for name in matcher.names() if name not in held)


def _revisions(
    store: GlossaryStore, corpus: Corpus, entry_id: int, boundary: int
) -> tuple[tuple[int, str, str, str], ...]:
    rows = [r for r in store.history.revisions(entry_id) if r.id <= boundary]
    rows = rows[-MAX_REVISIONS:]
    shown: list[tuple[int, str, str, str]] = []
    for revision in rows:
        key = "-"
        if revision.thread_id is not None:
            try:
                key = corpus.thread(revision.thread_id).key
            except Exception:  # a thread the corpus no longer has: its id stands
                key = str(revision.thread_id)
        definition = str((revision.new_value or {}).get("definition") or "")
        shown.append((revision.id, revision.action, key, _cut(definition, REVISION_CHARS)))
    return tuple(shown)


def _sources(corpus: Corpus, view: EntryView, budget: int) -> tuple[SourceShown, ...]:
    by_post: dict[int, tuple[int, str]] = {}
    for source in view.provenance:
        if source.post_id not in by_post or (source.quote and not by_post[source.post_id][1]):
            by_post[source.post_id] = (source.thread_id, source.quote)
    posts = sorted(by_post)
    if len(posts) > MAX_SOURCES:
        posts = posts[:FIRST_SOURCES] + posts[-(MAX_SOURCES - FIRST_SOURCES) :]
    shown: list[SourceShown] = []
    left = budget
    for post_id in posts:
        thread_id, quote = by_post[post_id]
        post = corpus.post(post_id)
        try:
            key = corpus.thread(thread_id).key
        except Exception:
            key = str(thread_id)
        excerpt = ""
        nearby: list[tuple[int, str]] = []
        if post is not None and left > 0:
            excerpt = _around(post.text, quote, min(EXCERPT_CHARS, left))
            left -= len(excerpt)
            before, after = corpus.neighbours(post, NEARBY_POSTS)
            for near in (*before, *after):
                if left <= NEARBY_CHARS // 2:
                    break
                text = _cut(near.text, min(NEARBY_CHARS, left))
                if text:
                    nearby.append((near.id, text))
                    left -= len(text)
        shown.append(SourceShown(post_id, key, quote, excerpt, tuple(nearby)))
        left -= len(quote)
    return tuple(shown)


def _linked(known: ThreadGlossary, view: EntryView) -> tuple[tuple[str, str], ...]:
    linked: list[tuple[str, str]] = []
    seen: set[int] = set()
    for reference in find_references(view.definition):
        target = known.index.resolve(reference.target)
        if target is None or target == view.id or target in seen:
            continue
        seen.add(target)
        other = known.views[target]
        linked.append((other.term, _cut(other.definition, LINKED_CHARS)))
        if len(linked) >= MAX_LINKED:
            break
    return tuple(linked)


def entry_request(
    store: GlossaryStore,
    corpus: Corpus,
    known: ThreadGlossary,
    view: EntryView,
    *,
    budget: int,
) -> EditionRequest:
    """What the edition request of `view` (as of `known`'s thread) shows the model."""
    return EditionRequest(
        entry_id=view.id,
        term=view.term,
        thread_key=known.thread.key,
        aliases=tuple(view.aliases),
        status=view.status,
        definition=view.definition,
        revisions=_revisions(store, corpus, view.id, known.boundary),
        sources=_sources(corpus, view, budget),
        linked=_linked(known, view),
    )


def changed_entries(
    store: GlossaryStore, known: ThreadGlossary, previous_boundary: int
) -> list[EntryView]:
    """The page entries (live, not rejected) the thread changed: a revision or a source
    recorded or superseded between the previous thread's end and this one's, in id order."""
    views, _ = store.history.changes_between(previous_boundary, known.boundary)
    return sorted(
        (known.views[v.id] for v in views if v.id in known.views and is_page_entry(v)),
        key=lambda v: v.id,
    )


def shown_text(requests: Sequence[EditionRequest]) -> str:
    """All the text a set of requests shows (what later names may appear in)."""
    parts: list[str] = []
    for request in requests:
        parts += [request.term, request.definition, *request.aliases]
        for source in request.sources:
            parts += [source.quote, source.excerpt, *(text for _, text in source.nearby)]
        for term, definition in request.linked:
            parts += [term, definition]
        parts += [definition for _, _, _, definition in request.revisions]
    return " ".join(parts)
