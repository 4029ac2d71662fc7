"""The curator: reviews a thread's tentative entries with evidence and applies its decisions.

`curate_thread` gathers the tentative entries (first seen in the thread first, then those still
tentative from earlier threads, up to a cap), shows each with the posts around its first
appearance, its sources and similar entries (`curation.review_prompt` lays the message out), and
each rejected entry that posts of the thread name again (`NAMED_AGAIN_POSTS`) with those posts
(a name first met in passing may be one the story goes on to use: CONFIRM restores it, no answer
keeps it rejected, with no decision row),
asks the model through the engine's ``chat`` callable, and applies the valid decisions in ONE store
transaction:

- CONFIRM -> status ``confirmed``;
- REJECT  -> status ``rejected`` (the entry is kept: deletes are soft, rejection is softer);
- MERGE   -> `GlossaryStore.merge_entries`: the source's names become aliases of the target, the
             source becomes a redirect, its provenance moves;
- REVISE  -> the new definition, and the entry is confirmed.

Every applied decision is a revision whose reason is the model's reasoning, plus a
``curator_decision`` row pointing at that revision. A malformed answer (no JSON, invalid items,
unknown ids, a MERGE into itself or into an entry that cannot take it) is answered with one error
note asking again for the entries concerned; what is still malformed after that stays tentative
and is reported. Entries the answer does not mention stay tentative (recorded as such, so they
are not sent again until a thread changes them). Nothing is confirmed that the model did not
confirm.

The request continues the cached prefix: ``prefix_messages`` (the run's system prompt and
whatever the engine keeps stable) followed by the curate message, so vLLM's prefix cache hits.
The ``chat`` callable belongs to the engine (HTTP, retries and call accounting live there); it
returns a `ChatResult` or a ``(content, usage)`` pair.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import is_book
from terrarium_dagster.corpus.units import Post, Thread
from terrarium_dagster.curation.decision_undo import undo_decision
from terrarium_dagster.curation.decisions import CurateDecision, CurationReport, UndoResult
from terrarium_dagster.curation.review_prompt import (
    BOOK_LABEL,
    QM_LABEL,
    TOKENS_PER_DECISION,
    CurationItem,
    EvidencePost,
    ParsedAnswer,
    ThreadHeading,
    TokenCounter,
    build_curate_message,
    build_retry_message,
    parse_answer,
    parse_decisions,
    plan_batches,
)
from terrarium_dagster.errors import EntryNotFoundError, InputError, StoreError
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import Entry, Revision
from terrarium_dagster.store.normalize import one_letter_apart
from terrarium_dagster.store.rollback import ROLLBACK_ACTION
from terrarium_dagster.terms.given_names import familiar_forms, familiar_pair
from terrarium_dagster.terms.text_search import find_term

__all__ = [
    "KEPT_TENTATIVE",
    "ChatCallable",
    "CurateDecision",
    "CurationItem",
    "CurationReport",
    "ReviewSelection",
    "UndoResult",
    "build_curate_message",
    "curate_thread",
    "gather_items",
    "parse_answer",
    "parse_decisions",
    "undo_decision",
]

log = logging.getLogger(__name__)

ChatCallable = Callable[[list[dict[str, Any]]], Any]

#: The curator_decision row of an entry a curation reviewed and left tentative on purpose (the
#: answer did not decide it). It changes nothing, so it has no revision.
KEPT_TENTATIVE = "TENTATIVE"
DEFAULT_MESSAGE_TOKENS = 6000
DEFAULT_MAX_ENTRIES = 60
EVIDENCE_RADIUS = 3
SIMILAR_LIMIT = 3
#: A rejected entry comes up for review again when this many posts of a later thread name it
#: (a name first met in passing that the story goes on using), at most `MAX_NAMED_AGAIN` a thread.
NAMED_AGAIN_POSTS = 2
MAX_NAMED_AGAIN = 12
#: Threads after which an entry left tentative and changed by no thread since is reviewed again
#: (and again after as many more), shown with the threads since one last named it (a name met once
#: that the story never names again is met in passing).
QUIET_THREADS = 3
_CACHED_THREADS = 4


# -- evidence ------------------------------------------------------------------------------------


class _ThreadPosts:
    """The posts of a few threads, loaded once each (the evidence of many entries shares them)."""

    def __init__(self, corpus: Corpus) -> None:
        self._corpus = corpus
        self._threads: OrderedDict[int, tuple[list[Post], dict[int, int]]] = OrderedDict()

    def around(self, thread_id: int, post_id: int, radius: int) -> list[Post]:
        if thread_id not in self._threads:
            try:
                posts = list(self._corpus.posts(thread_id))
            except InputError:
                return []
            self._threads[thread_id] = (posts, {post.id: i for i, post in enumerate(posts)})
            while len(self._threads) > _CACHED_THREADS:
                self._threads.popitem(last=False)
        self._threads.move_to_end(thread_id)
        posts, positions = self._threads[thread_id]
        index = positions.get(post_id)
        if index is None:
            return []
        return posts[max(0, index - radius) : index + radius + 1]


def _label(post: Post, *, book: bool) -> str:
    if book:
        return BOOK_LABEL
    if post.is_vote_tally:
        return "vote tally"
    return QM_LABEL if post.is_qm else "reader"


def _evidence(
    entry: Entry, provenance: Sequence[Any], posts: _ThreadPosts, radius: int, *, book: bool
) -> list[EvidencePost]:
    anchors: list[tuple[int, int]] = []
    if entry.first_seen_post is not None and entry.first_seen_thread is not None:
        anchors.append((entry.first_seen_thread, entry.first_seen_post))
    earliest = sorted(provenance, key=lambda p: p.post_id)[:1]
    anchors.extend((p.thread_id, p.post_id) for p in earliest)
    for thread_id, post_id in anchors:
        window = posts.around(thread_id, post_id, radius)
        if window:
            return [
                EvidencePost(
                    post_id=post.id,
                    thread_id=post.thread_id,
                    label=_label(post, book=book),
                    text=post.text,
                    first=post.id == post_id,
                )
                for post in window
            ]
    return []


#: Name words shorter than this find no neighbours by name form (`_name_neighbours`).
_NAME_WORD_CHARS = 4
#: Two name words of at least this many letters one letter apart are one spelled twice.
_SPELLING_CHARS = 7
_NAME_WORDS = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


def _name_words(name: str) -> set[str]:
    """The words of a name, split at spaces and hyphens, casefolded."""
    return {word.casefold() for word in _NAME_WORDS.findall(name)}


def _words_meet(word: str, other: str) -> bool:
    """Is `other` the name word `word`, a longer form of it or of its stem ("world" and
    "worlders"), or the same long word spelled with one letter more, less or changed?"""
    if word == other or other.startswith(word) or word.startswith(other):
        return min(len(word), len(other)) >= _NAME_WORD_CHARS
    return min(len(word), len(other)) >= _SPELLING_CHARS - 1 and one_letter_apart(word, other)


def _name_neighbours(store: GlossaryStore, entry: Entry, limit: int) -> list[Entry]:
    """Entries whose names share a word with one of `entry`'s names, in any form ("Cap'n Silver"
    and "John Silver", "Isle of Treasure" and "Treasure Island", "Upper-worlders" and
    "Upper-world", "Hampsted" and "Hampstead"): the forms of one name a merge needs side by
    side, which a search ranking by definitions too may leave out. A word that many entries
    share (a title) counts after a rarer one, and of the entries sharing a word, one named by that
    word alone comes first ("Baskerville" beside "Rodger Baskerville", before "Charles
    Baskerville" and "Hugo Baskerville"). A given name meets its familiar and pet forms ("Lizzy"
    and "Elizabeth Bennet", "Davie" and "David Balfour": `terms.given_names`)."""
    words = set().union(*(_name_words(name) for name in (entry.term, *entry.aliases)))
    words |= {form for word in words for form in familiar_forms(word)}
    ranked: dict[int, tuple[tuple[int, bool, int], Entry]] = {}
    for word in sorted(w for w in words if len(w) >= _NAME_WORD_CHARS):
        sharing = [
            hit.entry
            for hit in store.glossary.search(word[:_NAME_WORD_CHARS], limit=4 * limit + 8)
            if hit.entry.id != entry.id
            and any(
                _words_meet(word, other) or familiar_pair(word, other)
                for name in (hit.entry.term, *hit.entry.aliases)
                for other in _name_words(name)
            )
        ]
        for other in sharing:
            alone = any(_name_words(name) == {word} for name in (other.term, *other.aliases))
            rank = (len(sharing), not alone, other.id)
            if other.id not in ranked or ranked[other.id][0] > rank:
                ranked[other.id] = (rank, other)
    order = sorted(ranked.values(), key=lambda item: item[0])
    return [other for _rank, other in order][:limit]


def _similar(store: GlossaryStore, entry: Entry, limit: int) -> list[Entry]:
    """The entries shown beside `entry`: those whose names share a word with its names
    (`_name_neighbours`, at most `limit`), then up to `limit` more that a search of its names
    ranks first."""
    found: dict[int, Entry] = {
        other.id: other
        for other in _name_neighbours(store, entry, limit)
        if not other.deleted and other.merged_into is None
    }
    limit += len(found)
    for name in (entry.term, *entry.aliases):
        for hit in store.glossary.search(name, limit=limit + 2):
            other = hit.entry
            if other.id == entry.id or other.id in found or other.deleted:
                continue
            if other.merged_into is not None:
                continue
            found[other.id] = other
            if len(found) >= limit:
                return list(found.values())
    return list(found.values())


class ReviewSelection(NamedTuple):
    """What a curation reviews: ``items`` (with evidence), ``deferred`` (over the cap: they come
    up at the next thread) and ``unchanged`` (left tentative by an earlier review and not
    changed since: not sent again until a thread touches them)."""

    items: list[CurationItem]
    deferred: list[int]
    unchanged: list[int]


def _reviewed_unchanged(
    store: GlossaryStore,
    candidates: Sequence[Entry],
    positions: dict[int, int],
    current: int,
) -> dict[int, tuple[int, int]]:
    """Candidates an earlier thread's curation left tentative that no later thread changed:
    the position of the thread whose curation last left each so, and of the thread that last
    changed it (its create or an update, that thread or an earlier one)."""
    last_review: dict[int, int] = {}
    for row in store.curation.curator_decisions():
        if row["decision"] != KEPT_TENTATIVE or row["entry_id"] is None:
            continue
        position = positions.get(row["thread_id"])
        if position is None or position >= current:
            continue
        entry_id = int(row["entry_id"])
        last_review[entry_id] = max(last_review.get(entry_id, -1), position)
    unchanged: dict[int, tuple[int, int]] = {}
    for entry in candidates:
        reviewed_at = last_review.get(entry.id)
        if reviewed_at is None:
            continue
        changed_at = [
            positions.get(revision.thread_id or -1, current)
            for revision in _standing(store.history.revisions(entry.id))
        ]
        if not any(position > reviewed_at for position in changed_at):
            unchanged[entry.id] = (reviewed_at, max(changed_at, default=reviewed_at))
    return unchanged


def _standing(revisions: Sequence[Revision]) -> list[Revision]:
    """The revisions (in id order) whose changes stand: a rollback's own revision, which puts the
    entry back as it stood at its boundary, and the revisions it undid (after that boundary) left
    out. A run restored to a snapshot (or rewound) then curates as the run it went back to did:
    the future it undid is no change since an earlier review."""
    standing: list[Revision] = []
    for revision in revisions:
        if revision.action == ROLLBACK_ACTION:
            boundary = (revision.detail or {}).get("boundary")
            if isinstance(boundary, int):
                standing = [kept for kept in standing if kept.id <= boundary]
                continue
        standing.append(revision)
    return standing


def gather_items(
    store: GlossaryStore,
    corpus: Corpus,
    thread_id: int,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    evidence_radius: int = EVIDENCE_RADIUS,
    similar_limit: int = SIMILAR_LIMIT,
) -> ReviewSelection:
    """The tentative entries to review at the end of ``thread_id``, with their evidence.

    Order: entries first seen in the thread, then tentative entries the thread touched, then the
    other tentative entries oldest first. Entries an earlier curation deliberately left tentative
    (the answer did not decide them) are not sent again until a later thread changes them or
    `QUIET_THREADS` threads have passed without changing them (shown as not named since); those
    left tentative because an answer was malformed come up again. At most ``max_entries`` are
    reviewed; the rest are deferred to the next thread's curation (at the story's last thread,
    which has none, all are reviewed). At a book's last thread every entry left tentative is
    reviewed, however recently, each shown as at the story's end (`CurationItem.story_ends`: no
    chapter is to come that could name it). Entries first seen in a later thread (story order)
    are never reviewed here.
    """
    return _gather(
        store,
        corpus,
        corpus.thread(thread_id),
        max_entries=max_entries,
        evidence_radius=evidence_radius,
        similar_limit=similar_limit,
    )


def _gather(
    store: GlossaryStore,
    corpus: Corpus,
    thread: Thread,
    *,
    max_entries: int,
    evidence_radius: int = EVIDENCE_RADIUS,
    similar_limit: int = SIMILAR_LIMIT,
) -> ReviewSelection:
    """`gather_items` for `thread`."""
    thread_id = thread.id
    positions = {t.id: t.position for t in corpus.threads()}
    touched = {entry.id for entry in store.glossary.entries_touching(thread_id)}
    candidates = [
        entry
        for entry in store.glossary.entries(statuses=["tentative"])
        if not entry.deleted
        and entry.merged_into is None
        and positions.get(entry.first_seen_thread or thread_id, thread.position) <= thread.position
    ]
    reviewed_at = _reviewed_unchanged(store, candidates, positions, thread.position)
    last = thread.position >= max(positions.values(), default=thread.position)
    book = is_book(corpus)  # its posts are paragraphs, all of them the story's
    story_ends = last and book  # a book's last chapter: no later one names what it leaves
    quiet = {
        entry_id: thread.position - changed_at
        for entry_id, (position, changed_at) in reviewed_at.items()
        if thread.position - position >= QUIET_THREADS or story_ends
    }  # reviewed again, shown with the threads since it was last named: the curator may let a
    # name met once go (after `QUIET_THREADS` threads, then every `QUIET_THREADS` more, and at
    # a book's end, which no chapter follows)
    unchanged = set(reviewed_at) - set(quiet)
    candidates = [entry for entry in candidates if entry.id not in unchanged]

    def rank(entry: Entry) -> tuple[int, int]:
        if entry.first_seen_thread == thread_id:
            return (0, entry.id)
        return (1 if entry.id in touched else 2, entry.id)

    candidates.sort(key=rank)
    if last:
        # the story's last thread: no later curation would take what it deferred (a book told in
        # one chapter, Daddy-Long-Legs, kept 191 entries tentative), so it reviews them all,
        # in as many messages as they take
        max_entries = max(max_entries, len(candidates))
    chosen, deferred = candidates[:max_entries], [e.id for e in candidates[max_entries:]]
    posts = _ThreadPosts(corpus)
    items: list[CurationItem] = []
    for entry in chosen:
        provenance = store.provenance.for_entry(entry.id)
        items.append(
            CurationItem(
                entry=entry,
                provenance=provenance,
                evidence=_evidence(entry, provenance, posts, evidence_radius, book=book),
                similar=_similar(store, entry, similar_limit),
                new_in_thread=entry.first_seen_thread == thread_id or entry.id in touched,
                quiet_threads=quiet.get(entry.id, 0),
                story_ends=story_ends,
            )
        )
    room = min(MAX_NAMED_AGAIN, max_entries - len(items))
    for entry, naming in _named_again(store, corpus, thread_id, positions)[: max(room, 0)]:
        items.append(
            CurationItem(
                entry=entry,
                provenance=store.provenance.for_entry(entry.id),
                evidence=[
                    EvidencePost(
                        post_id=post.id,
                        thread_id=post.thread_id,
                        label=_label(post, book=book),
                        text=post.text,
                    )  # the posts that name it again, none of them its first appearance
                    for post in naming[: 2 * evidence_radius + 1]
                ],
                similar=_similar(store, entry, similar_limit),
                new_in_thread=False,
                named_again=tuple(post.id for post in naming),
            )
        )
    return ReviewSelection(items, deferred, sorted(unchanged))


def _named_again(
    store: GlossaryStore, corpus: Corpus, thread_id: int, positions: dict[int, int]
) -> list[tuple[Entry, list[Post]]]:
    """Rejected entries (first seen in an earlier thread) that at least `NAMED_AGAIN_POSTS`
    posts of this thread name, with those posts: most named first, then oldest. A name the
    curator rejected as mentioned in passing may be one the story goes on to use; the curator
    sees it again with the new posts and may CONFIRM it (restore it) or leave it rejected."""
    current = positions.get(thread_id)
    rejected = [
        entry
        for entry in store.glossary.entries(statuses=["rejected"])
        if not entry.deleted
        and entry.merged_into is None
        and current is not None
        and positions.get(entry.first_seen_thread or thread_id, current) < current
    ]
    if not rejected:
        return []
    try:
        thread_posts = list(corpus.posts(thread_id))
    except InputError:
        return []
    lowered = [post.text.casefold() for post in thread_posts]
    whole = "\x00".join(lowered)  # a word in none of the posts is not in this either
    found: list[tuple[Entry, list[Post]]] = []
    for entry in rejected:
        # a name's longest word must be in a post's text before the pattern is tried (cheap),
        # and first in the thread's (a long book's thousands of rejected names, each post of
        # a chapter looked at for each: most of a curation's time on Les Misérables)
        names = [
            (name, word)
            for name in (entry.term, *entry.aliases)
            if (word := max(re.findall(r"\w+", name.casefold()) or [""], key=len)) in whole
        ]
        if not names:
            continue
        naming = [
            post
            for post, text in zip(thread_posts, lowered, strict=True)
            if any(word in text and find_term(post.text, name) for name, word in names)
        ]
        if len(naming) >= NAMED_AGAIN_POSTS:
            found.append((entry, naming))
    found.sort(key=lambda pair: (-len(pair[1]), pair[0].id))
    return found


# -- the model's answer --------------------------------------------------------------------------


def _content_and_usage(result: Any) -> tuple[str, Any]:
    if isinstance(result, tuple):
        content, usage = result
        return content or "", usage
    message = getattr(result, "message", None)
    content = getattr(message, "content", None) if message is not None else None
    if content is None:
        content = getattr(result, "content", None)
    return content or "", getattr(result, "usage", None)


def _usage_figure(usage: Any, name: str) -> int:
    if usage is None:
        return 0
    value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
    if value is None and name == "cached_tokens":
        details = (
            usage.get("prompt_tokens_details")
            if isinstance(usage, dict)
            else getattr(usage, "prompt_tokens_details", None)
        )
        if details is not None:
            value = (
                details.get("cached_tokens")
                if isinstance(details, dict)
                else getattr(details, "cached_tokens", None)
            )
    return int(value or 0)


def _answered(result: Any, report: CurationReport) -> tuple[str, bool]:
    """An answer's text and whether it was cut off; its cost goes on the report."""
    content, usage = _content_and_usage(result)
    report.calls += 1
    report.prompt_tokens += _usage_figure(usage, "prompt_tokens")
    report.cached_tokens += _usage_figure(usage, "cached_tokens")
    report.completion_tokens += _usage_figure(usage, "completion_tokens")
    return content, getattr(result, "finish_reason", None) == "length"


