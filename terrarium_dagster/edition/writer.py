"""Writing the reader's edition: every entry a thread changed, rewritten by the model from its
evidence as of that thread, many requests in flight, committed thread by thread in story order.

Each request depends only on the store as of its thread's end (never on another entry's
edition), so the requests of every thread being written go out together, up to `concurrency`
at once over the session (the one window gate; each request on the books, recorded for its
thread as `edition:E<id>`). A thread commits, in one transaction, once its answers are all in
and every earlier thread has committed; a killed run resumes at the first thread without a
committed edition and writes what the uninterrupted run writes (answers that depend only on
what they are shown, such as the offline backend's, give the same text).

An answer that decides nothing (empty, reasoning only, cut off) is asked again by the session;
an answer that refuses, cites a post it was not shown, or names a term the reader meets only in
a later thread is refused here and asked again with the reason, `MAX_ATTEMPTS` times in all;
then the entry keeps its previous text (outcome `kept`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field

from terrarium_dagster.agent.drafts import DraftCounter, submit
from terrarium_dagster.context.state import Message
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.edition.evidence import (
    ThreadGlossary,
    changed_entries,
    entry_request,
    later_names,
    shown_text,
    store_names,
    unshown,
)
from terrarium_dagster.edition.rewrite_prompt import (
    EDITION_SYSTEM_PROMPT,
    EditionRequest,
    NameMatcher,
    answer_text,
    edition_message,
    judge_answer,
    refusal_note,
)
from terrarium_dagster.errors import Interrupted
from terrarium_dagster.model.client import ChatResult
from terrarium_dagster.model.session import ModelSession, standalone_task
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.editions import EditionText, EditionThread
from terrarium_dagster.store.wiki_links import tidy_links

PURPOSE = "edition"
MAX_ATTEMPTS = 3
EVIDENCE_CHARS = 6000
CHARS_PER_TOKEN = 3  # a cautious share of the window for the evidence; the gate still measures
WAIT_TICK_S = 0.25

Progress = Callable[[str, dict[str, object]], None]


def edition_line(name: str, data: Mapping[str, object]) -> str:
    """A thread's `edition` progress event as one line, the same in the terminal and in a
    Dagster run's log: "chapter 1 (t00000-1): 2 entries rewritten (0 kept), 3 requests, 914
    tokens", or that it was written before and nothing was sent. `name`: the thread as the
    caller names it."""
    if data.get("already_done"):
        return f"{name}: already written (nothing sent)"
    rewritten, requests = int(str(data["rewritten"])), int(str(data["requests"]))
    return (
        f"{name}: {rewritten} entr{'y' if rewritten == 1 else 'ies'} rewritten "
        f"({data['kept']} kept), {requests} request{'' if requests == 1 else 's'}, "
        f"{data['tokens']} tokens"
    )


@dataclass
class _Job:
    """One entry's edition request as of one thread, and its answers so far."""

    thread: Thread
    request: EditionRequest
    later: NameMatcher
    messages: list[Message]
    counter: DraftCounter
    own: int
    attempts: int = 0
    tokens: int = 0
    text: str | None = None
    refusals: list[str] = field(default_factory=list)
    done: bool = False


@dataclass
class _ThreadPlan:
    thread: Thread
    known: ThreadGlossary
    jobs: list[_Job]


@dataclass(frozen=True)
class EditionReport:
    """What one thread's edition did."""

    thread_id: int
    thread_key: str
    rewritten: int
    kept: int
    requests: int
    tokens: int
    peak_in_flight: int
    already_done: bool = False
    refusals: tuple[str, ...] = ()


