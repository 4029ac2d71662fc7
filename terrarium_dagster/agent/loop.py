"""The agent loop: read a thread scene by scene and write the glossary.

Per scene, in ONE store transaction: pick the entries relevant to the scene, make room in the
context (compaction, with its summary and flush calls), then call the model, execute its tool
calls, call again, until it answers without tools or the round limit is hit; then append the
scene's turns to the context, save the context state and move the thread's cursor. A crash at any
point rolls the scene back whole, so a resumed run starts at the first uncommitted scene and, with
the same model answers, writes exactly what an uninterrupted run would have.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Protocol

from terrarium_dagster.agent.calls import AgentCalls, SceneCalls
from terrarium_dagster.agent.drafts import (
    REDRAFTS,
    WAIT_TICK_S,
    Conflict,
    DraftCounter,
    SceneDraft,
    commit_draft,
    new_tally,
    read_as,
    run_block,
    run_tools_in_savepoint,
    speculating,
    submit,
    tally_answer,
    would_commit,
)
from terrarium_dagster.agent.relevant import (
    RelevantEntry,
    match_key,
    relevant_entries,
)
from terrarium_dagster.agent.scene_lines import (
    CHARS_PER_TOKEN,
    entry_ids,
    fit_story,
    known_lines,
    lines_shown,
    name_words,
    names_a_word,
    stale_in_view,
    without_shown_lines,
)
from terrarium_dagster.agent.scene_parts import (
    PART_MARK,
    PART_NEXT,
    next_part,
    part_mark,
    part_position,
    part_progress,
)
from terrarium_dagster.agent.tools import (
    Tool,
    ToolOutcome,
    ToolRegistry,
    default_registry,
)
from terrarium_dagster.config import Settings
from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.manager import CompactionRecorder, ContextManager
from terrarium_dagster.context.state import ContextState, Message
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.living import hash_lookup, split_after
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import is_book
from terrarium_dagster.corpus.units import Scene, Thread
from terrarium_dagster.errors import (
    AgentError,
    ContextOverflowError,
    Interrupted,
    SceneTooLarge,
)
from terrarium_dagster.model.accounting import CallScope
from terrarium_dagster.model.client import ChatResult
from terrarium_dagster.model.protocol import assistant_message_dict
from terrarium_dagster.model.session import Decided, ModelSession
from terrarium_dagster.snapshots.context_snapshots import load_snapshot, save_snapshot
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ANSWERS_KEY
from terrarium_dagster.store.progress import through_post
from terrarium_dagster.terms.candidates import find_candidates

log = logging.getLogger(__name__)

RELEVANT_ENTRY_TOKENS = 1500  # the known-entries block: at most this, and about the story's size
RELEVANT_ENTRY_MIN = 100
STORY_SHARE = 0.45  # a scene's story text takes at most this share of the prompt limit
CANDIDATE_QUERIES = 8
ROUND_RESERVE_SHARE = 0.15  # room kept for a scene's own tool rounds when preparing it
FREE_SHARE = 0.5  # a scene part's story takes at most this share of what the fixed prefix leaves
MIN_STORY_TOKENS = 256  # the smallest scene part worth a request
MIN_PART_CHARS = 400  # a part read again smaller (its request did not fit) is at least this


@dataclass
class ThreadOutcome:
    scenes_annotated: int
    finished: bool


ProgressCallback = Callable[[str, dict[str, Any]], None]


class SceneCompanion(Protocol):
    """Something a scene's tools open that must not outlive the scene (an open summon): closed
    when the scene ends or the run stops, forgotten when the scene rolls back."""

    def dismiss_if_open(self, *, ended: str = "scene_end") -> int | None: ...

    def abandon(self) -> None: ...


class Annotator:
    """The agent of one run: its context, its tools, and the scene loop."""

    def __init__(
        self,
        *,
        store: GlossaryStore,
        corpus: Corpus,
        session: ModelSession,
        settings: Settings,
        run_id: str,
        stop: threading.Event | None = None,
        progress: ProgressCallback | None = None,
        max_scenes: int | None = None,
        extra_tools: Sequence[Tool] = (),
        companions: Sequence[SceneCompanion] = (),
    ) -> None:
        self.store = store
        self.corpus = corpus
        self.session = session
        self.settings = settings
        self.run_id = run_id
        self.stop = stop or threading.Event()
        self.progress = progress
        self.max_scenes = max_scenes
        self.scenes_this_run = 0
        self.model = session.model
        self.companions = tuple(companions)
        self.registry: ToolRegistry = default_registry()
        for tool in extra_tools:
            self.registry.register(tool)
        self.tools = prompts.canonical_tools(self.registry.schemas()) or []
        self.system_prompt = prompts.system_prompt(book=is_book(corpus))
        # the fixed prefix every request of the run starts with, measured once
        system = {"role": "system", "content": self.system_prompt}
        self.prefix_tokens = session.count([system], self.tools)
        self.calls = AgentCalls(
            session=session,
            store=store,
            corpus=corpus,
            registry=self.registry,
            tools=list(self.tools),
            run_id=run_id,
            side_by_side=settings.concurrency > 1,
        )
        session.on_call = self._report_call
        session.on_window.append(self._follow_window)
        self._compaction_log = compaction_log(self.store, self.run_id)
        self.context = self._new_context(self._load_state())
        self._hash_of = hash_lookup(corpus.post)

    @property
    def calling(self) -> threading.Event:
        """Set while a request is with the server: a Ctrl-C then abandons the call at once."""
        return self.session.calling

    # -- context ----------------------------------------------------------------------------

    def _load_state(self) -> ContextState:
        text = self.store.memory.load_context_state()
        return ContextState.from_json(text) if text else ContextState()

    def _new_context(self, state: ContextState) -> ContextManager:
        return ContextManager(
            state,
            system_prompt=self.system_prompt,
            tools=self.tools,
            budget=self.window,
            max_tokens=self.settings.max_tokens,
            counter=self.session.counter,
            summarizer=None,  # each scene hands its own (`SceneCalls`): `prepare(model=...)`
            recorder=self._compaction_log,
            defer_fold=self.settings.concurrency > 1,
        )

    def reload(self) -> None:
        """After a rolled-back scene, the in-memory context follows the store again."""
        self.context = self._new_context(self._load_state())

    @property
    def limit_reached(self) -> bool:
        return self.max_scenes is not None and self.scenes_this_run >= self.max_scenes

    # -- model calls (all through the session: the window gate, accounting, recording) -------

    @property
    def window(self) -> int:
        return self.session.window

    def served_prefix_tokens(self) -> int:
        """The fixed prefix as the server counts it (`/tokenize`; the estimate, which errs
        high, where the server cannot count): what every request of the run starts with.
        Counted with a fork of the run's counter, so that measuring it teaches the run nothing:
        a resumed run asks again after restoring the saved context, and a count learned then
        (once the prefix's exact count had left the remembered ones) made it compact at other
        sizes than the uninterrupted run."""
        system = {"role": "system", "content": self.system_prompt}
        counter = self.session.counter.fork()
        return self.session.count([system], self.tools, exact_above=0, counter=counter)

    def _follow_window(self, window: int) -> None:
        self.context.budget = min(self.context.budget, window)

    def _report_call(self, purpose: str, scope: CallScope) -> None:
        if self.progress and scope.scene_id is not None:
            thread = self.corpus.thread(scope.thread_id) if scope.thread_id is not None else None
            self.progress(
                "call",
                {
                    "scene_id": scope.scene_id,
                    "thread_key": thread.key if thread else "",
                    "purpose": purpose,
                },
            )

    def record_calls(self) -> None:
        """Write the calls not yet recorded (outside any scene transaction)."""
        self.session.record_calls()

    # -- the scene loop ---------------------------------------------------------------------

    @property
    def _story_chars(self) -> int:
        """The most story text one scene message carries: a share of the prompt limit, and at
        most half of what the fixed prefix (system prompt and tool schemas) leaves of it, so that
        the known entries, the summaries and the scene's own tool rounds fit beside it."""
        limit = self.context.limit
        tokens = min(int(limit * STORY_SHARE), int((limit - self.prefix_tokens) * FREE_SHARE))
        return max(MIN_STORY_TOKENS, tokens) * CHARS_PER_TOKEN

    def _round_reserve(self) -> int:
        """The room a scene's own tool rounds are given when room is made for its message."""
        return int(self.context.limit * ROUND_RESERVE_SHARE)

    def _scene_message(self, thread: Thread, scene: Scene, number: int, count: int) -> str:
        """The message of `scene` (a whole scene, or a part of one: `next_part`)."""
        return self._scene_reads(thread, scene, number, count)[0]

    def _scene_reads(
        self,
        thread: Thread,
        scene: Scene,
        number: int,
        count: int,
        earlier: Sequence[Scene] = (),
        before: frozenset[str] = frozenset(),
    ) -> tuple[str, frozenset[int]]:
        """The message of `scene`, and the ids of every entry it was built from (the entries the
        scene mentions and the near misses of its candidate names, before the budget cut): what a
        drafted scene read of the glossary. `earlier`: the scenes of its block before it that are
        not committed (a redraft's basis): the entries their messages would have put in the
        conversation are listed too, as a serial run's conversation would show them. `before`:
        the known-entry lines the messages of those scenes (or of the block's scenes before it,
        drafted beside it) list: a serial run's conversation would hold them when this scene's
        message is written, so they are listed whole here without spending its budget, which
        stays the serial message's for the rest."""
        text = fit_story(scene, self._story_chars)
        relevant = self._relevant(text)
        story_tokens = len(text) // CHARS_PER_TOKEN
        budget = min(RELEVANT_ENTRY_TOKENS, max(RELEVANT_ENTRY_MIN, story_tokens // 4))
        shown = lines_shown(self.context.state.history)
        known = known_lines(relevant, shown, budget, before)
        listed = {item.entry.id for item in relevant}
        stale = stale_in_view(text, shown, listed, self.store.glossary.get_entries)
        if stale:
            known += known_lines(stale, shown | set(known), budget, before)
            relevant = [*relevant, *stale]
        if earlier:
            extra = self._shown_before(text, earlier, {item.entry.id for item in relevant})
            known += known_lines(extra, shown | set(known), budget, before)
            relevant = [*relevant, *extra]
        message = prompts.scene_message(
            scene_id=scene.id,
            thread_id=thread.id,
            title=thread.title,
            scene_number=number,
            scene_count=count,
            first_post_id=scene.posts[0].id,
            last_post_id=scene.posts[-1].id,
            known_entries=known,
            story=text,
        )
        return message, frozenset(item.entry.id for item in relevant)

    def _shown_before(
        self, text: str, earlier: Sequence[Scene], listed: set[int]
    ) -> list[RelevantEntry]:
        """The entries the messages of `earlier` scenes (of the block, not committed) list that
        share a word of a name with `text` (a short form, a title: "Pordeep" of "Old Pordeep";
        a plural: "Warhoons" of "Warhoon", `name_words`), and are not in `listed`: in a serial
        run the model would have them in view from those messages; a redraft is shown them in
        its own (only those, so its message stays short)."""
        words = name_words(text)
        found: list[RelevantEntry] = []
        for other in earlier:
            for item in self._relevant(fit_story(other, self._story_chars)):
                if item.entry.id in listed or not names_a_word(item.entry, words):
                    continue
                listed.add(item.entry.id)
                found.append(item)
        return found

    def _in_view_since(self, draft: SceneDraft) -> frozenset[int]:
        """The entries whose known-entry lines the committed conversation holds now and the
        conversation `draft` was drafted on did not (an earlier scene of its block listed them)
        and that its scene names by a word of a name (`_shown_before`'s rule): a serial run's
        model would have read them there before deciding this scene, so a draft not shown them
        is decided again."""
        drafted_on = entry_ids(lines_shown(draft.context.state.history))
        since = entry_ids(lines_shown(self.context.state.history)) - drafted_on - draft.reads
        if not since:
            return frozenset()
        words = name_words(fit_story(draft.scene, self._story_chars))
        return frozenset(
            entry.id
            for entry in self.store.glossary.get_entries(sorted(since))
            if entry.live and names_a_word(entry, words)
        )

    def _reads_of(self, scene: Scene) -> frozenset[int]:
        """The entries `scene`'s message would be built from now (`scene_reads` without
        building the message)."""
        text = fit_story(scene, self._story_chars)
        return frozenset(item.entry.id for item in self._relevant(text))

    def _relevant(self, text: str) -> list[RelevantEntry]:
        # Names only (not every entry): the entries loaded are the ones the scene mentions.
        names = self.store.glossary.live_names()
        known = [name for _, name in names]
        padded = f" {match_key(text)} "
        mentioned = sorted(
            {
                entry_id
                for entry_id, name in names
                if (key := match_key(name)) and f" {key} " in padded
            }
        )
        live = [e for e in self.store.glossary.get_entries(mentioned) if e.status != "merged"]
        return relevant_entries(
            self.store,
            text,
            candidates=list(candidate_queries(text, tuple(known))),
            token_budget=None,
            entries=live,
        )

    def annotate_thread(self, thread: Thread, *, follows: bool = False) -> ThreadOutcome:
        """Annotate the thread's remaining scenes; snapshot at its end. `follows`: this run
        annotates another thread after it (what is asked for ahead at the thread's last block
        is taken only then)."""
        state = self.store.progress.thread_state(thread.id)
        # posts added after the last one annotated are new scenes (corpus/living.py)
        scenes = split_after(self.corpus.scenes(thread.id), through_post(state))
        cursor = state.cursor_scene_id if state else None
        done_ids = [scene.id for scene in scenes]
        start = done_ids.index(cursor) + 1 if cursor in done_ids else 0
        position: tuple[int, int] | None = None  # in a split scene: where its next part starts
        if cursor and PART_MARK in cursor and cursor.split(PART_MARK)[0] in done_ids:
            start = done_ids.index(cursor.split(PART_MARK)[0])
            extra = state.extra if state is not None else {}
            if PART_NEXT in extra:  # recorded with the part: exact even if the window changed
                position = part_position(scenes[start], extra[PART_NEXT], cursor)
            else:
                position = self._after_part(scenes[start], cursor)
            if position is None:  # that part ended its scene
                start += 1
        if state is None or state.status == "pending":
            self._record_thread(thread, "annotating", scenes_total=len(scenes), scenes_done=start)
        annotated = 0
        index = start
        while index < len(scenes):
            if self.stop.is_set():
                self._stop_cleanly()
                raise Interrupted(f"stopped before scene {scenes[index].id}")
            if self.limit_reached:
                return ThreadOutcome(annotated, finished=False)
            if position is not None or len(scenes[index].text) > self._story_chars:
                # too large for the room: read in parts, one transaction each, in order
                position = self._read_part(thread, scenes, index, position or (0, 0))
                done = position is None  # a scene counts once, when its last part is done
                annotated += 1 if done else 0
                index += 1 if done else 0
                continue
            end = self._block_end(index, len(scenes))
            # a block stops before a scene to be read in parts (fixed by corpus and settings)
            end = next(
                (i for i in range(index + 1, end) if len(scenes[i].text) > self._story_chars), end
            )
            if end - index == 1:
                position = self._read_part(thread, scenes, index, (0, 0))
            else:
                try:
                    self._annotate_block(
                        thread, scenes[index:end], index, len(scenes), follows=follows
                    )
                except SceneTooLarge as exc:  # rolled back: its first scene alone, then the rest
                    log.warning("%s; scene %s is read alone", exc, scenes[index].id)
                    end = index + 1
                    position = self._read_part(thread, scenes, index, (0, 0))
            annotated += end - index if position is None else end - index - 1
            index = end if position is None else index
        self._finish_thread(thread, len(scenes))
        return ThreadOutcome(annotated, finished=True)

    def _read_part(
        self, thread: Thread, scenes: Sequence[Scene], index: int, start: tuple[int, int]
    ) -> tuple[int, int] | None:
        """Annotate the part of scene `index` that starts at `start` (the whole scene when it
        fits the room) and return where its next part starts (None: the scene is done). A part
        whose request cannot fit beside the context (`SceneTooLarge`: the summaries, the known
        entries and its own tool rounds leave too little) is rolled back and read again with
        half the story room, down to `MIN_PART_CHARS`; only then does the run stop. Every part
        starts at the full room, so a resumed run cuts the same parts."""
        scene, room = scenes[index], self._story_chars
        while True:
            part, position = next_part(scene, start, room)
            try:
                self._annotate_scene(
                    thread, scene, index, len(scenes), part, after=part_mark(scene, position)
                )
                return position
            except SceneTooLarge as exc:
                room = min(room, len(part.text)) // 2
                if room < MIN_PART_CHARS:
                    raise
                log.warning("%s; reading scene %s in smaller parts", exc, scene.id)

    def _block_end(self, index: int, count: int) -> int:
        """Where the block that holds scene `index` ends: blocks of `concurrency` scenes counted
        from the thread's first scene, fixed by the corpus and the settings, never by timing (a
        run's scene limit ends it at a block's end, so a resumed run drafts the same blocks)."""
        size = max(1, self.settings.concurrency)
        return min(count, (index // size + 1) * size)

    def _after_part(self, scene: Scene, cursor: str) -> tuple[int, int] | None:
        """Where the part after `cursor` (the id of the last part done) starts, for a store that
        did not record it: the part is cut again (same corpus, same window); None when that
        part ended the scene."""
        start = part_position(scene, cursor.split(PART_MARK, 1)[1], cursor) or (0, 0)
        return next_part(scene, start, self._story_chars)[1]

    def _annotate_scene(
        self,
        thread: Thread,
        scene: Scene,
        index: int,
        count: int,
        part: Scene | None = None,
        *,
        after: str | None = None,
    ) -> None:
        """Annotate `scene`, or `part` of it, in one transaction. A part is the scene's: its
        tools may cite any post of the scene and its revisions name the scene; the context and
        the thread's cursor name the part, so a stop between parts resumes at the next one;
        `after`: where the scene's next part starts (None: the scene ends with this)."""
        with self._unit_of_work(thread, scene) as calls:
            created, updated = self._scene_turns(
                calls, thread, part or scene, index, count, after, split=part not in (None, scene)
            )
        self.scenes_this_run += 1
        self._report_scene(thread, part or scene, created, updated, ended=after is None)

    @contextmanager
    def _unit_of_work(self, thread: Thread, scene: Scene) -> Iterator[SceneCalls]:
        """One unit of committed work (a scene, a part of one, or a block of drafted scenes) in
        ONE store transaction, taking the write lock at its first write; its requests are
        recorded for `scene` (the calls it yields). Whatever stops it, the store rolls back, what
        the server was asked stays on the books, and the in-memory context follows the store
        again; a failed call or a stop ends the run cleanly."""
        try:
            with self.store.transaction(deferred=True):
                yield self.calls.serving(thread, scene)
        except BaseException as exc:
            self.record_calls()
            for companion in self.companions:
                companion.abandon()
            self.reload()
            if isinstance(exc, Interrupted | AgentError):
                self._stop_cleanly()
            raise
        self.record_calls()

    def _report_scene(
        self, thread: Thread, scene: Scene, created: int, updated: int, *, ended: bool = True
    ) -> None:
        """Report a committed scene (or a part of one: `ended` False until its last part)."""
        if self.progress:
            totals = self.store.runs.agent_call_totals(run_id=self.run_id)
            self.progress(
                "scene",
                {
                    "scene_id": scene.id,
                    "scene_ended": ended,
                    "thread_key": thread.key,
                    "created": created,
                    "updated": updated,
                    "prompt": totals.prompt_tokens,
                    "cached": totals.cached_tokens,
                    "completion": totals.completion_tokens,
                    "in_flight": self.session.in_flight,
                    "in_flight_peak": self.session.peak_in_flight,
                },
            )

    # -- a block of scenes drafted at once (concurrency > 1; see agent/drafts.py) ----------------

    def _annotate_block(
        self, thread: Thread, scenes: Sequence[Scene], first: int, count: int, *, follows: bool
    ) -> None:
        """Annotate `scenes` (consecutive, of one thread) as one unit: drafted side by side,
        committed in story order, in ONE store transaction."""
        with self._unit_of_work(thread, scenes[0]) as calls:
            outcomes = self._block_turns(calls, thread, scenes, first, count, follows=follows)
        self.scenes_this_run += len(scenes)
        for scene, (created, updated) in zip(scenes, outcomes, strict=True):
            self._report_scene(thread, scene, created, updated)

    def _block_turns(
        self,
        calls: SceneCalls,
        thread: Thread,
        scenes: Sequence[Scene],
        first: int,
        count: int,
        *,
        follows: bool,
    ) -> list[tuple[int, int]]:
        """Make room once, draft every scene at once, commit the drafts in story order; a draft
        whose reads an earlier scene of the block changed is annotated again at its turn."""
        reserve = self._round_reserve()

        def messages() -> list[tuple[str, frozenset[int]]]:
            built: list[tuple[str, frozenset[int]]] = []
            before: frozenset[str] = frozenset()  # the lines the messages built so far list
            for offset, scene in enumerate(scenes):
                text, read = self._scene_reads(
                    thread, scene, first + offset + 1, count, before=before
                )
                built.append((text, read))
                before |= lines_shown([{"role": "user", "content": text}])
            return built

        reads = messages()
        largest = max(range(len(reads)), key=lambda i: len(reads[i][0]))
        # a kept thread's summary asked for now is taken at the next block, in this run or not
        taken = first + len(scenes) < count or follows
        if self.context.prepare(
            reads[largest][0],
            thread_id=thread.id,
            scene_id=scenes[largest].id,
            reserve_tokens=reserve,
            model=calls,
            kept_summary_ahead=taken,
        ):
            reads = messages()  # compaction removed entries the messages relied on
            largest = max(range(len(reads)), key=lambda i: len(reads[i][0]))
            self.context.prepare(
                reads[largest][0],
                thread_id=thread.id,
                scene_id=scenes[largest].id,
                reserve_tokens=reserve,
                model=calls,
            )
        story_fold = (
            self.context.story_fold_ahead(
                [text for text, _ in reads], thread_id=thread.id, reserve_tokens=reserve
            )
            if first + len(scenes) < count  # the next request makes room for this thread's
            else None  # next block (a thread's first request may fold threads first)
        )
        if story_fold is not None:  # the block's scenes will likely call for it: asked beside them
            calls.ahead("summary", story_fold)
        access = self.calls.access_for(thread, scenes[0])
        drafts = [
            self._draft(scene, first + offset, text, read, read_as(access, read))
            for offset, (scene, (text, read)) in enumerate(zip(scenes, reads, strict=True))
        ]
        outcomes: dict[int, tuple[int, int]] = {}
        run_block(
            drafts,
            _BlockSteps(self, thread, count, outcomes),
            max_rounds=self.settings.max_rounds,
            thread_id=thread.id,
            stop=self.stop,
        )
        for companion in self.companions:
            companion.dismiss_if_open()
        self.store.memory.save_context_state(self.context.state.to_json())
        return [outcomes[draft.index] for draft in drafts]

    def _commit(self, thread: Thread, draft: SceneDraft, count: int) -> tuple[int, int] | None:
        """Commit a draft at its turn, or None when it must be decided again (`Conflict`)."""
        before = self.store.history.last_revision_id()
        reads_now = self._reads_of(draft.scene) | self._in_view_since(draft)
        try:
            turns = commit_draft(
                self.calls.access_for(thread, draft.scene),
                self.registry,
                draft,
                reads_now=reads_now,
            )
        except Conflict as exc:
            log.debug("scene %s drafted again: %s", draft.scene.id, exc)
            return None
        turns = [without_shown_lines(turns[0], self.context.state.history), *turns[1:]]
        for sent, tools, actual in draft.counter.observed:
            self.session.counter.observe(sent, tools, actual)
        return self._end_scene(
            thread, draft.scene, draft.index, count, turns, before, draft.answers, save=False
        )

    def _draft(
        self,
        scene: Scene,
        index: int,
        text: str,
        reads: frozenset[int],
        seen: frozenset[tuple[int, str]],
    ) -> SceneDraft:
        """A draft of `scene` from the committed context, with its own counter and context copy
        (a redraft too: the turns of the block's uncommitted drafts stay out of it, only their
        writes are in its view of the glossary, `agent/drafts.py::speculating`)."""
        counter = DraftCounter(self.session.counter)
        events: list[CompactionEvent] = []
        view = ContextManager(
            ContextState.from_json(self.context.state.to_json()),
            system_prompt=self.system_prompt,
            tools=self.tools,
            budget=self.context.budget,
            max_tokens=self.settings.max_tokens,
            counter=counter,  # type: ignore[arg-type]
            summarizer=None,
            recorder=events.append,
        )
        turns: list[Message] = [{"role": "user", "content": text}]
        return SceneDraft(scene, index, view, counter, turns, events, reads=reads, read_as=seen)

    def _scene_turns(
        self,
        calls: SceneCalls,
        thread: Thread,
        scene: Scene,
        index: int,
        count: int,
        after: str | None = None,
        *,
        split: bool = False,
        redraft: bool = False,
    ) -> tuple[int, int]:
        """The rounds of `scene` (a whole scene, or a part of a `split` one; `after`: where the
        next part starts, None when this ends the scene; `redraft`: its draft was set aside),
        each request through `calls` (its compaction's summaries and flush too)."""
        before = self.store.history.last_revision_id()
        reserve = self._round_reserve()
        message = self._scene_message(thread, scene, index + 1, count)
        if self.context.prepare(
            message, thread_id=thread.id, scene_id=scene.id, reserve_tokens=reserve, model=calls
        ):
            # compaction removed history the message relied on (entries listed earlier): list
            # them again, and make sure the longer message fits too
            message = self._scene_message(thread, scene, index + 1, count)
            self.context.prepare(
                message, thread_id=thread.id, scene_id=scene.id, reserve_tokens=reserve, model=calls
            )
        turns: list[Message] = [{"role": "user", "content": message}]
        answers = new_tally()  # what this scene's rounds got
        if redraft:
            answers[REDRAFTS] = 1
        for _round in range(self.settings.max_rounds):
            plan = self.context.prepare_call(turns, thread_id=thread.id, model=calls)
            turns = plan.scene_messages
            try:
                result = calls.round(plan.messages)
            except ContextOverflowError as exc:
                plan = self.context.on_overflow(
                    turns, exc, thread_id=thread.id, scene_id=scene.id, model=calls
                )
                turns = plan.scene_messages
                result = calls.round(plan.messages)
            turns.append(assistant_message_dict(result.message))
            tally_answer(answers, result)
            if not result.tool_calls:
                break
            outcomes = calls.run_tools(result)
            turns.extend(outcome.message() for outcome in outcomes)
            if self.stop.is_set():
                raise Interrupted(f"stopped during scene {scene.id}")
            if prompts.says_scene_done(result.content) and all(o.ok for o in outcomes):
                break  # the model said these calls finish the scene, and they all succeeded
        for companion in self.companions:
            companion.dismiss_if_open()
        return self._end_scene(
            thread, scene, index, count, turns, before, answers, after=after, split=split
        )

    def _end_scene(
        self,
        thread: Thread,
        scene: Scene,
        index: int,
        count: int,
        turns: list[Message],
        before: int,
        answers: dict[str, int],
        *,
        save: bool = True,
        after: str | None = None,
        split: bool = False,
    ) -> tuple[int, int]:
        """A scene's end: its turns join the history, the context is saved (unless a later scene
        of the same transaction saves it), the cursor moves."""
        changed = self.store.history.revisions(since_id=before)
        entry_ids = sorted({r.entry_id for r in changed if r.entry_id is not None})
        self.context.end_scene(scene.id, thread.id, turns, entry_ids=entry_ids)
        if save:
            self.store.memory.save_context_state(self.context.state.to_json())
        self.store.sources.record(self._hash_of, since_revision=before)  # as cited: an edit shows
        before_state = self.store.progress.thread_state(thread.id)
        counted = before_state.extra.get(ANSWERS_KEY) if before_state else None
        # after this scene's earlier part (a long scene is read in parts)
        earlier_part = before_state is not None and before_state.extra.get(PART_NEXT) is not None
        if isinstance(counted, dict) and (index > 0 or earlier_part):  # the thread's so far
            answers = {
                key: int(counted.get(key) or 0) + answers.get(key, 0)
                for key in sorted({*answers, *counted})
            }
        self._record_thread(
            thread,
            "annotating",
            scenes_total=count,
            scenes_done=index + 1 if after is None else index,  # once all its parts are done
            cursor_scene_id=scene.id,
            # the last post annotated moves once the whole scene is (a part ends mid-scene)
            extra={ANSWERS_KEY: answers, **part_progress(scene, after, split)},
        )
        created = sum(1 for r in changed if r.action == "create")
        return created, len(entry_ids) - created

    # -- thread boundaries ----------------------------------------------------------------------

    def _finish_thread(self, thread: Thread, scene_count: int) -> int:
        """Close the thread: fold bookkeeping, snapshot, mark it annotated (one transaction)."""
        with self.store.transaction():
            entry_ids = sorted(
                {
                    r.entry_id
                    for r in self.store.history.revisions(thread_id=thread.id)
                    if r.entry_id
                }
            )
            self.context.end_thread(thread.id, entry_ids)
            self.store.memory.save_context_state(self.context.state.to_json())
            snapshot_id = self._save_snapshot("thread_end", thread)
            self._record_thread(
                thread,
                "annotated",
                scenes_total=scene_count,
                scenes_done=scene_count,
                cursor_scene_id=self.context.state.cursor.scene_id,
                end_revision_id=self.store.history.last_revision_id(),
                snapshot_id=snapshot_id,
            )
        if self.progress:
            self.progress("thread", {"thread_key": thread.key})
        return snapshot_id

    def send_fold_ahead(self, thread: Thread, *, follows: bool = False) -> int:
        """Send now what the fold at `thread`'s first request will ask (`ContextManager.
        fold_requests`: its flush, its summaries as far as the replies already back let it be
        worked out, the kept thread's flush), so it is in flight beside the curation that comes
        before it rather than after it, one request at a time. The fold takes the replies when
        it sends the same requests (`ModelSession.send_ahead`), so what it writes is what it
        would have written. The kept thread's summary is asked for too when the fold that takes
        it runs in this run (`thread` has another block, or `follows`: the run annotates a
        thread after it). Only with more than one request in flight allowed, and at most one
        fewer than that (the curation has the rest), summaries first (the longer answers): a
        serial run keeps one request at a time. Returns how many were sent."""
        room = self.settings.concurrency - 1
        scenes = self.corpus.scenes(thread.id) if room > 0 else []
        if not scenes:
            return 0
        self.session.drop_ahead()
        calls = self.calls.serving(thread, scenes[0])  # the fold's requests are its first scene's
        sent = 0
        asked = self.context.fold_requests(
            thread.id,
            replied=self.calls.replied_ahead,
            kept_summary=follows or len(scenes) > self.settings.concurrency,
        )
        for purpose, messages in sorted(asked, key=lambda r: r[0] != "summary")[:room]:
            sent += calls.ahead(purpose, messages)
        return sent

    def _record_thread(self, thread: Thread, status: str, **values: Any) -> None:
        """The thread's progress record: `status` and `values`, written by this run."""
        self.store.progress.set_thread_state(
            thread.id,
            thread_key=thread.key,
            position=thread.position,
            status=status,
            run_id=self.run_id,
            **values,
        )

    def _save_snapshot(self, kind: str, thread: Thread | None) -> int:
        state = self.context.state
        return save_snapshot(
            self.store,
            kind=kind,
            thread_id=thread.id if thread else state.cursor.thread_id,
            scene_id=state.cursor.scene_id,
            run_id=self.run_id,
            state=state,
            system_prompt=self.system_prompt,
            tools=self.tools,
            model=self.model,
        )

    def _stop_cleanly(self) -> None:
        """A clean stop (signal, persistent server failure, no answer): close what the scene
        opened. No snapshot is written: the committed context state (saved with every scene) is
        what the resumed run continues from, and a snapshot row here would change what the
        finished store holds (snapshot ids, the snapshot in force for later revisions, what
        `list_snapshots` shows the agent), so a stopped run would not resume exactly."""
        for companion in self.companions:
            companion.dismiss_if_open(ended="shutdown")

    def rewind_to_before(self, thread: Thread, *, reason: str) -> None:
        """Roll the glossary and the context back to the end of the previous thread."""
        actor = Actor(kind="rollback", run_id=self.run_id, thread_id=thread.id)
        with self.store.transaction():
            self.store.rollback.rollback_threads_from(actor, thread.id, reason)
            previous = [
                c
                for c in self.store.memory.snapshots()
                if c.kind == "thread_end"
                and c.thread_id is not None
                and self._before(c.thread_id, thread)
            ]
            if previous:
                _, payload = load_snapshot(self.store, previous[-1].id)
                state = payload.context
            else:
                state = ContextState()
            self.store.memory.save_context_state(state.to_json())
        self.context = self._new_context(state)

    def _before(self, thread_id: int, thread: Thread) -> bool:
        return self.corpus.thread(thread_id).position < thread.position

    # -- requests beside the scenes (curation) ---------------------------------------------------

    def ask(
        self,
        messages: Sequence[Message],
        *,
        thread: Thread,
        purpose: str,
        max_tokens: int | None = None,
        decided: Decided | None = None,
        counter: TokenCounter | None = None,
    ) -> ChatResult:
        """A request beside the scenes (the curator's review of `thread`: recorded for the
        thread), with no tools attached (its answer is text, never a tool call), through the
        session's gate, a short standalone prompt as the last resort; `max_tokens` gives it
        room to think; `counter`: a fork of the run's, for a request sent beside others."""
        return self.calls.request(
            list(messages),
            self.calls.scope_for(thread),
            purpose=purpose,
            tool_choice="none",
            max_tokens=max_tokens,
            with_tools=False,
            decided=decided,
            counter=counter,
        )

    def ask_many(
        self,
        requests: Sequence[Sequence[Message]],
        *,
        thread: Thread,
        purpose: str,
        max_tokens: int | None = None,
        decided: Decided | None = None,
        beside: int = 0,
    ) -> list[ChatResult]:
        """Several requests like `ask`, up to `concurrency` in flight at once (less the
        `beside` requests sent ahead of their turn meanwhile, `send_fold_ahead`); the answers
        come back in request order, and the token counter learns from them in that order
        whatever order they arrive in (each request measures with its own fork of the
        counter)."""
        size = max(1, self.settings.concurrency)
        if size == 1 or len(requests) <= 1:
            return [
                self.ask(r, thread=thread, purpose=purpose, max_tokens=max_tokens, decided=decided)
                for r in requests
            ]
        answers: list[ChatResult] = []
        step = max(1, size - beside)
        for start in range(0, len(requests), step):
            group = [list(r) for r in requests[start : start + step]]
            counters = [DraftCounter(self.session.counter) for _ in group]
            futures = [
                submit(
                    partial(
                        self.ask,
                        messages,
                        thread=thread,
                        purpose=purpose,
                        max_tokens=max_tokens,
                        decided=decided,
                        counter=counter,  # type: ignore[arg-type]
                    )
                )
                for messages, counter in zip(group, counters, strict=True)
            ]
            for future, counter in zip(futures, counters, strict=True):
                answers.append(self._wait(future))
                for sent, tools, actual in counter.observed:
                    self.session.counter.observe(sent, tools, actual)
        return answers

    def _wait(self, future: Future[ChatResult]) -> ChatResult:
        """The answer of a request sent beside others; a stop abandons the wait."""
        while True:
            try:
                return future.result(timeout=WAIT_TICK_S)
            except FutureTimeout:
                if self.stop.is_set():
                    raise Interrupted("stopped while waiting for the model") from None

    def save_context(self) -> None:
        """Save the context state (calibration included) within the open transaction."""
        self.store.memory.save_context_state(self.context.state.to_json())


class _BlockSteps:
    """The scene loop's side of a block run (`agent/drafts.py::run_block`)."""

    def __init__(
        self,
        annotator: Annotator,
        thread: Thread,
        count: int,
        outcomes: dict[int, tuple[int, int]],
    ) -> None:
        self.annotator = annotator
        self.thread = thread
        self.count = count
        self.outcomes = outcomes

    def call(self, draft: SceneDraft, messages: list[Message]) -> ChatResult:
        calls = self.annotator.calls.serving(self.thread, draft.scene)
        return calls.round(messages, counter=draft.counter)  # type: ignore[arg-type]

    def run_tools(self, draft: SceneDraft, calls: list[Any]) -> list[ToolOutcome]:
        access = self.annotator.calls.access_for(self.thread, draft.scene)
        return run_tools_in_savepoint(access, self.annotator.registry, draft, calls)

    def commit(self, draft: SceneDraft) -> bool:
        outcome = self.annotator._commit(self.thread, draft, self.count)
        if outcome is not None:
            self.outcomes[draft.index] = outcome
        return outcome is not None

    def serially(self, draft: SceneDraft) -> None:
        calls = self.annotator.calls.serving(self.thread, draft.scene)
        self.outcomes[draft.index] = self.annotator._scene_turns(
            calls, self.thread, draft.scene, draft.index, self.count, redraft=True
        )

    def make_room(self, draft: SceneDraft, later: Sequence[SceneDraft]) -> None:
        annotator = self.annotator
        thread, scene = self.thread, draft.scene
        reserve = annotator._round_reserve()

        def largest() -> str:
            message = annotator._scene_message(thread, scene, draft.index + 1, self.count)
            drafted = [str(other.turns[0].get("content") or "") for other in later]
            return max([message, *drafted], key=len)

        calls = annotator.calls.serving(thread, scene)
        asked: dict[str, Any] = {
            "thread_id": thread.id,
            "scene_id": scene.id,
            "reserve_tokens": reserve,
            "model": calls,
            "boundary": False,  # the block settled the thread-start fold: the budget alone
        }
        if annotator.context.prepare(largest(), **asked):
            # compaction removed history the messages relied on: they list more now
            annotator.context.prepare(largest(), **asked)

    def stale(self, draft: SceneDraft, basis: tuple[SceneDraft, ...]) -> bool:
        annotator = self.annotator

        def reads_now() -> frozenset[int]:
            # what its commit will check (`_commit`), with the drafts of `basis` as committed:
            # the entries their messages list that its scene names by a word are in view then
            text = fit_story(draft.scene, annotator._story_chars)
            earlier = [other.scene for other in basis]
            listed = annotator._shown_before(text, earlier, set(draft.reads))
            return (
                annotator._reads_of(draft.scene)
                | annotator._in_view_since(draft)
                | {item.entry.id for item in listed}
            )

        return not would_commit(
            annotator.calls.access_for(self.thread, draft.scene),
            annotator.registry,
            draft,
            reads_now=reads_now,
            basis=basis,
            views=draft.views,
        )

    def redraft(self, draft: SceneDraft, basis: tuple[SceneDraft, ...]) -> SceneDraft:
        access = self.annotator.calls.access_for(self.thread, draft.scene)
        with speculating(access, self.annotator.registry, basis, draft.views):
            text, reads = self.annotator._scene_reads(
                self.thread,
                draft.scene,
                draft.index + 1,
                self.count,
                [earlier.scene for earlier in basis],
                before=frozenset(lines_shown([earlier.turns[0] for earlier in basis])),
            )
            seen = read_as(access, reads)
        again = self.annotator._draft(draft.scene, draft.index, text, reads, seen)
        again.basis = basis
        again.answers[REDRAFTS] = 1
        return again


@lru_cache(maxsize=1024)
def candidate_queries(text: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """The names `text` proposes that `known` (the glossary's live names) does not hold, best
    first, as many as a scene's message searches for (`find_candidates`). A pure function of
    both, and a block asks it again of the same scenes against the same names at every judgement,
    redraft and commit (`_shown_before` reads each earlier scene of a block for each later one),
    so its answers are kept."""
    found = find_candidates(text, known, known_words=False)
    return tuple(candidate.term for candidate in found[:CANDIDATE_QUERIES])


def compaction_log(store: GlossaryStore, run_id: str) -> CompactionRecorder:
    """The recorder a run's context manager is handed: each compaction event into the store."""

    def record(event: CompactionEvent) -> None:
        store.memory.log_compaction(
            run_id,
            event.thread_id,
            event.scene_id,
            event.tier,
            event.tokens_before,
            event.tokens_after,
            event.entry_ids,
            event.summary,
        )

    return record