def answer_decides(result: Any) -> bool:
    """Whether a reply cut off by max_tokens still decides something (complete decision lines):
    the model session takes such a reply as an answer, and `_decide_batch` asks again about the
    entries it did not reach; a cut reply that decides nothing is asked again by the session."""
    content, _ = _content_and_usage(result)
    return bool(parse_answer(content, cut=True).decisions)


def _cut_short(review: _Review, asked: Iterable[int]) -> None:
    """A cut-off answer did not reach these entries: not a decision, ask again about them."""
    missed = [i for i in asked if i not in review.accepted and i not in review.redo]
    review.problems.extend(f"E{i}: the answer was cut off before deciding it" for i in missed)
    review.redo.update(missed)


@dataclass(slots=True)
class _Review:
    """The decisions accepted so far for a batch and what is still wrong."""

    batch: set[int]
    accepted: dict[int, CurateDecision] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    redo: set[int] = field(default_factory=set)


def _target_problem(
    store: GlossaryStore, decision: CurateDecision, accepted: dict[int, CurateDecision]
) -> str | None:
    source, target_id = decision.entry_id, decision.target_entry_id
    assert target_id is not None
    if target_id == source:
        return f"E{source}: MERGE into itself; name another entry as target_entry_id"
    try:
        target = store.glossary.get_entry(target_id)
    except EntryNotFoundError:
        return f"E{source}: MERGE target E{target_id} does not exist"
    if target.deleted:
        return f"E{source}: MERGE target E{target_id} is deleted"
    if target.merged_into is not None:
        return (
            f"E{source}: MERGE target E{target_id} was merged into E{target.merged_into}; "
            f"merge into E{target.merged_into} instead"
        )
    planned = accepted.get(target_id)
    restored = planned is not None and planned.decision == "CONFIRM"  # by this answer
    if target.status == "rejected" and not restored:
        return f"E{source}: MERGE target E{target_id} is rejected"
    if planned is not None and planned.decision in ("MERGE", "REJECT"):
        verb = "merged away" if planned.decision == "MERGE" else "rejected"
        return f"E{source}: MERGE target E{target_id} is {verb} in the same answer"
    if any(
        other.decision == "MERGE" and other.target_entry_id == source for other in accepted.values()
    ):
        return f"E{source}: another entry is merged into E{source}; it cannot be merged away too"
    return None


