"""The thread sequence: annotate a thread's scenes (one store transaction per scene), then curate
it, then the next thread. The one driver of the CLI and the Dagster step (`run_threads`); where
threads stand is asked of the `ThreadOrder`, the model of the `ModelRun`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.curation.curator import answer_decides, curate_thread
from terrarium_dagster.curation.decisions import CurationReport
from terrarium_dagster.curation.review_prompt import CURATOR_SYSTEM_PROMPT, RULES_TOKENS
from terrarium_dagster.engine.order import DONE, Standing
from terrarium_dagster.engine.parts import EngineParts
from terrarium_dagster.engine.thread_reports import curation_rows, recorded_curation, thread_report
from terrarium_dagster.errors import OrderError
from terrarium_dagster.model import sampling
from terrarium_dagster.reports import CurationDecisionRow, ThreadReport
from terrarium_dagster.store.annotator import Actor
from terrarium_dagster.store.models import ThreadState

log = logging.getLogger(__name__)

CURATE_PROMPT_TOKENS = 3000  # a review request's rules and message together, at most
CURATE_MESSAGE_MIN = 600  # ... and at least, in a small window


@dataclass(frozen=True)
class ThreadStep:
    """One step of the thread sequence: a thread annotated (with the earlier threads that had
    to be curated first), or a thread curated."""

    kind: Literal["annotated", "curated"]
    thread: Thread
    annotation: ThreadReport | None = None
    curation: CurationReport | None = None
    caught_up: tuple[Thread, ...] = ()
    already_curated: bool = False  # the curation was done before: this step changed nothing


class ThreadSequence(EngineParts):
    """Annotate and curate threads in story order (`Engine.sequence`)."""

    def run_threads(
        self,
        threads: Sequence[Thread],
        *,
        annotate: bool = True,
        curate: bool = True,
        rewind: bool = False,
    ) -> Iterator[ThreadStep]:
        """The per-thread sequence, the one driver of the CLI and the Dagster step: for each
        thread in story order, annotate it (resuming at its first open scene; `rewind` redoes
        the first), then curate it once it is finished, then the next thread. Yields each step
        as it is done, so a caller records every finished thread before the next one starts.
        Ends early when the run is asked to stop, reaches its scene limit, or leaves a thread
        unfinished (nothing to curate yet).

        The order is checked here, before the sequence is returned: a run whose first thread
        cannot be annotated yet (`PredecessorNotAnnotated`) is refused before it writes or
        reports anything."""
        if annotate and threads:
            self.order.standing(threads[0].id).check_order()
        return self._steps(threads, annotate=annotate, curate=curate, rewind=rewind)

    def _steps(
        self, threads: Sequence[Thread], *, annotate: bool, curate: bool, rewind: bool
    ) -> Iterator[ThreadStep]:
        for index, thread in enumerate(threads):
            if self.run.stop.is_set() or self.run.scene_limit_reached:
                return
            if annotate:
                standing = self.order.standing(thread.id)
                follows = index + 1 < len(threads)
                report = self._annotate(standing, rewind=rewind and index == 0, follows=follows)
                caught_up = standing.uncurated_predecessors
                yield ThreadStep("annotated", thread, annotation=report, caught_up=caught_up)
            if curate:
                standing = self.order.standing(thread.id)
                if annotate and not standing.finished:
                    return  # stopped inside the thread: nothing to curate yet
                already = standing.status == "curated"
                goes_on = annotate and index + 1 < len(threads) and not self.run.scene_limit_reached
                after = threads[index + 1] if goes_on else None  # its fold beside the curation
                follows = goes_on and index + 2 < len(threads)  # and a thread after that one
                curation = self._curate_after(standing, then=after, then_follows=follows)
                yield ThreadStep("curated", thread, curation=curation, already_curated=already)

    def annotate_thread(self, thread_id: int, *, rewind: bool = False) -> ThreadReport:
        """Read the thread's scenes and write the glossary; resumes at the first open scene.

        A thread already annotated is not annotated twice: asking again changes nothing and
        returns the recorded report (`already_done`), whether or not later threads built on it
        — unless it is the last annotated thread and posts were added to it since (those are
        annotated as new scenes); with `rewind` the glossary rolls back to the end of the
        previous thread and the thread (and every later one, marked for redo) is annotated
        again.
        """
        return self._annotate(self.order.standing(thread_id), rewind=rewind)

    def _annotate(self, standing: Standing, *, rewind: bool, follows: bool = False) -> ThreadReport:
        """`annotate_thread` from where the thread stands; `follows`: the run annotates another
        thread after it."""
        standing.check_order()
        thread, later, status = standing.thread, standing.later_annotated, standing.status
        rewound: list[str] = []
        if status in DONE and not rewind:
            # The living quest: posts added to the last annotated thread are new scenes of it,
            # reopened once the run is on record (an earlier thread's new posts wait for a
            # rewind: `status` names them).
            grown = (
                False
                if later
                else self.living.reopen_grown(thread, standing.state, before_write=self._start)
            )
            if not grown:
                return self._recorded_report(thread, already_done=True)
        if later and not rewind:
            raise OrderError(
                f"thread {thread.key} is not annotated but later threads are "
                f"({later[0].key}..{later[-1].key}); annotating it needs rewind, which rolls "
                "the glossary back to the end of the previous thread and redoes them in order",
                setting="rewind",
            )
        self._start()
        if rewind and (status in DONE or later):
            rewound = [t.key for t in (thread, *later)]  # the later ones are all annotated
            self.run.annotator().rewind_to_before(
                thread, reason=f"rewind requested for {thread.key}"
            )
        self._curate_predecessors(standing)
        started = time.monotonic()
        annotator = self.run.annotator()
        session = annotator.session
        session.peak_in_flight = session.in_flight  # the peak of this thread's annotation
        outcome = annotator.annotate_thread(thread, follows=follows)
        report = self._recorded_report(thread)
        report.scenes_annotated = outcome.scenes_annotated
        report.duration_s = round(time.monotonic() - started, 3)
        mine = self.store.runs.agent_call_totals(run_id=self.run.run_id, thread_id=thread.id)
        if report.duration_s > 0:
            report.completion_tokens_per_s = round(mine.completion_tokens / report.duration_s, 1)
        report.in_flight_peak = session.peak_in_flight
        report.rewound_threads = rewound
        if report.suspect:  # said now, and kept: `terrarium status` and Dagster show it too
            log.warning("%s is SUSPECT: %s", thread.key, report.suspect)
        return report

    def _start(self) -> None:
        """Before the first write: a window too small is refused, then the run goes on
        record (once)."""
        self.run.annotator()
        self.run.ensure_started()

    def curation_decisions(self, report: CurationReport) -> list[CurationDecisionRow]:
        """The decisions of one curation, readable: term, decision, target, reasoning."""
        return curation_rows(self.store, report)

    def recorded_curation(self, thread: Thread) -> CurationReport:
        """The report of a curation already done, rebuilt from its decision rows."""
        return recorded_curation(self.store, thread)

    def _recorded_report(self, thread: Thread, *, already_done: bool = False) -> ThreadReport:
        return thread_report(self.store, self.corpus, thread, already_done=already_done)

    def _curate_predecessors(self, standing: Standing) -> None:
        """Catch-up: a thread is curated before the next one is annotated. (Its standing still
        holds: a rewind resets the thread and later ones only, curating one thread changes no
        other's status.)"""
        earlier = standing.uncurated_predecessors
        for index, thread in enumerate(earlier):
            last = index == len(earlier) - 1
            self._curate_after(
                self.order.standing(thread.id), then=standing.thread if last else None
            )

    def curate_thread(self, thread_id: int) -> CurationReport:
        return self._curate_after(self.order.standing(thread_id))

    def _curate_after(
        self, standing: Standing, *, then: Thread | None = None, then_follows: bool = False
    ) -> CurationReport:
        """`curate_thread` from where the thread stands: its recorded curation when done.
        `then`: the thread annotated next, whose fold is asked for beside the curation
        (`then_follows`: this run annotates another thread after it)."""
        thread, status = standing.thread, standing.status
        if status == "curated":
            return self.recorded_curation(thread)
        if status != "annotated":
            raise OrderError(f"thread {thread.key} cannot be curated before it is annotated")
        self._start()
        return self._curate(thread, standing.state, then=then, then_follows=then_follows)

    def _curate(
        self,
        thread: Thread,
        state: ThreadState | None,
        *,
        then: Thread | None = None,
        then_follows: bool = False,
    ) -> CurationReport:
        """Review the thread's tentative entries in one transaction. The curator's requests carry
        no tools (its answer is decision lines), so they could not reuse the agent's cached
        prefix (the tools are part of it): they are the curator's system prompt (its rules and
        answer format, the same for every review, so cached once) and the review message alone,
        which costs less than the whole conversation uncached.

        The fold the next thread (`then`) starts with summarizes the history as it stands now,
        which the curation does not change (it changes the glossary, never the context): its
        first requests go out now, beside the curator's (`Annotator.send_fold_ahead`), and the
        fold takes their replies at its turn, so the store is what the fold after the curation
        writes. A stop at any point leaves nothing of them but their records: a resumed run
        sends them again, ahead or at the fold."""
        annotator = self.run.annotator()
        ahead = annotator.send_fold_ahead(then, follows=then_follows) if then is not None else 0
        answer_tokens = sampling.answer_tokens(self.settings, "curate", annotator.window)
        # the decision lines' room: what thinking leaves of the answer (about half)
        thinking = sampling.thinks(self.settings, "curate")
        answer_room = (answer_tokens or self.settings.max_tokens) // (2 if thinking else 1)
        actor = Actor(
            kind="curator",
            run_id=self.run.run_id,
            thread_id=thread.id,
            snapshot_id=state.snapshot_id if state else None,
        )
        try:
            with self.store.transaction(deferred=True):
                # the review message takes what the window leaves beside the curator's prompt
                # and its answer (a small window: a smaller message, never one cut to fit)
                system = {"role": "system", "content": CURATOR_SYSTEM_PROMPT}
                room = annotator.window - (answer_tokens or self.settings.max_tokens) - 64
                room -= annotator.session.count([system], None)
                most = CURATE_PROMPT_TOKENS - RULES_TOKENS  # the rules are the system prompt's
                message_tokens = max(CURATE_MESSAGE_MIN, min(most, room))
                asked: dict[str, Any] = {  # the same for each batch and for them all at once
                    "thread": thread,
                    "purpose": "curate",
                    "max_tokens": answer_tokens,
                    "decided": answer_decides,
                }
                report = curate_thread(
                    self.store,
                    self.corpus,
                    partial(annotator.ask, **asked),
                    chat_many=partial(annotator.ask_many, **asked, beside=ahead),
                    thread=thread,
                    actor=actor,
                    system_prompt=CURATOR_SYSTEM_PROMPT,
                    max_tokens_message=message_tokens,
                    answer_tokens=answer_room,
                )
                annotator.save_context()
                assert state is not None  # annotated, so it has a state
                self.store.progress.set_thread_state(
                    thread.id,
                    thread_key=thread.key,
                    position=thread.position,
                    status="curated",
                    scenes_total=state.scenes_total,
                    scenes_done=state.scenes_done,
                    cursor_scene_id=state.cursor_scene_id,
                    run_id=self.run.run_id,
                    end_revision_id=self.store.history.last_revision_id(),
                    snapshot_id=state.snapshot_id,
                )
        finally:
            annotator.record_calls()
        return report
