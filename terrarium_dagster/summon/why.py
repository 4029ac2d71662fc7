"""`terrarium why ENTRY` and `terrarium snapshots`: ask the context that wrote an entry why.

`why` finds the revision to explain (the agent's edit that wrote the entry's current definition,
or a revision given by id), the snapshot that holds the conversation behind it (the first
snapshot at or after the revision, else the one in force when it was made: see
`snapshots.context_snapshots`), summons it, asks "Why did you write ...?" (or the question given),
dismisses it (the exchange is logged) and returns the answer with the posts it cites (``>>123``
mapped to post references and URLs through the corpus).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.story import book_place, is_book, paragraph_number, scene_place
from terrarium_dagster.corpus.units import chapter_label
from terrarium_dagster.errors import CorpusError, InputError, StoreError
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.snapshots.context_snapshots import (
    SnapshotNotFoundError,
    find_entry,
    load_snapshot,
    revision_to_explain,
    snapshot_for_revision,
)
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import Revision
from terrarium_dagster.summon.summoning import DEFAULT_MAX_ROUNDS, SummonManager

if TYPE_CHECKING:
    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.model.client import ChatClient

QUESTION_DEFINITION_CHARS = 300
_POST_REF = re.compile(r">>(\d+)")


class CitedPost(BaseModel):
    """A post the answer cites as ``>>123``."""

    model_config = ConfigDict(frozen=True)

    post_id: int
    thread_id: int | None = None
    ref: str | None = None
    url: str | None = None
    in_corpus: bool = True
    chapter: str | None = None  # in an imported book: its chapter's title


class WhyAnswer(BaseModel):
    """What `terrarium why` prints (and `--json` dumps)."""

    entry_id: int
    term: str
    definition: str  # as the revision wrote it
    revision_id: int
    action: str
    revision_thread_id: int | None = None
    revision_thread_key: str | None = None  # the key every other command names it by
    revision_scene_id: str | None = None
    # an imported book: the chapter titles of the revision's and the snapshot's threads
    book: bool = False
    revision_chapter: str | None = None
    snapshot_chapter: str | None = None
    question: str
    answer: str
    snapshot_id: int
    in_force_snapshot_id: int | None = None
    after_snapshot_id: int | None = None
    basis: str
    snapshot_kind: str
    snapshot_thread_id: int | None = None
    snapshot_scene_id: str | None = None
    cited_posts: list[CitedPost] = Field(default_factory=list)
    summon_log_id: int
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    trimmed: dict[str, Any] = Field(default_factory=dict)


def default_question(entry_id: int, revision: Revision, *, book: bool = False) -> str:
    """ "Why did you write [E12] "Term" (definition)? ..." for the revision's action, asking
    for the paragraphs (`book`: an imported book's) or the posts it rests on."""
    sources = "paragraphs" if book else "posts"
    state = revision.new_value or revision.old_value or {}
    term = str(state.get("term") or f"E{entry_id}")
    definition = " ".join(str(state.get("definition") or "").split())
    if len(definition) > QUESTION_DEFINITION_CHARS:
        definition = definition[: QUESTION_DEFINITION_CHARS - 1].rstrip() + "…"
    if revision.action == "delete":
        reason = f" ({revision.reason})" if revision.reason else ""
        return f'Why did you delete [E{entry_id}] "{term}"{reason}? Which {sources} made you do it?'
    verb = "write" if revision.action == "create" else "change"
    asked = f'Why did you {verb} [E{entry_id}] "{term}" ({definition})?'
    return f"{asked} Which {sources} is it based on?"


def cited_posts(corpus: Corpus | None, text: str) -> list[CitedPost]:
    """The ``>>123`` references of a text, in order of first mention, resolved in the corpus."""
    posts: list[CitedPost] = []
    book = corpus is not None and is_book(corpus)
    for number in dict.fromkeys(int(match) for match in _POST_REF.findall(text)):
        post = corpus.post(number) if corpus is not None else None
        if post is None:
            posts.append(CitedPost(post_id=number, in_corpus=corpus is None))
            continue
        posts.append(
            CitedPost(
                post_id=number,
                thread_id=post.thread_id,
                ref=post.ref,
                url=corpus.post_url(post) if corpus is not None else None,
                chapter=_title(corpus, post.thread_id) if book else None,
            )
        )
    return posts


def why(
    store: GlossaryStore,
    corpus: Corpus | None,
    client: ChatClient,
    entry: str | int | None = None,
    *,
    revision: int | None = None,
    question: str | None = None,
    budget: int,
    max_tokens: int,
    run_id: str | None = None,
    counter: TokenCounter | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    request_options: Callable[[str], Mapping[str, Any]] | None = None,
) -> WhyAnswer:
    """Ask the context behind an entry's edit (or the given revision) why it made it.

    `entry` is an id (12, "E12"), a term or an alias; `revision` a revision id (then `entry`
    may be omitted, and if given must be the revision's entry). `InputError` when neither
    names anything, `SnapshotNotFoundError` when no snapshot records the edit's context.
    """
    if entry is None and revision is None:
        raise InputError("give an entry (E12, a term or an alias) or a revision id")
    if revision is not None:
        try:
            chosen = store.history.revision(revision)
        except StoreError as exc:
            if "no revision" not in str(exc):
                raise
            raise InputError(f"{exc} (give a revision id that `terrarium lineage` lists)") from None
        if chosen.entry_id is None:
            raise InputError(f"revision {revision} changed no entry; nothing to ask about")
        if entry is not None and find_entry(store, entry) != chosen.entry_id:
            raise InputError(
                f"revision {revision} is a change of E{chosen.entry_id}, not of {entry!r}"
            )
        entry_id = chosen.entry_id
    else:
        entry_id = find_entry(store, entry)
        chosen = revision_to_explain(store, entry_id)
    if chosen.actor_kind == "user":  # an undo or an edit: no model wrote it, no context holds it
        said = f": {chosen.reason}" if chosen.reason else ""
        raise InputError(
            f"revision {chosen.id} (E{entry_id}) was made by the user, not by a model: no context "
            f"wrote it to ask{said}"
        )
    choice = snapshot_for_revision(store, chosen.id)
    if choice.snapshot_id is None:
        raise SnapshotNotFoundError(
            f"no snapshot records the context of revision {chosen.id} (E{entry_id}): no "
            "snapshot was taken since it was made (one is taken at every thread's end: finish "
            "the thread with `terrarium run`)"
        )
    row, _ = load_snapshot(store, choice.snapshot_id)
    asked = (
        question.strip()
        if question and question.strip()
        else default_question(entry_id, chosen, book=corpus is not None and is_book(corpus))
    )
    model_session = ModelSession(
        client,
        store,
        budget=budget,
        max_tokens=max_tokens,
        run_id=run_id,
        counter=counter,
        record_at_once=True,  # beside a run: each request recorded as it is made
        request_options=request_options,
    )
    manager = SummonManager(
        store,
        model_session,
        corpus=corpus,
        run_id=run_id,
        max_rounds=max_rounds,
    )
    answer = manager.summon(row.id, asked)
    session = manager.session
    assert session is not None
    log_id = manager.dismiss()
    state = chosen.new_value or chosen.old_value or {}
    return WhyAnswer(
        entry_id=entry_id,
        term=str(state.get("term") or ""),
        definition=str(state.get("definition") or ""),
        revision_id=chosen.id,
        action=chosen.action,
        revision_thread_id=chosen.thread_id,
        revision_thread_key=_thread_key(store, chosen.thread_id),
        revision_scene_id=chosen.scene_id,
        book=corpus is not None and is_book(corpus),
        revision_chapter=_title(corpus, chosen.thread_id),
        snapshot_chapter=_title(corpus, row.thread_id),
        question=asked,
        answer=answer,
        snapshot_id=row.id,
        in_force_snapshot_id=choice.in_force_id,
        after_snapshot_id=choice.after_id,
        basis=choice.basis,
        snapshot_kind=row.kind,
        snapshot_thread_id=row.thread_id,
        snapshot_scene_id=row.scene_id,
        cited_posts=cited_posts(corpus, answer),
        summon_log_id=log_id,
        calls=session.calls,
        prompt_tokens=session.prompt_tokens,
        completion_tokens=session.completion_tokens,
        trimmed={key: value for key, value in session.trimmed.items() if value},
    )


def _title(corpus: Corpus | None, thread_id: int | None) -> str | None:
    """The title of the corpus's thread `thread_id` (None: no such thread, or no corpus)."""
    if corpus is None or thread_id is None:
        return None
    try:
        return corpus.thread(thread_id).title
    except (CorpusError, InputError):
        return None


def render_why(answer: WhyAnswer) -> str:
    """The answer as `terrarium why` prints it (a book's chapters and paragraphs by name)."""
    if answer.book:
        where = (
            scene_place(answer.revision_scene_id, answer.revision_chapter)
            if answer.revision_scene_id
            else book_place(answer.revision_chapter, answer.revision_thread_id)
            if answer.revision_thread_id
            else ""
        )
        end = (
            f", ends in {scene_place(answer.snapshot_scene_id, answer.snapshot_chapter)}"
            if answer.snapshot_scene_id
            else ""
        )
        kind = answer.snapshot_kind.replace("thread_", "chapter ").replace("_", " ")
    else:
        where = ", ".join(
            part
            for part in (
                f"thread {answer.revision_thread_key or answer.revision_thread_id}"
                if answer.revision_thread_id
                else "",
                f"scene {answer.revision_scene_id}" if answer.revision_scene_id else "",
            )
            if part
        )
        end = f", ends at scene {answer.snapshot_scene_id}" if answer.snapshot_scene_id else ""
        kind = answer.snapshot_kind
    lines = [
        f"E{answer.entry_id} {answer.term}: revision {answer.revision_id} ({answer.action}"
        + (f", {where})" if where else ")"),
        f"summoned snapshot {answer.snapshot_id} ({kind}"
        + end
        + (
            f"); in force when written: snapshot {answer.in_force_snapshot_id}"
            if answer.in_force_snapshot_id is not None
            else "); in force when written: none"
        ),
        "",
        f"Q: {answer.question}",
        f"A: {answer.answer}",
    ]
    if answer.cited_posts:
        lines += ["", "Cited paragraphs:" if answer.book else "Cited posts:"]
        for post in answer.cited_posts:
            if not post.in_corpus:
                lines.append(f"  >>{post.post_id}  (not in the corpus)")
                continue
            ref = post.ref or str(post.post_id)
            if answer.book and post.thread_id is not None:
                ref = book_place(post.chapter, post.thread_id, post.post_id)
            lines.append(f"  >>{post.post_id}  {ref}" + (f"  {post.url}" if post.url else ""))
    if answer.trimmed:
        trimmed = ", ".join(
            f"{key} {len(value) if isinstance(value, list) else value}"
            for key, value in sorted(answer.trimmed.items())
        )
        lines += ["", f"(the past context was trimmed to fit the budget: {trimmed})"]
    lines += [
        "",
        f"({answer.calls} call{'s' * (answer.calls != 1)}, {answer.prompt_tokens} prompt and "
        f"{answer.completion_tokens} completion tokens; exchange logged as summon "
        f"{answer.summon_log_id})",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- `snapshots`
def snapshots_report(store: GlossaryStore, *, thread_id: int | None = None) -> list[dict[str, Any]]:
    """One row per snapshot, oldest first: where it stands, what its context holds, how many
    revisions were made with it in force ("blamed"), how often it was summoned."""
    blamed, summoned = store.memory.snapshot_uses()
    keys = {state.thread_id: state.thread_key for state in store.progress.thread_states()}
    rows: list[dict[str, Any]] = []
    for header in store.memory.snapshot_headers(thread_id=thread_id):
        _, payload = load_snapshot(store, header.id)
        context = payload.context
        rows.append(
            {
                "id": header.id,
                "kind": header.kind,
                "thread_id": header.thread_id,
                "thread_key": keys.get(header.thread_id) if header.thread_id else None,
                "scene_id": header.scene_id,
                "run_id": header.run_id,
                "revision_id": header.revision_id,
                "created_at": header.created_at,
                "bytes": header.size,
                "model": payload.model,
                "restored_from": payload.restored_from,
                "history_scenes": len(context.scenes),
                "history_messages": len(context.history),
                "summaries": len(context.summaries),
                "story_chars": len(context.story_so_far),
                "revisions_in_force": blamed.get(header.id, 0),
                "summons": summoned.get(header.id, 0),
            }
        )
    return rows


def _ends_at(scene_id: str | None, book: bool) -> str:
    """A snapshot's last scene: its id, or in a book the paragraph of its chapter it begins at."""
    if not scene_id:
        return "-"
    thread, _, first = scene_id.partition("#")
    start = first.split("~")[0]
    if not book or not (thread.isdigit() and start.isdigit()):
        return scene_id
    return f"paragraph {paragraph_number(int(start), int(thread))}"


def _snapshot_thread(row: dict[str, Any], book: bool) -> str:
    """A snapshot's thread as the table shows it: its key, or a book's chapter by its number
    (as `--threads ch3` takes it) with the key beside it."""
    key = row["thread_key"]
    if not key:
        return str(row["thread_id"]) if row["thread_id"] else "-"
    return f"{chapter_label(key)} ({key})" if book else key


def render_snapshots(
    rows: list[dict[str, Any]], *, book: bool = False, of: str | None = None
) -> str:
    """A table of `snapshots_report` rows (of an imported `book`: chapters and paragraphs);
    `of` names the one thread asked for (`--thread`)."""
    unit = "chapter" if book else "thread"
    if not rows:  # a clean stop writes none: the context committed with the last scene resumes
        if of is not None:
            return f"no snapshot of {of} yet (one is taken at its end)"
        return f"no snapshots yet (one is taken at every {unit}'s end)"
    places = [_snapshot_thread(row, book) for row in rows]
    width = max(18, *(len(place) for place in places))
    header = (
        f"{'id':>5}  {'kind':<11}  {unit:<{width}}  "
        f"{'last scene at' if book else 'ends at scene':<18}  "
        f"{'rev':>6}  {'scenes':>6}  {'summ':>4}  {'story':>6}  {'blamed':>6}  {'summons':>7}  "
        "created"
    )
    lines = [header]
    for row, thread in zip(rows, places, strict=True):
        kind = row["kind"].replace("thread_", f"{unit}_")
        kind += f"<-{row['restored_from']}" if row["restored_from"] else ""
        lines.append(
            f"{row['id']:>5}  {kind:<11}  {thread:<{width}}  "
            f"{_ends_at(row['scene_id'], book):<18}  "
            f"{row['revision_id'] if row['revision_id'] is not None else '-':>6}  "
            f"{row['history_scenes']:>6}  {row['summaries']:>4}  {row['story_chars']:>6}  "
            f"{row['revisions_in_force']:>6}  {row['summons']:>7}  {row['created_at']}"
        )
    lines.append(
        "rev: the last revision it saw; scenes, summ: the scenes and summaries in its context; "
        "story: characters of the story so far; blamed: revisions written with it in force; "
        "`terrarium why ENTRY` summons one"
    )
    return "\n".join(lines)


def _thread_key(store: GlossaryStore, thread_id: int | None) -> str | None:
    """A thread's key (`t00002-32291927`), as `status` and the other commands name it."""
    state = store.progress.thread_state(thread_id) if thread_id is not None else None
    return state.thread_key if state is not None else None