def _review(store: GlossaryStore, parsed: ParsedAnswer, review: _Review, wanted: set[int]) -> None:
    """Accept the valid decisions of ``parsed`` for entries in ``wanted``; record problems."""
    review.problems.extend(parsed.problems)
    unattributed = not parsed.found_json or bool(parsed.problems)
    seen: dict[int, int] = {}
    for decision in parsed.decisions:
        seen[decision.entry_id] = seen.get(decision.entry_id, 0) + 1
    # Merges last: a merge is judged against the answer's other decisions wherever they stand
    # in it (a target the same answer restores with CONFIRM is live; one it rejects is not).
    for decision in sorted(parsed.decisions, key=lambda d: d.decision == "MERGE"):
        entry_id = decision.entry_id
        if entry_id not in review.batch:
            review.problems.append(f"E{entry_id} is not one of the entries under review")
            continue
        if entry_id not in wanted or entry_id in review.accepted:
            continue
        if seen[entry_id] > 1:
            review.problems.append(f"E{entry_id}: more than one decision; give exactly one")
            review.redo.add(entry_id)
            continue
        if decision.decision == "MERGE":
            problem = _target_problem(store, decision, review.accepted)
            if problem is not None:
                review.problems.append(problem)
                review.redo.add(entry_id)
                continue
        review.accepted[entry_id] = decision
    if unattributed:
        review.redo |= {i for i in wanted if i not in review.accepted}
    review.redo -= set(review.accepted)


