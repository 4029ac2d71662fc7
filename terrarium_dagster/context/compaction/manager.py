"""Keeping the agent's context within the token budget, cheaply and without ever looping.

`ContextManager` owns a `ContextState` for a run. The agent loop asks it, at every scene boundary,
to make room for the next scene (`prepare`), and before every model call for the messages to send
(`prepare_call`), which never exceed the budget.

Compaction runs at scene boundaries, in tiers — the strategies of this package, one file each
(`RUN_STEPS`), behind one interface (`step.py`), run by one pipeline (`pipeline.py`) — in this
order:

1. `summarize_chunk`: the oldest scenes of the current (long) thread are summarized into the
   thread's running summary. A chunk is `chunk_scenes` scenes, more when the budget needs more,
   down to half a chunk when the thread has no more old scenes (or fewer when they are large).
2. `fold_thread` / `fold_story`: a finished thread still in the history is summarized into a thread
   summary; finished threads' summaries are folded into the story so far.
3. `trim_thinking`: `<think>` blocks are removed from old assistant turns.
4. `truncate`: old long messages keep their head and tail around a marker.
5. `cut_middle`: whole scenes are dropped from the middle of the history (last resort).

Tiers 1 and 2 write summaries and aim low (`low_water` of the budget) so that compactions are rare:
each one rewrites the prompt after the story block, which vLLM must prefill again. For the same
reason a finished thread is folded at the first scene of the next thread (when it fills at least
`min_free_tokens`), when almost nothing is kept behind the new story block. With `defer_fold` (a
run drafting blocks side by side) the thread that just finished stays through the next thread's
first request (its first block) and is folded at the one after: that first request runs the
fold's flush and asks for its summary, which is then decoded beside the block's scenes instead of
before them (a summary is the longest answer of a thread boundary); such a fold waits until the
finished threads fill four times `min_free_tokens` (`DEFERRED_FOLD_MARK`; by default half the
window), since each one prefills the kept thread again, and all it asks can be worked out ahead
(`fold_requests`). Tiers 3 to 5 lose information and only aim at the budget itself, freeing at
least `min_free_tokens` a pass.
Every pass makes structural progress (a scene leaves the history, a summary is folded, a block is
trimmed, a message is truncated), so compaction ends; a tier whose pass frees nothing hands over to
the next; when every tier is spent and the prompt still does not fit, `BudgetError` says why.

The manager hands the strategies data (a `Compaction`: the state, its copy as the server last saw
it, the budget) and the two functions that reach the model: `summarizer` (messages in, the
answer's text out; `summaries.py` asks and checks) and `flusher` (the pre-compaction flush,
`flush.py`) — those of the `model` the caller passes with the scene (`ModelCalls`: the scene
loop's `SceneCalls`, recorded for that scene), else those the manager was made with. Neither the
manager nor a strategy knows who answers them.
Each summary integrates the previous one (`## Previous summary`), keeps entry ids (`[E12]`;
missing ones are appended), and is checked: an empty, error-like or echoed answer is replaced by
a deterministic extractive summary, so compaction still makes progress (a server that fails
stops the run instead). Before turns are dropped the agent gets one flush call per compaction (a
flush that fails stops the run); the flush's own messages are not kept.

The agent loop, per scene (inside the scene's store transaction)::

    cm.prepare(scene_text, thread_id=t, scene_id=s, reserve_tokens=r, model=m)  # may compact
    turns = [{"role": "user", "content": scene_text}]
    for _ in range(max_rounds):
        plan = cm.prepare_call(turns, thread_id=t, model=m)  # within budget, pairs intact
        turns = plan.scene_messages
        try:
            result = chat(plan.messages)
        except ContextOverflowError as exc:              # one retry
            plan = cm.on_overflow(turns, exc, thread_id=t, scene_id=s, model=m)
            turns = plan.scene_messages
            result = chat(plan.messages)
        cm.sizes.observe(plan.messages, result.prompt_tokens)  # calibration (the loop's _call)
        turns.append(answer); ... tool results ...
    cm.end_scene(s, t, turns, entry_ids=written)
    store.memory.save_context_state(cm.state.to_json())

and `cm.end_thread(t, entry_ids)` at a thread's end; `cm.make_room(n, thread_id=t)` before a
request that continues `cm.build()` with n tokens of its own (the curator).
"""

