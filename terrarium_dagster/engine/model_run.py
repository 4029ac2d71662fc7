"""The run on record and its one path to the model: the session, the scene loop, the window.

A `ModelRun` makes the model session and the scene loop (`Annotator`) when first needed,
refuses a window too small to work in before anything is written, and puts the run on record
(`ensure_started`) before its first write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from terrarium_dagster.agent.loop import Annotator
from terrarium_dagster.config import Settings
from terrarium_dagster.context.compaction import ContextManager
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine.living_corpus import LivingCorpus
from terrarium_dagster.engine.opening import CORPUS_META, URL_TEMPLATE_META, adopt_corpus_identity
from terrarium_dagster.errors import ConfigError
from terrarium_dagster.model import sampling
from terrarium_dagster.model.replicas import ModelClient
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.summon.summoning import SummonManager, snapshot_tools

MIN_SCENE_ROOM = 1280  # a scene part of a few short posts, its known entries and one tool round

ProgressCallback = Callable[[str, dict[str, object]], None]


def quiet(_event: str, _data: dict[str, object]) -> None:
    """No progress report (the writer's lease beats on its own: `store/lease.py`)."""


def smallest_window(prefix: int, max_tokens: int, context: ContextManager) -> int:
    """The smallest window a run works in: its fixed prefix, `max_tokens`, the history
    compaction leaves (which grows with the window: its caps are shares of the prompt limit)
    and `MIN_SCENE_ROOM`, the least window that holds them all."""
    window = prefix + max_tokens + MIN_SCENE_ROOM
    while True:
        needed = prefix + max_tokens + MIN_SCENE_ROOM + context.history_floor(window - max_tokens)
        if needed <= window:
            return window
        window = needed


class ModelRun:
    """One run's record and model path (`Engine.run`)."""

    def __init__(
        self,
        settings: Settings,
        corpus: Corpus,
        store: GlossaryStore,
        living: LivingCorpus,
        *,
        client: Callable[[], ModelClient],
        max_scenes: Callable[[], int | None],
        run_id: str,
        stop: threading.Event,
        progress: ProgressCallback,
    ) -> None:
        self.settings = settings
        self.corpus = corpus
        self.store = store
        self.living = living
        self._client = client  # the engine's client, opened on first use
        self._max_scenes = max_scenes  # the engine's scene limit, as set when the loop is made
        self.run_id = run_id
        self.stop = stop
        self.progress = progress
        self.session: ModelSession | None = None  # the one path to the model, once needed
        self.started = False
        self._annotator: Annotator | None = None

    def ensure_started(self) -> None:
        """Put the run on record before its first write (the model checked first)."""
        if not self.started:
            # the model is checked (served, its window) before the run is on record: a run
            # refused for bad input leaves no run row
            self.annotator()
            # Readers (export, lineage, serve, score, why) use the same corpus and URLs later.
            self.store.set_meta(CORPUS_META, str(self.corpus.path.resolve()))
            self.store.set_meta(URL_TEMPLATE_META, self.corpus.url_template)
            adopt_corpus_identity(self.store, self.corpus)
            self.store.runs.start_run(
                self.run_id, self.settings.model_dump(mode="json", exclude={"api_key"})
            )
            self.started = True
            self.living.check_sources()  # a living corpus: sources edited or deleted since cited

    def _request_options(self, purpose: str) -> dict[str, Any]:
        """Sampling and the thinking switch of a request of this kind (model.sampling)."""
        assert self.session is not None
        return sampling.request_options(self.settings, self.session.model, purpose)

    def annotator(self) -> Annotator:
        """The scene loop (and the session), made on first use; a window too small to work in
        is refused here, before anything is written."""
        if self._annotator is None:
            self.session = ModelSession(
                self._client(),
                self.store,
                budget=self.settings.context_budget,
                max_tokens=self.settings.max_tokens,
                run_id=self.run_id,
                request_options=self._request_options,
                max_in_flight=self.settings.concurrency,
            )
            # the agent may summon a past context mid-scene (the summon tools)
            summons = SummonManager(self.store, self.session, run_id=self.run_id)
            self._annotator = Annotator(
                store=self.store,
                corpus=self.corpus,
                session=self.session,
                extra_tools=snapshot_tools(summons),
                companions=(summons,),
                settings=self.settings,
                run_id=self.run_id,
                stop=self.stop,
                progress=self.progress,
                max_scenes=self._max_scenes(),
            )
            self._check_window(self._annotator)
        return self._annotator

    def _check_window(self, annotator: Annotator) -> None:
        """Refuse, before the run writes anything, a window too small to work in: the fixed
        prefix (system prompt and tool schemas, as the server counts them), the answer's
        max_tokens, the history compaction leaves at that window (the story so far and the
        chapter's summary at their caps: a long book fills them) and room for the smallest
        scene part with its known entries and one tool round."""
        prefix = annotator.served_prefix_tokens()
        smallest = smallest_window(prefix, self.settings.max_tokens, annotator.context)
        if annotator.window < smallest:
            self._annotator = None
            history = annotator.context.history_floor(smallest - self.settings.max_tokens)
            raise ConfigError(
                f"a window of {annotator.window} tokens is below the smallest this run works "
                f"in, {smallest} tokens (system prompt and tool schemas {prefix}, max_tokens "
                f"{self.settings.max_tokens}, the story so far and the chapter's summary "
                f"{history}, a scene and its tool round {MIN_SCENE_ROOM}): raise "
                "--context-budget or lower --max-tokens"
            )

    def reload(self) -> None:
        """The scene loop, if made, takes the store's live context again (after a restore)."""
        if self._annotator is not None:
            self._annotator.reload()

    @property
    def calling(self) -> bool:
        """True while a model request is with the server (a Ctrl-C may abandon it)."""
        return self._annotator is not None and self._annotator.calling.is_set()

    @property
    def in_flight(self) -> int:
        """Model requests with the server right now."""
        return self.session.in_flight if self.session is not None else 0

    @property
    def scene_limit_reached(self) -> bool:
        return self._annotator is not None and self._annotator.limit_reached

    def finish(self, status: str, error: str | None) -> None:
        """Close the session (requests still in flight are on the books as abandoned), keep the
        window it learned, and record how the run ended."""
        if self.session is not None:
            self.session.close()
            self.session.persist_learned_window()
        if self.started:
            self.store.runs.finish_run(self.run_id, status, error)