@dataclass(slots=True)
class _Look:
    """One batch under review: its request, what its answers decided so far, and the retry it
    still needs (None: none)."""

    messages: list[dict[str, Any]]
    batch_ids: Sequence[int]
    review: _Review
    answer: str = ""
    retry: list[dict[str, Any]] | None = None
    first_problems: list[str] = field(default_factory=list)


def _request(prefix: list[dict[str, Any]], message: str) -> list[dict[str, Any]]:
    """A batch's first request: the curator's prefix and its review message."""
    return [*prefix, {"role": "user", "content": message}]


def _first_look(
    store: GlossaryStore,
    request: list[dict[str, Any]],
    batch_ids: Sequence[int],
    report: CurationReport,
    first: Any,
) -> _Look:
    """A batch's first answer (to `request`) reviewed, with the retry it needs for what it got
    wrong."""
    look = _Look(request, batch_ids, _Review(set(batch_ids)))
    review = look.review
    look.answer, cut = _answered(first, report)
    _review(store, parse_answer(look.answer, cut=cut), review, set(batch_ids))
    if cut:
        _cut_short(review, batch_ids)
    redo = sorted(review.redo)
    if review.problems and redo:
        report.retries += 1
        look.first_problems = list(review.problems)
        review.problems.clear()
        look.retry = [
            *look.messages,
            {"role": "assistant", "content": look.answer},
            {"role": "user", "content": build_retry_message(look.first_problems, redo)},
        ]
    return look