class EditionWriter:
    """Writes the editions of threads (in story order) through one model session."""

    def __init__(
        self,
        store: GlossaryStore,
        corpus: Corpus,
        session: ModelSession,
        *,
        concurrency: int,
        run_id: str,
        stop: threading.Event | None = None,
        progress: Progress | None = None,
        evidence_chars: int | None = None,
    ) -> None:
        self.store = store
        self.corpus = corpus
        self.session = session
        self.concurrency = max(1, concurrency)
        self.run_id = run_id
        self.stop = stop or threading.Event()
        self.progress = progress
        room = (session.limit() - session.count([self._system()], None) - 200) * CHARS_PER_TOKEN
        self.evidence_chars = evidence_chars or max(600, min(EVIDENCE_CHARS, room // 2))
        self._shrink = standalone_task(session, None)
        self.peak_in_flight = 0
        self._base_counter: TokenCounter = session.counter  # forked when a write begins
        self._names: list[str] = []  # the store's names when a write begins

    @staticmethod
    def _system() -> Message:
        return {"role": "system", "content": EDITION_SYSTEM_PROMPT}

    # -- planning ---------------------------------------------------------------------------

    def _plan(self, thread: Thread, previous_boundary: int, boundary: int) -> _ThreadPlan:
        known = ThreadGlossary.read(self.store, thread, boundary)
        later = NameMatcher(later_names(self.store, known, self._names))
        jobs: list[_Job] = []
        for view in changed_entries(self.store, known, previous_boundary):
            request = entry_request(
                self.store, self.corpus, known, view, budget=self.evidence_chars
            )
            messages: list[Message] = [
                self._system(),
                {"role": "user", "content": edition_message(request)},
            ]
            jobs.append(
                _Job(
                    thread=thread,
                    request=request,
                    later=unshown(later, shown_text([request])),
                    messages=messages,
                    counter=DraftCounter(self._base_counter),
                    own=view.id,
                )
            )
        return _ThreadPlan(thread, known, jobs)

    # -- sending ----------------------------------------------------------------------------

    def _ask(self, job: _Job) -> ChatResult:
        return self.session.call(
            list(job.messages),
            purpose=PURPOSE,
            tools=None,
            tool_choice="none",
            shrink=self._shrink,
            scope=self.session.scoped(job.thread.id, f"{PURPOSE}:E{job.request.entry_id}"),
            counter=job.counter,  # type: ignore[arg-type]
        )

    def _take(self, job: _Job, result: ChatResult, known: ThreadGlossary) -> bool:
        """Judge an answer: True when the job is finished (taken, or out of attempts)."""
        job.attempts += 1
        if result.usage is not None:
            job.tokens += result.usage.prompt_tokens + result.usage.completion_tokens
        text = answer_text(result.content)
        verdict = judge_answer(text, citable=job.request.citable, later_names=job.later)
        if verdict.reason is None:
            job.text = tidy_links(text, known.index.resolve, own=job.own)
            return True
        job.refusals.append(verdict.reason)
        if job.attempts >= MAX_ATTEMPTS:
            return True
        job.messages = [
            *job.messages,
            {"role": "assistant", "content": text},
            {"role": "user", "content": refusal_note(verdict.reason)},
        ]
        return False

    # -- the run ----------------------------------------------------------------------------

    def write(self, threads: Sequence[Thread]) -> list[EditionReport]:
        """Write the editions of `threads` (story order, each curated, every earlier thread's
        edition already written or among them). A thread with a current edition is skipped.

        Threads are planned (their evidence read) one after another while the requests of the
        threads planned before are in flight; each request measures with a fork of the token
        counter as it stood when the edition began, so nothing depends on timing."""
        reports: list[EditionReport] = []
        todo: list[tuple[Thread, int, int]] = []
        previous_boundary = 0
        for thread in threads:
            state = self.store.progress.thread_state(thread.id)
            assert state is not None and state.end_revision_id is not None
            done = self.store.editions.thread(thread.id)
            if done is not None:
                reports.append(
                    EditionReport(
                        thread.id,
                        thread.key,
                        done.rewritten,
                        0,
                        done.requests,
                        done.tokens,
                        0,
                        already_done=True,
                    )
                )
                if self.progress is not None:
                    self.progress("edition", {"thread_key": thread.key, "already_done": True})
            else:
                todo.append((thread, previous_boundary, state.end_revision_id))
            previous_boundary = state.end_revision_id
        self._base_counter = self.session.counter.fork()
        self._names = store_names(self.store)  # the store's names now: later ones are spoilers
        plans: list[_ThreadPlan] = []
        known_of: dict[int, ThreadGlossary] = {}
        queue: deque[_Job] = deque()
        flying: dict[Future[ChatResult], _Job] = {}
        committed = 0

        def fill() -> None:
            while queue and len(flying) < self.concurrency:
                job = queue.popleft()
                flying[submit(self._ask, job)] = job
            self.peak_in_flight = max(self.peak_in_flight, len(flying))

        try:
            while committed < len(todo):
                if len(plans) < len(todo) and len(queue) < self.concurrency:
                    plan = self._plan(*todo[len(plans)])  # while earlier requests are out
                    plans.append(plan)
                    for job in plan.jobs:
                        known_of[id(job)] = plan.known
                    queue.extend(plan.jobs)
                    fill()
                    if len(plans) < len(todo) and len(queue) < self.concurrency:
                        continue
                fill()
                if flying:
                    finished, _ = wait(
                        list(flying), timeout=WAIT_TICK_S, return_when=FIRST_COMPLETED
                    )
                    if self.stop.is_set():
                        raise Interrupted("stopped while the edition was being written")
                    for future in sorted(finished, key=lambda f: _order(flying[f])):
                        job = flying.pop(future)
                        if self._take(job, future.result(), known_of[id(job)]):
                            job.done = True
                        else:
                            queue.appendleft(job)
                while committed < len(plans) and all(j.done for j in plans[committed].jobs):
                    reports.append(self._commit(plans[committed]))
                    committed += 1
        finally:
            self.session.record_calls()
        return reports

    def _commit(self, plan: _ThreadPlan) -> EditionReport:
        """One thread's edition in one transaction; the counter learns in request order."""
        thread = plan.thread
        for job in plan.jobs:
            for sent, tools, actual in job.counter.observed:
                self.session.counter.observe(sent, tools, actual)
        previous = self.store.editions.as_of(thread.position - 1) if thread.position else {}
        texts: list[EditionText] = []
        kept = 0
        for job in plan.jobs:
            view = plan.known.views[job.own]
            if job.text is not None:
                text, outcome = job.text, "written"
            else:
                kept += 1
                earlier = previous.get(job.own)
                text = earlier.text if earlier is not None else view.definition
                outcome = "kept"
            revisions = tuple(r[0] for r in job.request.revisions)
            texts.append(
                EditionText(
                    entry_id=job.own,
                    thread_id=thread.id,
                    position=thread.position,
                    revision_id=plan.known.boundary,
                    text=text,
                    outcome=outcome,
                    revisions=revisions,
                    posts=job.request.citable,
                    request=f"{PURPOSE}:E{job.own}",
                    attempts=job.attempts,
                    tokens=job.tokens,
                )
            )
        requests = sum(job.attempts for job in plan.jobs)
        tokens = sum(job.tokens for job in plan.jobs)
        record = EditionThread(
            thread_id=thread.id,
            position=thread.position,
            revision_id=plan.known.boundary,
            rewritten=len(texts),
            requests=requests,
            tokens=tokens,
        )
        with self.store.transaction():
            self.store.editions.record_thread(record, texts, run_id=self.run_id)
        self.session.record_calls()
        if self.progress is not None:
            self.progress(
                "edition",
                {
                    "thread_key": thread.key,
                    "rewritten": len(texts) - kept,
                    "kept": kept,
                    "requests": requests,
                    "tokens": tokens,
                },
            )
        return EditionReport(
            thread.id,
            thread.key,
            len(texts) - kept,
            kept,
            requests,
            tokens,
            self.peak_in_flight,
            refusals=tuple(r for job in plan.jobs for r in job.refusals),
        )


def _order(job: _Job) -> tuple[int, int]:
    return (job.thread.position, job.request.entry_id)