from __future__ import annotations

import copy as copy_module
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from terrarium_dagster.context.compaction.events import CompactionEvent, Reason
from terrarium_dagster.context.compaction.flush import flush_before_drop
from terrarium_dagster.context.compaction.fold import Fold, story_folding, story_request
from terrarium_dagster.context.compaction.pipeline import RUN_STEPS, run_steps
from terrarium_dagster.context.compaction.policy import (
    Caps,
    CompactionPolicy,
    caps_for,
    history_floor,
)
from terrarium_dagster.context.compaction.sizes import PromptSizes, check_pairs
from terrarium_dagster.context.compaction.step import (
    Compaction,
    CompactionStep,
    Flusher,
    ModelCalls,
    Summarizer,
)
from terrarium_dagster.context.compaction.text import truncate_text
from terrarium_dagster.context.layout import build_messages, head_messages
from terrarium_dagster.context.state import (
    ContextState,
    Message,
    canonical_message,
    entry_ids_written,
    repair_tool_pairs,
)
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.errors import BudgetError, SceneTooLarge

CompactionRecorder = Callable[[CompactionEvent], None]
"""Receives every compaction event (the loop stores it with `store.memory.log_compaction`)."""

# with `defer_fold`, finished threads are folded at a thread's request once they fill this many
# times `min_free` (by default half the window; measured with the forgetful model at 16, 12
# threads of 5 and of 8 scenes: 1.15x and 1.28x the serial run's uncached prompt tokens, where
# folding at `min_free` took 1.43x and 1.46x and at twice it 1.33x and 1.43x, and 8% and 10%
# less wall time than at `min_free`; ARCHITECTURE.md, "The fold worked out ahead")
DEFERRED_FOLD_MARK = 4


@dataclass
class CallPlan:
    """What to send for one model call of the current scene."""

    messages: list[Message]
    scene_messages: list[Message]  # the scene's messages after any shrinking: keep these
    prompt_tokens: int  # the counted size of `messages`
    events: list[CompactionEvent] = field(default_factory=list)