def _second_look(store: GlossaryStore, look: _Look, second: Any, report: CurationReport) -> None:
    """The retry's answer reviewed: what it decides about the entries asked again."""
    review, redo = look.review, sorted(look.review.redo)
    answer, cut = _answered(second, report)
    review.redo.clear()
    _review(store, parse_answer(answer, cut=cut), review, set(redo))
    if cut:  # still not reached: they come up again at the next thread's curation
        _cut_short(review, redo)
    log.warning(
        "curator answer had %d problem(s); after one retry %d remain",
        len(look.first_problems),
        len(review.problems),
    )


def _settled(look: _Look, report: CurationReport) -> tuple[dict[int, CurateDecision], set[int]]:
    """The accepted decisions of a reviewed batch, and the entries still malformed (its
    remaining problems go on the report)."""
    report.problems.extend(look.review.problems)
    return look.review.accepted, set(look.review.redo)


def _decide_batch(
    store: GlossaryStore,
    chat: ChatCallable,
    prefix: list[dict[str, Any]],
    message: str,
    batch_ids: Sequence[int],
    report: CurationReport,
    first: Any = None,
) -> tuple[dict[int, CurateDecision], set[int]]:
    """The accepted decisions of one batch, and the entries still malformed after the retry.
    `first` is the batch's first answer when it was asked already (beside the other batches)."""
    request = _request(prefix, message)
    look = _first_look(store, request, batch_ids, report, chat(request) if first is None else first)
    if look.retry is not None:
        _second_look(store, look, chat(look.retry), report)
    return _settled(look, report)


def _decide_batches(
    store: GlossaryStore,
    chat: ChatCallable,
    chat_many: Callable[[list[list[dict[str, Any]]]], list[Any]],
    prefix: list[dict[str, Any]],
    batches: Sequence[tuple[str, list[int]]],
    report: CurationReport,
) -> list[tuple[dict[int, CurateDecision], set[int]]]:
    """`_decide_batch` for every batch, side by side: every first request at once, then every
    retry at once (a retry depends only on its own batch's first answer; the glossary does not
    change until the decisions are applied together), each batch reviewed in batch order."""
    requests = [_request(prefix, message) for message, _ in batches]
    firsts = chat_many(requests)
    looks = [
        _first_look(store, request, batch_ids, report, first)
        for request, (_, batch_ids), first in zip(requests, batches, firsts, strict=True)
    ]
    again = [look for look in looks if look.retry is not None]
    retries = [look.retry for look in again if look.retry is not None]
    seconds = chat_many(retries) if len(retries) > 1 else [chat(retry) for retry in retries]
    for look, second in zip(again, seconds, strict=True):
        _second_look(store, look, second, report)
    return [_settled(look, report) for look in looks]


# -- applying ------------------------------------------------------------------------------------


def _decision_revision(store: GlossaryStore, entry_id: int, before: int) -> int | None:
    """The revision the decision wrote on ``entry_id`` (None if it changed nothing)."""
    revisions = store.history.revisions(entry_id, since_id=before)
    return revisions[-1].id if revisions else None