class ContextManager:
    """The context of one run: layout, budget checks, compaction, summaries, flush."""

    def __init__(
        self,
        state: ContextState,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None,
        budget: int,
        max_tokens: int,
        counter: TokenCounter,
        summarizer: Summarizer | None,
        flusher: Flusher | None = None,
        recorder: CompactionRecorder | None = None,
        policy: CompactionPolicy | None = None,
        steps: Sequence[CompactionStep] = RUN_STEPS,
        adopt_calibration: bool = True,
        defer_fold: bool = False,
    ) -> None:
        self.sizes = PromptSizes(budget=budget, max_tokens=max_tokens, counter=counter, tools=tools)
        self.system_prompt = system_prompt
        self.summarizer = summarizer
        self.flusher = flusher
        self.recorder = recorder
        self.policy = policy or CompactionPolicy()
        self.steps = tuple(steps)  # compaction's strategies, in the order they are tried
        # the thread that just finished stays in the history through the next thread's first
        # request (a block at concurrency > 1) and is folded at the one after: its flush runs
        # and its summary is asked for at that first request (`_flush_kept`), not before it
        self.defer_fold = defer_fold
        if adopt_calibration:
            self.state = state  # the counter takes back what it had learned (a new context: none)
        else:
            self._state = state  # a working copy (summon's): the live counter keeps its own

    @property
    def state(self) -> ContextState:
        """The live context, carrying what the token counter has learned so far: whatever saves
        or snapshots it saves that too, so a resumed run counts (and compacts) exactly as an
        uninterrupted one would."""
        self._state.calibration = self.sizes.counter.calibration()
        self._state.anchors = self.sizes.counter.anchors()
        return self._state

    @state.setter
    def state(self, state: ContextState) -> None:
        """Put `state` in force, the counter's learned state with it."""
        self._state = state
        self.sizes.counter.restore(state.calibration)
        self.sizes.counter.restore_anchors(state.anchors)

    # -- sizes (measured by `sizes`) ----------------------------------------------------------

    @property
    def budget(self) -> int:
        """The model's window this context plans for (lowered when a 400 says it is smaller)."""
        return self.sizes.budget

    @budget.setter
    def budget(self, budget: int) -> None:
        self.sizes.budget = budget

    @property
    def limit(self) -> int:
        """Prompt tokens a request may have: the budget minus the completion's max_tokens."""
        return self.sizes.limit

    def _caps(self) -> Caps:
        return caps_for(self.policy, self.sizes.limit, self.sizes.max_tokens)

    def history_floor(self, limit: int) -> int:
        """The history a scene's request has beside it at a prompt limit of `limit` once
        compaction has done all it can (`policy.history_floor`)."""
        return history_floor(self.policy, limit, self.sizes.max_tokens)

    # -- layout -----------------------------------------------------------------------------

    def build(self, scene: str | Sequence[Message] | None = None) -> list[Message]:
        """System, story block, history, then the current scene (message or messages)."""
        return build_messages(self._state, self.system_prompt, scene)

    # -- per scene ----------------------------------------------------------------------------

    def prepare(
        self,
        scene_message: str,
        *,
        thread_id: int,
        scene_id: str,
        reserve_tokens: int = 0,
        model: ModelCalls | None = None,
        kept_summary_ahead: bool = True,
        boundary: bool = True,
    ) -> list[CompactionEvent]:
        """Make room for a scene: compact until the scene message plus `reserve_tokens` (room for
        its tool rounds) fits. Returns the compaction events (empty when nothing was needed).
        `model`: how this scene's compaction asks for summaries and the flush (default: the
        `summarizer` and `flusher` the manager was made with). `kept_summary_ahead`: whether
        the summary of a thread kept in the history (`defer_fold`) is asked for now, beside
        the scenes (False when this run ends before the fold that takes it). `boundary`: False
        for room made again inside a block of drafted scenes (its wave drafting scenes again),
        whose thread-start fold was settled when the block made room: only the budget
        compacts then.

        At the first scene of a thread, finished threads that fill at least `min_free_tokens` of
        the history are folded right away, whether or not the budget needs it yet: compaction
        re-prefills everything it keeps after the story block, and that is least now, before the
        new thread's scenes pile up behind it (they would be prefilled a second time later).
        With `defer_fold`, the thread that just finished is kept (`kept_thread`): only the
        threads before it are folded, its flush runs (`_flush_kept`) and its summary is asked
        for ahead; its fold comes at the thread's next request.

        Raises BudgetError when even an empty history cannot hold the scene message itself.
        """
        scene = [{"role": "user", "content": scene_message}]
        due, keep = self._boundary_fold(thread_id) if boundary else (False, None)
        events: list[CompactionEvent] = []
        if due:  # with `defer_fold` the fold alone (the kept thread stays), then the budget
            events = self._compact(
                scene,
                reserve=reserve_tokens,
                thread_id=thread_id,
                scene_id=scene_id,
                reason="thread_start",
                force=True,
                must_fit=not self.defer_fold,
                model=model,
                keep_thread_id=keep,
                steps=[step for step in self.steps if isinstance(step, Fold)]
                if self.defer_fold
                else None,
            )
            if not self.defer_fold:
                return events
        if keep is not None:
            self._flush_kept(
                keep,
                scene,
                thread_id=thread_id,
                scene_id=scene_id,
                model=model,
                summary_ahead=kept_summary_ahead,
            )
        need = self.sizes.count(self.build(scene), exact_above=self.sizes.limit - reserve_tokens)
        if need + reserve_tokens <= self.sizes.limit:
            return events
        system = {"role": "system", "content": self.system_prompt}
        alone = self.sizes.count([system, *scene], exact_above=self.sizes.limit)
        if alone > self.sizes.limit:  # no compaction can help: say so before changing anything
            raise SceneTooLarge(
                f"scene {scene_id} needs {alone} prompt tokens with the system prompt alone, "
                f"over the limit of {self.sizes.describe(self.sizes.limit)}; "
                "raise --context-budget or split the scene"
            )
        return events + self._compact(
            scene,
            reserve=reserve_tokens,
            thread_id=thread_id,
            scene_id=scene_id,
            reason="budget",
            model=model,
        )

    def _boundary_fold(self, thread_id: int) -> tuple[bool, int | None]:
        """Whether the fold a thread starts with is due before the next request of `thread_id`
        (finished threads fill enough of the history), and the finished thread it leaves in
        the history for now. Without `defer_fold`: at the thread's first scene, every finished
        thread. With it: at the thread's first request, those before the thread that just
        finished (it is kept); at the next, every finished thread, that one too."""
        if not self._state.scenes:
            return False, None
        first = self._state.cursor.thread_id != thread_id  # no scene of the thread ended yet
        current = any(s.thread_id == thread_id for s in self._state.scenes)
        if not self.defer_fold and (not first or current):
            return False, None
        keep = self.kept_thread(thread_id)
        folding = [s for s in self._state.scenes if s.thread_id not in (thread_id, keep)]
        if not folding:
            return False, keep
        size = sum(self.sizes.estimate(self.state.scene_messages(s)) for s in folding)
        return size >= self._fold_mark(), keep

    def _fold_mark(self) -> int:
        """How much finished threads fill of the history before a thread's first request folds
        them: `min_free`, or with `defer_fold` `DEFERRED_FOLD_MARK` times that. A fold rewrites
        the story block, so the kept thread behind it is prefilled again; folding a quarter as
        often cuts that to a quarter, and each summary is asked for a thread earlier than its
        fold takes it."""
        mark = self._caps().min_free
        return mark * DEFERRED_FOLD_MARK if self.defer_fold else mark

    def kept_thread(self, thread_id: int) -> int | None:
        """The finished thread `defer_fold` leaves in the history through `thread_id`'s first
        request: the thread of the last scene, while no scene of `thread_id` has ended."""
        last = self._state.cursor.thread_id
        if not self.defer_fold or last == thread_id or last is None:
            return None
        return last if last in self._state.history_threads() else None

    def fold_requests(
        self, thread_id: int, replied: Replied | None = None, *, kept_summary: bool = True
    ) -> list[tuple[str, list[Message]]]:
        """The requests the fold at the first request of `thread_id` sends, as (purpose,
        messages), in the order it sends them, up to the first whose answer is not known yet;
        none when no fold is due there. They are decided by the context as it stands (the
        finished threads' history) and the answers of those before them, not by the next
        thread's scenes nor the glossary, so they can be asked for ahead, beside the curation
        that comes first (`ModelSession.send_ahead`).

        Worked out on a copy of the context with a fork of the counter, so nothing here changes
        what the run will count or learn: the fold runs there as it will run at its turn, each
        summary answered by `replied` (the text of a reply sent ahead that is back, else None),
        each flush answered with nothing (its messages are never kept: what it writes goes to
        the glossary). Without `replied`, that is the fold's first requests (the flush's first
        round and the oldest finished thread's summary); with it, a fold whose summaries came
        back ahead goes on to what follows them: the next thread's summary, the kept thread's
        flush and (`kept_summary`: the run goes on to the fold that takes them) the summaries
        the fold after it will ask (`defer_fold`)."""
        due, keep = self._boundary_fold(thread_id)
        if not due and not (keep is not None and self._flush_due(keep, thread_id)):
            return []
        model = _WorkedOut(replied)
        copy = self._worked_out_copy()
        try:
            if due:
                copy._compact(
                    [],
                    reserve=0,
                    thread_id=thread_id,
                    scene_id=None,
                    reason="thread_start",
                    force=True,
                    must_fit=False,
                    model=model,
                    keep_thread_id=keep,
                    steps=[step for step in self.steps if isinstance(step, Fold)]
                    if self.defer_fold
                    else None,
                )
            if keep is not None and self.defer_fold:
                copy._flush_kept(
                    keep,
                    [],
                    thread_id=thread_id,
                    scene_id="",
                    model=model,
                    summary_ahead=kept_summary,
                )
        except (_NotKnownYet, BudgetError):
            pass
        return model.asked

    def _flush_due(self, keep: int, thread_id: int) -> bool:
        """Whether the thread `keep` (`kept_thread`) is to be flushed at `thread_id`'s first
        request: not yet flushed, and its fold will be due at the next one (the finished
        threads then folded, `keep` and those before it still in the history, fill the mark)."""
        spans = [s for s in self._state.scenes if s.thread_id != thread_id]
        size = sum(self.sizes.estimate(self.state.scene_messages(s)) for s in spans)
        return self._state.flushed_thread_id != keep and size >= self._fold_mark()

    def _flush_kept(
        self,
        keep: int,
        scene: list[Message],
        *,
        thread_id: int,
        scene_id: str,
        model: ModelCalls | None,
        summary_ahead: bool,
    ) -> None:
        """At `thread_id`'s first request, for the finished thread `keep` left in the history
        (`defer_fold`) when its fold will be due at the next request: run that fold's flush
        now, on the context as the thread ended (the flush the fold at this request would
        have run; its answer's writes go to this request's scene), and send the fold's summary
        ahead, so it is decoded beside this request's scenes; the fold then takes its reply.
        The summary is decided by the kept thread's history, which the scenes in between only
        follow."""
        if not self._flush_due(keep, thread_id):
            return
        spans = [s for s in self._state.scenes if s.thread_id == keep]
        job = self._job(scene, reserve=0, thread_id=thread_id, scene_id=scene_id, model=model)
        if job.ahead is not None and summary_ahead:
            for purpose, messages in self._first_fold_requests(thread_id):
                if purpose == "summary":
                    job.ahead(purpose, messages)
        if flush_before_drop(job, [s.scene_id for s in spans]):
            self._state.flushed_thread_id = keep  # else its fold tries again

    def _first_fold_requests(self, thread_id: int) -> list[tuple[str, list[Message]]]:
        """What a fold before `thread_id`'s next request asks for, a pass for each finished
        thread it folds (their summaries answer nothing of each other's: each is asked of the
        history as it stood before the fold, so an empty answer stands in for each), worked
        out on a copy of the manager (`_worked_out_copy`; see `fold_requests`)."""
        asking = _WorkedOut(lambda purpose, messages: "")
        job = self._worked_out_copy()._job(
            [],
            reserve=0,
            thread_id=thread_id,
            scene_id=None,
            model=asking,
            reason="thread_start",
        )
        for _ in job.state.history_threads():  # each finished thread, oldest first
            if Fold().run(job, 1) is None:
                break
        return asking.asked

    def story_fold_ahead(
        self, scene_messages: Sequence[str], *, thread_id: int, reserve_tokens: int
    ) -> list[Message] | None:
        """The request a fold of the story will send at a compaction before the request after
        `scene_messages` (a block's scenes, just made room for) when one is likely there, so it
        can be asked for now, beside them; else None. With `defer_fold` a story fold takes only
        the summaries the compaction found (`fold.story_folding`), so its request is decided by
        the context as it stands now and stays the same until a compaction changes it; the
        compaction takes the reply when it sends the same request. Likely: the prompt now, the
        scenes' messages twice over (their turns), and the next request's reserve would not fit
        the limit; and the summaries, with those of the finished threads it would fold first,
        are more than the policy keeps, so a compaction that comes folds the story whatever it
        frees before."""
        if not self.defer_fold:
            return None
        # no compaction is under way: what one would find is the context as it stands
        summaries = [s for s in self._state.summaries if s.thread_id != thread_id]
        finished = [t for t in self._state.history_threads() if t != thread_id]
        if not summaries or len(summaries) + len(finished) <= self.policy.max_thread_summaries:
            return None  # a compaction might stop short of the story (`Fold.wanted`)
        scenes = [{"role": "user", "content": text} for text in scene_messages]
        growth = 2 * self.sizes.estimate(scenes)
        if self.sizes.count(self.build()) + growth + reserve_tokens <= self.sizes.limit:
            return None
        job = self._job([], reserve=0, thread_id=thread_id, scene_id=None, model=None)
        request = story_request(job, story_folding(job))  # read, not run: nothing changes
        if request is None:
            return None
        return [*request.prefix, {"role": "user", "content": request.instruction}]

    def _worked_out_copy(self) -> ContextManager:
        """This manager with a deep copy of its context, a fork of its counter and no recorder:
        a compaction worked out on it changes nothing the run will hold, count or learn."""
        copy = copy_module.copy(self)
        copy._state = self._state.model_copy(deep=True)
        copy.sizes = PromptSizes(
            budget=self.sizes.budget,
            max_tokens=self.sizes.max_tokens,
            counter=self.sizes.counter.fork(),
            tools=self.sizes.tools,
        )
        copy.recorder = None
        return copy

    def shrink_to_fit(self, scene_messages: list[Message]) -> list[CompactionEvent]:
        """Run the steps until `build(scene_messages)` fits the limit or every step is spent
        (a step may shorten `scene_messages` in place); the events of the passes that ran."""
        return self._compact(
            scene_messages,
            reserve=0,
            thread_id=None,
            scene_id=None,
            reason="budget",
            must_fit=False,
        )

    def make_room(
        self, tokens: int, *, thread_id: int, scene_id: str | None = None
    ) -> list[CompactionEvent]:
        """Make the prefix (`build()`) leave `tokens` prompt tokens free, for a request that
        continues it with its own messages (the curator's review, a summon). Compacts like
        `prepare` does; BudgetError when even the system prompt leaves no such room."""
        if (
            self.sizes.count(self.build(), exact_above=self.sizes.limit - tokens) + tokens
            <= self.sizes.limit
        ):
            return []
        return self._compact(
            [],
            reserve=tokens,
            thread_id=thread_id,
            scene_id=scene_id,
            reason="budget",
            reserve_required=True,
        )

    def prepare_call(
        self,
        scene_messages: Sequence[Message],
        *,
        thread_id: int | None = None,
        model: ModelCalls | None = None,
    ) -> CallPlan:
        """The messages for the next model call of the current scene, within budget.

        When the scene's own rounds have outgrown the budget, its oldest tool results are
        shrunk (pairs kept); when even that leaves it over (a last round of long tool-call
        arguments beside a long history), the history is compacted as an overflow would compact
        it, then the scene shrunk again; BudgetError when nothing can make it fit.
        """
        scene = [canonical_message(m) for m in scene_messages]
        messages = self.build(scene)
        check_pairs(messages)
        tokens = self.sizes.count(messages, exact_above=self.sizes.limit)
        if tokens <= self.sizes.limit:
            return CallPlan(messages, scene, tokens)
        before = tokens
        events: list[CompactionEvent] = []
        try:
            scene = self._shrink_current(scene)
        except BudgetError:
            events = self._compact(
                scene,
                reserve=0,
                thread_id=thread_id,
                scene_id=None,
                reason="budget",
                must_fit=False,
                model=model,
            )
            scene = self._shrink_current(scene)
        messages = self.build(scene)
        tokens = self.sizes.check(messages)
        event = self._record(
            CompactionEvent(
                tier="shrink_current",
                thread_id=thread_id if thread_id is not None else self._state.cursor.thread_id,
                tokens_before=before,
                tokens_after=tokens,
                detail="the current scene's tool rounds were shrunk",
            )
        )
        return CallPlan(messages, scene, tokens, [*events, event])

    def _shrink_current(self, scene_messages: Sequence[Message]) -> list[Message]:
        """The current scene's messages made to fit: oldest tool results first cut to a stub,
        then long assistant texts, then whole old rounds (an assistant call with its results)
        dropped, never the scene message and never the last round. BudgetError if still over."""
        caps = self._caps()
        scene = [dict(m) for m in scene_messages]

        def over() -> int:
            return self.sizes.count(self.build(scene), exact_above=caps.limit) - caps.limit

        excess = over()
        if excess <= 0:
            return scene
        stub = self.policy.stub_tokens
        for role in ("tool", "assistant"):
            for index in range(1, len(scene)):
                message = scene[index]
                if message.get("role") != role or not isinstance(message.get("content"), str):
                    continue
                size = self.sizes.counter.estimate_message(message)
                if size <= stub * 2:
                    continue
                cut = truncate_text(self.sizes.counter, message["content"], stub)
                scene[index] = {**message, "content": cut}
                excess -= size - self.sizes.counter.estimate_message(scene[index])
                if excess <= 0 and (excess := over()) <= 0:
                    return scene
        while len(rounds := _rounds(scene)) > 1:
            start, end = rounds[0]
            del scene[start:end]
            if over() <= 0:
                return scene
        size = self.sizes.count(self.build(scene), exact_above=caps.limit)
        raise SceneTooLarge(
            f"the current scene needs {size} prompt tokens even with its tool results shrunk, "
            f"over the limit of {self.sizes.describe(caps.limit)}"
        )

    def on_overflow(
        self,
        scene_messages: Sequence[Message],
        error: BaseException | str | None = None,
        *,
        thread_id: int,
        scene_id: str,
        model: ModelCalls | None = None,
    ) -> CallPlan:
        """The server refused a request as too long (400): learn its count, compact at once,
        and return the messages for the one retry. BudgetError when nothing can make it fit."""
        scene = [canonical_message(m) for m in scene_messages]
        self.sizes.learn_refusal(self.build(scene), error)
        events = self._compact(
            scene,
            reserve=0,
            thread_id=thread_id,
            scene_id=scene_id,
            reason="overflow",
            force=True,
            must_fit=False,
            model=model,
        )
        plan = self.prepare_call(scene, thread_id=thread_id, model=model)
        plan.events = events + plan.events
        return plan

    def end_scene(
        self,
        scene_id: str,
        thread_id: int,
        scene_messages: Sequence[Message],
        *,
        entry_ids: Iterable[int] | None = None,
    ) -> None:
        """Append a finished scene (its user message, assistant turns, tool results) to the
        history. Unanswered tool calls are removed first; `entry_ids` are the entries the scene
        wrote (read from its glossary tool calls when not given)."""
        messages = repair_tool_pairs([canonical_message(m) for m in scene_messages])
        if not messages:
            return
        ids = list(entry_ids) if entry_ids is not None else entry_ids_written(messages)
        self._state.append_scene(scene_id, thread_id, messages, ids)
        self._state.cursor.thread_id = thread_id
        self._state.cursor.scene_id = scene_id

    def end_thread(self, thread_id: int, entry_ids: Iterable[int] = ()) -> None:
        """A thread is finished: its history will be folded at the next compaction that needs
        room (any thread other than the current scene's counts as finished there); `entry_ids`
        (the entries the thread touched) join its summary's entry ids."""
        known = set(self._state.thread_entry_ids.get(thread_id, []))
        known.update(entry_ids)
        if known:
            self._state.thread_entry_ids[thread_id] = sorted(known)

    # -- compaction ---------------------------------------------------------------------------

    def _need(self, job: Compaction) -> int:
        """Prompt tokens of the next request plus the reserve for its rounds, measured the same
        way before and after every pass: the server's count, else the heuristic's full estimate
        (not anchored on a remembered prompt, which only the state before compaction matches)."""
        messages = self.build(job.scene_messages)
        exact = self.sizes.counter.count_exact(messages, self.sizes.tools)
        if exact is None:
            exact = self.sizes.counter.estimate_messages(messages, self.sizes.tools)
        return exact + job.reserve

    def _compact(
        self,
        scene_messages: list[Message],
        *,
        reserve: int,
        thread_id: int | None,
        scene_id: str | None,
        reason: Reason,
        force: bool = False,
        must_fit: bool = True,
        reserve_required: bool = False,
        model: ModelCalls | None = None,
        keep_thread_id: int | None = None,
        steps: Sequence[CompactionStep] | None = None,
    ) -> list[CompactionEvent]:
        """Run the strategies over the live state through the pipeline; the model only through
        `model` (else the `summarizer` and `flusher` this manager was handed)."""
        caps = self._caps()
        job = self._job(
            scene_messages,
            reserve=reserve,
            thread_id=thread_id,
            scene_id=scene_id,
            model=model,
            reason=reason,
            keep_thread_id=keep_thread_id,
        )
        try:
            need = run_steps(
                self.steps if steps is None else steps,
                job,
                need=lambda: self._need(job),
                record=self._record,
                force=force,
            )
        except BudgetError:
            self.state = job.origin  # the run stops here: keep the state it can resume from
            raise
        required = reserve if reserve_required else 0  # else the scene's rounds may shrink
        prompt = need - reserve
        if must_fit and prompt + required > caps.limit:
            prompt = self.sizes.count(self.build(scene_messages), exact_above=caps.limit - required)
            if prompt + required > caps.limit:
                message = self._budget_message(prompt, required, scene_messages, caps)
                self.state = job.origin  # the run stops here: keep the state it can resume from
                raise SceneTooLarge(message) if scene_messages else BudgetError(message)
        return job.events

    def _job(
        self,
        scene_messages: list[Message],
        *,
        reserve: int,
        thread_id: int | None,
        scene_id: str | None,
        model: ModelCalls | None,
        reason: Reason = "budget",
        keep_thread_id: int | None = None,
    ) -> Compaction:
        """A compaction of the live state, reaching the model through `model` (else the
        `summarizer` and `flusher` this manager was handed)."""
        return Compaction(
            state=self._state,
            origin=self.state.model_copy(deep=True),  # the live one, with what it learned
            scene_messages=scene_messages,
            reserve=reserve,
            caps=self._caps(),
            policy=self.policy,
            counter=self.sizes.counter,
            system_prompt=self.system_prompt,
            fits=self.sizes.fits,
            summarizer=model.summarize if model is not None else self.summarizer,
            flusher=model.flush if model is not None else self.flusher,
            ahead=model.ahead if model is not None else None,
            thread_id=thread_id,
            scene_id=scene_id,
            reason=reason,
            keep_thread_id=keep_thread_id,
            story_from_origin=self.defer_fold,
        )

    def _budget_message(self, prompt: int, required: int, scene: list[Message], caps: Caps) -> str:
        head = self.sizes.count(head_messages(self.state, self.system_prompt))
        scene_tokens = self.sizes.estimate(scene)
        room = f" and {required} more for its own messages" if required else ""
        return (
            f"the context cannot fit the budget: the next request needs about {prompt} prompt "
            f"tokens{room} (system prompt and summaries {head}, history "
            f"{len(self._state.history)} messages, scene {scene_tokens}) but the limit is "
            f"{self.sizes.describe(caps.limit)}; every compaction tier has run. "
            "Raise --context-budget or split the scene."
        )

    def _record(self, event: CompactionEvent) -> CompactionEvent:
        if self.recorder is not None:
            self.recorder(event)
        return event