def _apply(
    store: GlossaryStore,
    actor: Actor,
    thread_id: int,
    decision: CurateDecision,
    report: CurationReport,
) -> None:
    entry_id = decision.entry_id
    reason = decision.reasoning
    before = store.history.last_revision_id()
    if decision.decision == "CONFIRM":
        store.glossary.update_entry(actor, entry_id, status="confirmed", reason=reason)
        report.confirmed.append(entry_id)
    elif decision.decision == "REJECT":
        store.glossary.update_entry(actor, entry_id, status="rejected", reason=reason)
        report.rejected.append(entry_id)
    elif decision.decision == "REVISE":
        store.glossary.update_entry(
            actor, entry_id, definition=decision.definition, status="confirmed", reason=reason
        )
        report.revised.append(entry_id)
    else:
        assert decision.target_entry_id is not None
        # a target merged away by an earlier decision of this curation (another batch's answer
        # merged it): the entry it went into, as the agent's tools do, not a refused merge
        target = store.glossary.resolve_entry(decision.target_entry_id).id
        if target != decision.target_entry_id:
            decision = decision.model_copy(update={"target_entry_id": target})
        store.glossary.merge_entries(actor, entry_id, target, reason)
        report.merged.append((entry_id, target))
    report.decision_ids.append(
        store.curation.log_curator_decision(
            actor.run_id,
            thread_id,
            entry_id,
            decision.decision,
            decision.target_entry_id,
            reason,
            _decision_revision(store, entry_id, before),
        )
    )


def _apply_all(
    store: GlossaryStore,
    actor: Actor,
    thread_id: int,
    decisions: Iterable[CurateDecision],
    report: CurationReport,
) -> set[int]:
    """Apply (merges last), inside the caller's transaction; a decision the store refuses is
    rolled back alone (savepoint) and reported. Returns the ids of the entries decided."""
    ordered = sorted(decisions, key=lambda d: (d.decision == "MERGE", d.entry_id))
    applied: set[int] = set()
    for decision in ordered:
        try:
            with store.transaction():
                _apply(store, actor, thread_id, decision, report)
        except StoreError as exc:
            report.problems.append(f"E{decision.entry_id}: {decision.decision} refused: {exc}")
            continue
        applied.add(decision.entry_id)
    return applied


def curate_thread(
    store: GlossaryStore,
    corpus: Corpus,
    chat: ChatCallable,
    *,
    thread: Thread,
    actor: Actor,
    prefix_messages: Sequence[dict[str, Any]] | None = None,
    system_prompt: str | None = None,
    max_tokens_message: int = DEFAULT_MESSAGE_TOKENS,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    count_tokens: TokenCounter | None = None,
    answer_tokens: int | None = None,
    chat_many: Callable[[list[list[dict[str, Any]]]], list[Any]] | None = None,
) -> CurationReport:
    """Review the tentative entries at the end of ``thread`` and apply the decisions.

    ``chat(messages)`` returns a `ChatResult` (or ``(content, usage)``); ``messages`` is
    ``prefix_messages`` (or ``[{"role": "system", "content": system_prompt}]``) plus the curate
    message. Each curate message stays within ``max_tokens_message`` tokens (``count_tokens``, or
    about 4 characters a token): evidence is cut first, then entries go to further messages.
    ``answer_tokens`` (the room an answer has, thinking aside) sizes the batches by their
    expected output too: at most one entry per `TOKENS_PER_DECISION` of it.
    ``chat_many(requests)`` (answers in request order) asks every batch's first request at once,
    then every retry at once (a retry needs only its own batch's first answer); the batches are
    independent (each is built from the glossary as the curation found it and
    the decisions are applied together at the end), so the result does not depend on it.
    ``actor`` is recorded on every revision (kind ``curator``, with run and thread).
    Model/server failures raise (nothing is applied then); decisions the store refuses are
    reported and leave their entry tentative. A reviewed entry the answer did not decide gets a
    ``TENTATIVE`` curator_decision row (no revision: nothing changed), so later curations do not
    send it again until a thread changes it; an entry left tentative because the answer about it
    was malformed gets no row and comes up again.
    """
    thread_id = thread.id
    selection = _gather(store, corpus, thread, max_entries=max_entries)
    report = CurationReport(
        thread_id=thread_id,
        reviewed=[item.entry.id for item in selection.items],
        unchanged=selection.unchanged,
    )
    if not selection.items:
        report.left_tentative = selection.deferred
        return report
    if prefix_messages is not None:
        prefix = [dict(message) for message in prefix_messages]
    elif system_prompt is not None:
        prefix = [{"role": "system", "content": system_prompt}]
    else:
        prefix = []
    heading = ThreadHeading(thread.id, thread.title)
    named_again = {item.entry.id for item in selection.items if item.named_again}
    decisions: dict[int, CurateDecision] = {}
    malformed: set[int] = set()
    per_batch = max(1, answer_tokens // TOKENS_PER_DECISION) if answer_tokens else None
    batches = [
        (
            build_curate_message(
                batch, heading=heading, token_budget=max_tokens_message, count_tokens=count_tokens
            ),
            [item.entry.id for item in batch],
        )
        for batch in plan_batches(
            selection.items,
            heading=heading,
            token_budget=max_tokens_message,
            count_tokens=count_tokens,
            max_entries=per_batch,
        )
    ]
    if chat_many is not None and len(batches) > 1:
        decided = _decide_batches(store, chat, chat_many, prefix, batches, report)
    else:
        decided = [
            _decide_batch(store, chat, prefix, message, batch_ids, report)
            for message, batch_ids in batches
        ]
    for accepted, troubled in decided:
        decisions.update(accepted)
        malformed |= troubled
    with store.transaction():
        applied = _apply_all(store, actor, thread_id, decisions.values(), report)
        for entry_id in report.reviewed:
            if entry_id in applied or entry_id in malformed or entry_id in decisions:
                continue
            if entry_id in named_again:  # still rejected: it comes up when named again
                continue
            store.curation.log_curator_decision(
                actor.run_id,
                thread_id,
                entry_id,
                KEPT_TENTATIVE,
                None,
                "left tentative: the curator's answer did not decide it",
                None,
            )
    report.left_tentative = [
        i for i in report.reviewed if i not in applied and i not in named_again
    ] + selection.deferred
    return report