# -- helpers ------------------------------------------------------------------------------------


Replied = Callable[[str, list[Message]], str | None]


class _NotKnownYet(Exception):
    """A fold worked out ahead reached a request whose answer has not come back yet."""


class _WorkedOut:
    """The model as a fold worked out ahead (`fold_requests`) reaches it: it keeps what it was
    asked, in order, once each; a summary is answered by `replied` (a reply sent ahead that is
    back, or an empty stand-in), else the working out stops there; a flush is answered with
    nothing."""

    def __init__(self, replied: Replied | None) -> None:
        self.replied = replied
        self.asked: list[tuple[str, list[Message]]] = []

    def _ask(self, purpose: str, messages: list[Message]) -> None:
        if (purpose, messages) not in self.asked:
            self.asked.append((purpose, list(messages)))

    def summarize(self, messages: list[Message]) -> str:
        self._ask("summary", messages)
        text = self.replied("summary", messages) if self.replied is not None else None
        if text is None:
            raise _NotKnownYet
        return text

    def flush(self, messages: list[Message]) -> list[Message]:
        self._ask("flush", messages)
        return []

    def ahead(self, purpose: str, messages: list[Message]) -> bool:
        self._ask(purpose, messages)
        return False  # nothing is sent from here


def _rounds(scene: Sequence[Message]) -> list[tuple[int, int]]:
    """(start, end) of each assistant tool-call message with its tool results, in order."""
    rounds: list[tuple[int, int]] = []
    index = 1
    while index < len(scene):
        if scene[index].get("role") == "assistant" and scene[index].get("tool_calls"):
            end = index + 1
            while end < len(scene) and scene[end].get("role") == "tool":
                end += 1
            rounds.append((index, end))
            index = end
        else:
            index += 1
    return rounds
