"""The engine facade: what the CLI and the Dagster assets call. It never imports Dagster.

One `Engine` serves one run. It owns the corpus reader, the annotator store and the model client,
and does the per-thread sequence both entry points share: annotate the thread's scenes (one store
transaction per scene), checkpoint at the thread boundary, then curate the thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, Self

from terrarium_dagster.agent.loop import Annotator
from terrarium_dagster.backends.offline import OfflineBackend
from terrarium_dagster.config import Settings
from terrarium_dagster.corpus.identity import CorpusIdentity, corpus_identity
from terrarium_dagster.corpus.living import hash_lookup, scenes_after, split_after
from terrarium_dagster.corpus.models import Scene, Thread
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.sample import sample_corpus_path
from terrarium_dagster.curation.curator import answer_decides, curate_thread
from terrarium_dagster.curation.models import CurationReport, UndoResult
from terrarium_dagster.curation.prompt import CURATOR_SYSTEM_PROMPT
from terrarium_dagster.curation.undo import undo_decision, undo_revision
from terrarium_dagster.edition.writer import EditionReport, EditionWriter
from terrarium_dagster.errors import (
    ConfigError,
    DiskSpaceError,
    InputError,
    OrderError,
    TerrariumError,
    WriterLeaseError,
)
from terrarium_dagster.exports import build_export
from terrarium_dagster.exports.build import FORMATS
from terrarium_dagster.model import sampling
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.replicas import ModelClient, ReplicaPool, split_urls
from terrarium_dagster.model.server import require_tools, server_info
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.paths import unwritable_reason
from terrarium_dagster.reports import CurationDecisionRow, ExportReport, ThreadReport
from terrarium_dagster.snapshots.checkpoint import load_checkpoint, restore_from_snapshot
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.base import remove_store_files
from terrarium_dagster.store.filesystem import refusal as network_refusal
from terrarium_dagster.store.models import ThreadState
from terrarium_dagster.store.progress import through_post
from terrarium_dagster.store.sources import SourceChange
from terrarium_dagster.store.sources import describe as describe_source_change
from terrarium_dagster.summon.summoning import SummonManager, snapshot_tools
from terrarium_dagster.thread_reports import curation_rows, recorded_curation, thread_report

log = logging.getLogger(__name__)

DONE = ("annotated", "curated")
CURATE_MESSAGE_TOKENS = 3000  # the curator's review message, per request (at most)
CURATE_MESSAGE_MIN = 600  # ... and at least, in a small window
MIN_SCENE_ROOM = 1024  # a scene part of a few short posts, its known entries and one tool round

ProgressCallback = Callable[[str, dict[str, object]], None]


OFFLINE_URL = "http://offline.invalid/v1"  # what the offline backend's calls name as server
CORPUS_META = "corpus_path"
CORPUS_IDENTITY_META = "corpus_identity"  # corpus.identity: which corpus the store belongs to
SOURCE_CHANGED_TAG = "source-changed"  # an entry citing a post edited or deleted since
URL_TEMPLATE_META = "url_template"
# Templates earlier versions recorded for the bundled sample: a host that does not exist.
LEGACY_TEMPLATES = frozenset({"https://quest.example/sample/{thread_id}#{post_id}"})


def open_corpus(settings: Settings, store: GlossaryStore | None = None) -> Corpus:
    """The corpus the settings name; for a reader of `store`, unless told otherwise, the corpus
    and URL template the store was built with (recorded by the run that wrote it). Without a
    post URL template, source links go to the post pages `terrarium serve` serves at
    `settings.site_url` (`corpus.links`)."""
    recorded = store.get_meta(CORPUS_META) if store is not None else None
    recorded_template = store.get_meta(URL_TEMPLATE_META) if store is not None else None
    if recorded_template in LEGACY_TEMPLATES:
        recorded_template = None  # an old store's made-up sample host: link the served posts
    site = settings.site_url
    if settings.corpus is None and recorded and Path(recorded).is_file():
        template = settings.url_template or recorded_template
        corpus = Corpus(recorded, url_template=template, site_url=site)
    elif settings.corpus is None:
        corpus = Corpus(sample_corpus_path(), url_template=settings.url_template, site_url=site)
    else:
        template = settings.url_template
        if template is None and recorded and Path(recorded).resolve() == settings.corpus.resolve():
            template = recorded_template
        corpus = Corpus(settings.corpus, url_template=template, site_url=site)
    if store is not None:
        try:
            check_corpus_identity(store, corpus)
        except BaseException:
            corpus.close()
            raise
    return corpus


def check_corpus_identity(store: GlossaryStore, corpus: Corpus) -> None:
    """Refuse (one line, InputError) a corpus other than the one the store was built from, as
    the store recorded it (`corpus.identity`); a store that recorded none accepts any."""
    recorded = store.get_meta(CORPUS_IDENTITY_META)
    if recorded is None:
        return
    built_from = CorpusIdentity.model_validate_json(recorded)
    current = corpus_identity(corpus)
    if not built_from.matches(current):
        raise InputError(
            f"annotator store {store.where} belongs to the corpus {built_from.describe()}, not "
            f"to {corpus.path.name} {current.describe()}; nothing was written; give --corpus "
            "the store's own corpus, or a new --db for this one"
        )


def adopt_corpus_identity(store: GlossaryStore, corpus: Corpus) -> None:
    """Record which corpus the store belongs to (a store from before identities adopts the
    corpus of its next run; a grown corpus refreshes its first threads)."""
    identity = corpus_identity(corpus).model_dump_json()
    if store.get_meta(CORPUS_IDENTITY_META) != identity:
        store.set_meta(CORPUS_IDENTITY_META, identity)


def open_store(
    settings: Settings, *, must_exist: bool = False, read_only: bool = False
) -> GlossaryStore:
    """The annotator store; `must_exist` (readers: status, export, lineage, why) refuses to
    create an empty one where the user named a file that is not there. `read_only` (status,
    export, lineage, snapshots, score, serve) opens it so that nothing is written and no writer
    is waited for; it works on a read-only file or folder."""
    if settings.db != ":memory:":
        path = Path(settings.db).expanduser()
        if (must_exist or read_only) and not path.is_file():
            raise InputError(f"no annotator store at {settings.db} (run `terrarium run` first)")
        if read_only:
            return GlossaryStore(settings.db, read_only=True)
        refused = None if settings.network_store else network_refusal(settings.db)
        if refused is not None:
            raise InputError(refused)
        reason = None if path.exists() else unwritable_reason(path, folder=False)
        if reason is not None:
            raise InputError(f"cannot create annotator store {settings.db}: {reason}")
        try:
            path.resolve().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"cannot create the folder of annotator store {settings.db}: {exc.strerror}"
            ) from None
    return GlossaryStore(settings.db)


def open_client(settings: Settings) -> ReplicaPool:
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    config = ClientConfig(
        base_url=split_urls(settings.agent_url)[0] if settings.agent_url else OFFLINE_URL,
        model=settings.model,
        api_key=api_key,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
    )  # sampling and thinking go per call kind (model.sampling, ModelSession.request_options)
    if settings.offline:
        backend = OfflineBackend(max_model_len=settings.context_budget)
        return ReplicaPool([ChatClient(config, transport=backend)])
    if not settings.agent_url:
        raise ConfigError(
            "no model server configured: set TERRARIUM_AGENT_URL (or --agent-url), or choose "
            "the rule-based offline backend explicitly with TERRARIUM_OFFLINE=1 (or --offline)"
        )
    return ReplicaPool.from_config(config, split_urls(settings.agent_url))


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


def _quiet(_event: str, _data: dict[str, object]) -> None:
    """No progress report (the writer's lease beats on its own: `store/lease.py`)."""


class Engine:
    """A run over one corpus and one store."""

    def __init__(
        self,
        settings: Settings,
        corpus: Corpus,
        store: GlossaryStore,
        client: ModelClient | None,
        *,
        run_id: str,
        stop: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.settings = settings
        self.corpus = corpus
        self.store = store
        self._client = client
        self.run_id = run_id
        self.stop = stop or threading.Event()
        self.progress: ProgressCallback = progress or _quiet
        self._threads = corpus.threads()
        self._by_id = {thread.id: thread for thread in self._threads}
        self._annotator: Annotator | None = None
        self.session: ModelSession | None = None  # the one path to the model, once needed
        self._run_started = False
        self._source_changes: list[SourceChange] | None = None  # once checked this run
        self.max_scenes: int | None = None

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        run_id: str | None = None,
        stop: threading.Event | None = None,
        progress: ProgressCallback | None = None,
        client: ModelClient | None = None,
        model: bool = True,
    ) -> Self:
        """Open a writer: corpus, store (taking its writer lease) and model client. With
        ``model=False`` (an edit such as an undo) no model is configured or needed, the store
        must exist, and the corpus is the one the store records unless the settings name one."""
        run_id = run_id or uuid.uuid4().hex[:12]
        if model:
            corpus = open_corpus(settings)
            try:
                store = open_store(settings)
            except BaseException:
                corpus.close()
                raise
        else:
            store = open_store(settings, must_exist=True)
            try:
                corpus = open_corpus(settings, store)
            except BaseException:
                store.close()
                raise
        try:
            if model:  # (without a model, open_corpus checked it)
                check_corpus_identity(store, corpus)
            # The one place a writer opens the store: a second live writer is refused here.
            store.runs.acquire_writer_lease(run_id)
        except BaseException as exc:
            store.close()
            corpus.close()
            if store.created and not isinstance(exc, WriterLeaseError):
                remove_store_files(store.where)  # a store created for nothing is not kept
                if isinstance(exc, DiskSpaceError):
                    raise DiskSpaceError(f"{exc}; nothing was created") from exc
            raise
        try:
            chat = client or (open_client(settings) if model else None)
            if chat is not None:  # what the server is, said once; one without tools is refused
                require_tools(server_info(chat))
        except BaseException:
            try:
                store.runs.release_writer_lease(run_id)
            finally:
                store.close()
                corpus.close()
                if store.created:
                    remove_store_files(store.where)
            raise
        return cls(
            settings,
            corpus,
            store,
            chat,
            run_id=run_id,
            stop=stop,
            progress=progress,
        )

    @property
    def client(self) -> ModelClient:
        """The model client (opened on first use by an engine opened without a model)."""
        if self._client is None:
            self._client = open_client(self.settings)
        return self._client

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: object
    ) -> None:
        if exc is None:
            self.close()
        elif isinstance(exc, DiskSpaceError) and self._nothing_done_in_a_new_store():
            self.close(discard=True)
            raise DiskSpaceError(f"{exc}; nothing was created") from exc
        elif isinstance(exc, InputError) and not self._run_started and self.store.created:
            self.close(discard=True)  # bad input before any work: the new store is not kept
        elif getattr(exc, "exit_code", None) == 130 or isinstance(exc, KeyboardInterrupt):
            self.close(status="interrupted", error=str(exc))
        else:
            self.close(status="failed", error=f"{type(exc).__name__}: {exc}")

    def _nothing_done_in_a_new_store(self) -> bool:
        """This run created the store and no scene of it committed."""
        try:
            return (
                self.store.created
                and self.store.history.last_revision_id() == 0
                and not any(state.scenes_done for state in self.store.progress.thread_states())
            )
        except TerrariumError:
            return False

    def close(
        self, *, status: str = "finished", error: str | None = None, discard: bool = False
    ) -> None:
        """Record how the run ended (finished, failed, interrupted) and release everything.
        `discard` (a store this run created, then found no room to write in, with no scene
        done): nothing is recorded and the store's files are removed."""
        if discard:
            self.client.close()
            self.store.close()
            self.corpus.close()
            remove_store_files(self.store.where)
            return
        try:
            if self.session is not None:
                self.session.close()  # requests still in flight are on the books as abandoned
                self.session.persist_learned_window()
            if self._run_started:
                self.store.runs.finish_run(self.run_id, status, error)
        finally:
            try:
                self.store.runs.release_writer_lease(self.run_id)
            finally:
                if self._client is not None:
                    self._client.close()
                self.store.close()
                self.corpus.close()

    # -- threads and order ------------------------------------------------------------------

    @property
    def threads(self) -> list[Thread]:
        return list(self._threads)

    def thread(self, thread_id: int) -> Thread:
        if thread_id not in self._by_id:
            return self.corpus.thread(thread_id)  # raises CorpusError naming it
        return self._by_id[thread_id]

    def thread_by_key(self, key: str) -> Thread:
        return self.corpus.thread_by_key(key)

    def _state(self, thread: Thread) -> ThreadState | None:
        return self.store.progress.thread_state(thread.id)

    def _status(self, thread: Thread) -> str:
        state = self._state(thread)
        return state.status if state else "pending"

    def check_order(self, thread_id: int) -> None:
        """Fail fast unless every earlier thread (story order) is annotated."""
        thread = self.thread(thread_id)
        for earlier in self._threads[: thread.position]:
            if self._status(earlier) not in DONE:
                raise OrderError(
                    f"thread {thread.key} cannot be annotated before {earlier.key}: "
                    f"{earlier.key} is not annotated yet (threads are annotated in story order)"
                )

    def later_annotated(self, thread_id: int) -> list[Thread]:
        thread = self.thread(thread_id)
        return [t for t in self._threads[thread.position + 1 :] if self._status(t) in DONE]

    # -- the per-thread sequence ------------------------------------------------------------

    def _ensure_run(self) -> None:
        if not self._run_started:
            # the model is checked (served, its window) before the run is on record: a run
            # refused for bad input leaves no run row
            self._get_annotator()
            # Readers (export, lineage, serve, score, why) use the same corpus and URLs later.
            self.store.set_meta(CORPUS_META, str(self.corpus.path.resolve()))
            self.store.set_meta(URL_TEMPLATE_META, self.corpus.url_template)
            adopt_corpus_identity(self.store, self.corpus)
            self.store.runs.start_run(
                self.run_id, self.settings.model_dump(mode="json", exclude={"api_key"})
            )
            self._run_started = True
            self.check_sources()  # a living corpus: sources edited or deleted since cited

    def _request_options(self, purpose: str) -> dict[str, Any]:
        """Sampling and the thinking switch of a request of this kind (model.sampling)."""
        assert self.session is not None
        return sampling.request_options(self.settings, self.session.model, purpose)

    def _get_annotator(self) -> Annotator:
        if self._annotator is None:
            self.session = ModelSession(
                self.client,
                self.store,
                budget=self.settings.context_budget,
                max_tokens=self.settings.max_tokens,
                run_id=self.run_id,
                request_options=self._request_options,
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
                max_scenes=self.max_scenes,
            )
            self._check_window(self._annotator)
        return self._annotator

    def _check_window(self, annotator: Annotator) -> None:
        """Refuse, before the run writes anything, a window too small to work in: the fixed
        prefix (system prompt and tool schemas, measured), the answer's max_tokens and room for
        the smallest scene part with its known entries and one tool round."""
        smallest = annotator.prefix_tokens + self.settings.max_tokens + MIN_SCENE_ROOM
        if annotator.window < smallest:
            self._annotator = None
            raise ConfigError(
                f"a window of {annotator.window} tokens is below the smallest this run works "
                f"in, {smallest} tokens (system prompt and tool schemas "
                f"{annotator.prefix_tokens}, max_tokens {self.settings.max_tokens}, a scene and "
                f"its tool round {MIN_SCENE_ROOM}): raise --context-budget or lower --max-tokens"
            )

    @property
    def calling(self) -> bool:
        """True while a model request is with the server (a Ctrl-C may abandon it)."""
        return self._annotator is not None and self._annotator.calling.is_set()

    @property
    def in_flight(self) -> int:
        """Model requests with the server right now."""
        return self.session.in_flight if self.session is not None else 0

    def work_left(self, threads: list[Thread]) -> tuple[int, int]:
        """(threads, scenes) of `threads` not yet annotated, for a progress display."""
        left = [thread for thread in threads if self._status(thread) not in DONE]
        scenes = 0
        for thread in left:
            state = self._state(thread)
            scenes += len(self.corpus.scenes(thread.id)) - (state.scenes_done if state else 0)
        return len(left), scenes

    @property
    def scene_limit_reached(self) -> bool:
        return self._annotator is not None and self._annotator.limit_reached

    def thread_finished(self, thread_id: int) -> bool:
        return self._status(self.thread(thread_id)) in DONE

    def thread_status(self, thread_id: int) -> str:
        """`pending`, `annotating`, `annotated`, `curated`, … as the store records it."""
        return self._status(self.thread(thread_id))

    def annotate_thread(self, thread_id: int, *, rewind: bool = False) -> ThreadReport:
        """Read the thread's scenes and write the glossary; resumes at the first open scene.

        A thread already annotated is not annotated twice: asking again changes nothing and
        returns the recorded report (`already_done`), whether or not later threads built on it
        — unless it is the last annotated thread and posts were added to it since (those are
        annotated as new scenes); with `rewind` the glossary rolls back to the end of the
        previous thread and the thread (and every later one, marked for redo) is annotated
        again.
        """
        thread = self.thread(thread_id)
        self.check_order(thread_id)
        later = self.later_annotated(thread_id)
        rewound: list[str] = []
        status = self._status(thread)
        grown: list[Scene] = []
        if status in DONE and not rewind:
            # The living quest: posts added to the last annotated thread are new scenes of it
            # (an earlier thread's new posts wait for a rewind: `status` names them).
            grown = [] if later else self.new_scenes(thread)
            if not grown:
                return self._recorded_report(thread, already_done=True)
        if later and not rewind:
            raise OrderError(
                f"thread {thread.key} is not annotated but later threads are "
                f"({later[0].key}..{later[-1].key}); annotating it needs rewind, which rolls "
                "the glossary back to the end of the previous thread and redoes them in order",
                setting="rewind",
            )
        self._get_annotator()  # a window too small is refused before anything is written
        self._ensure_run()
        if rewind and (status in DONE or later):
            rewound = [t.key for t in (thread, *later) if self._status(t) in DONE or t is thread]
            self._get_annotator().rewind_to_before(
                thread, reason=f"rewind requested for {thread.key}"
            )
        if grown:
            self._reopen(thread, len(grown))
        self._curate_predecessors(thread)
        started = time.monotonic()
        annotator = self._get_annotator()
        session = annotator.session
        session.peak_in_flight = session.in_flight  # the peak of this thread's annotation
        outcome = annotator.annotate_thread(thread)
        report = self._recorded_report(thread)
        report.scenes_annotated = outcome.scenes_annotated
        report.duration_s = round(time.monotonic() - started, 3)
        mine = self.store.runs.agent_call_totals(run_id=self.run_id, thread_id=thread.id)
        if report.duration_s > 0:
            report.completion_tokens_per_s = round(mine.completion_tokens / report.duration_s, 1)
        report.in_flight_peak = session.peak_in_flight
        report.rewound_threads = rewound
        if report.suspect:  # said now, and kept: `terrarium status` and Dagster show it too
            log.warning("%s is SUSPECT: %s", thread.key, report.suspect)
        return report

    def new_scenes(self, thread: Thread) -> list[Scene]:
        """Scenes of an annotated thread added since it was annotated (its new posts)."""
        state = self._state(thread)
        if state is None or state.status not in DONE:
            return []
        scenes = split_after(self.corpus.scenes(thread.id), through_post(state))
        return scenes_after(scenes, state.cursor_scene_id)

    def _reopen(self, thread: Thread, new: int) -> None:
        """An annotated thread that grew is annotated again from its new scenes, then curated."""
        state = self._state(thread)
        assert state is not None
        log.info("%s grew by %d scene(s) since it was annotated: annotating them", thread.key, new)
        self.store.progress.set_thread_state(
            thread.id, status="annotating", scenes_total=state.scenes_done + new
        )

    def check_sources(self) -> list[SourceChange]:
        """Compare the posts cited as sources with the corpus now, once per run (the CLI at its
        start, any run when it starts work): each change one warning line, kept in the store
        and on the entries citing it (a writer). Posts cited before hashes were kept are
        hashed as they are now."""
        if self._source_changes is not None:
            return self._source_changes
        hash_of = hash_lookup(self.corpus.post)
        self.store.sources.record(hash_of)

        def text_of(post_id: int) -> str | None:
            post = self.corpus.post(post_id)
            return post.text if post is not None else None

        changes = self.store.sources.check(hash_of, text_of)
        if changes or self.store.sources.marked():
            with self.store.transaction():
                self.store.sources.mark(changes)
                self._tag_changed_sources(changes)
        for change in changes:
            log.warning("source changed: %s", describe_source_change(change))
        self._source_changes = changes
        return changes

    def _tag_changed_sources(self, changes: list[SourceChange]) -> None:
        """Mark the entries citing a source whose quotes no longer hold (edited or deleted) with
        the `source-changed` tag, a revision that says why; take it off when none is left, so
        every export shows it while it is true."""
        broken: dict[int, list[str]] = {}
        for change in changes:
            if not change.quotes_hold:
                for entry_id in change.entry_ids:
                    broken.setdefault(entry_id, []).append(f"{change.thread_id}#{change.post_id}")
        actor = Actor(kind="system", run_id=self.run_id)
        tagged = {
            entry.id for entry in self.store.glossary.entries() if SOURCE_CHANGED_TAG in entry.tags
        }
        for entry_id in sorted(set(broken) | tagged):
            entry = self.store.glossary.get_entry(entry_id)
            if entry.deleted or entry.status == "merged":
                continue
            if entry_id in broken and SOURCE_CHANGED_TAG not in entry.tags:
                posts = ", ".join(broken[entry_id])
                tags = [*entry.tags, SOURCE_CHANGED_TAG]
                reason = f"source post {posts} changed in the corpus: a quote no longer holds"
            elif entry_id not in broken and SOURCE_CHANGED_TAG in entry.tags:
                tags = [tag for tag in entry.tags if tag != SOURCE_CHANGED_TAG]
                reason = "its source posts hold their quotes again"
            else:
                continue
            self.store.glossary.update_entry(actor, entry_id, tags=tags, reason=reason)

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
        unfinished (nothing to curate yet)."""
        if annotate and threads:
            self.check_order(threads[0].id)
        for index, thread in enumerate(threads):
            if self.stop.is_set() or self.scene_limit_reached:
                return
            if annotate:
                caught_up = tuple(self.uncurated_predecessors(thread.id))
                report = self.annotate_thread(thread.id, rewind=rewind and index == 0)
                yield ThreadStep("annotated", thread, annotation=report, caught_up=caught_up)
            if curate:
                if annotate and not self.thread_finished(thread.id):
                    return  # stopped inside the thread: nothing to curate yet
                already = self._status(thread) == "curated"
                curation = self.curate_thread(thread.id)
                yield ThreadStep("curated", thread, curation=curation, already_curated=already)

    def restore_snapshot(self, snapshot_id: int) -> None:
        """Roll the glossary back to a snapshot and make its context the live one (resumable)."""
        load_checkpoint(self.store, snapshot_id)  # an unknown id is refused before anything
        self._ensure_run()
        actor = Actor(kind="rollback", run_id=self.run_id)
        restore_from_snapshot(self.store, actor, snapshot_id)
        if self._annotator is not None:
            self._annotator.reload()

    def uncurated_predecessors(self, thread_id: int) -> list[Thread]:
        """Earlier threads annotated but not curated (annotating `thread_id` curates them first)."""
        thread = self.thread(thread_id)
        return [t for t in self._threads[: thread.position] if self._status(t) == "annotated"]

    def curation_decisions(self, report: CurationReport) -> list[CurationDecisionRow]:
        """The decisions of one curation, readable: term, decision, target, reasoning."""
        return curation_rows(self.store, report)

    def recorded_curation(self, thread: Thread) -> CurationReport:
        """The report of a curation already done, rebuilt from its decision rows."""
        return recorded_curation(self.store, thread)

    def _recorded_report(self, thread: Thread, *, already_done: bool = False) -> ThreadReport:
        return thread_report(self.store, self.corpus, thread, already_done=already_done)

    def _curate_predecessors(self, thread: Thread) -> None:
        """Catch-up: a thread is curated before the next one is annotated."""
        for earlier in self._threads[: thread.position]:
            if self._status(earlier) == "annotated":
                self.curate_thread(earlier.id)

    def curate_thread(self, thread_id: int) -> CurationReport:
        thread = self.thread(thread_id)
        status = self._status(thread)
        if status == "curated":
            return self.recorded_curation(thread)
        if status != "annotated":
            raise OrderError(f"thread {thread.key} cannot be curated before it is annotated")
        self._get_annotator()  # a window too small is refused before anything is written
        self._ensure_run()
        return self._curate(thread)

    def _curate(self, thread: Thread) -> CurationReport:
        """Review the thread's tentative entries in one transaction. The curator's requests carry
        no tools (its answer is decision lines), so they could not reuse the agent's cached
        prefix (the tools are part of it): they are the curator's short system prompt and the
        review message alone, which costs less than the whole conversation uncached."""
        annotator = self._get_annotator()
        state = self._state(thread)
        answer_tokens = sampling.answer_tokens(self.settings, "curate", annotator.window)
        # the decision lines' room: what thinking leaves of the answer (about half)
        thinking = sampling.thinks(self.settings, "curate")
        answer_room = (answer_tokens or self.settings.max_tokens) // (2 if thinking else 1)
        actor = Actor(
            kind="curator",
            run_id=self.run_id,
            thread_id=thread.id,
            snapshot_id=state.checkpoint_id if state else None,
        )
        try:
            with annotator.beside_scenes(thread), self.store.transaction(deferred=True):
                # the review message takes what the window leaves beside the curator's prompt
                # and its answer (a small window: a smaller message, never one cut to fit)
                system = {"role": "system", "content": CURATOR_SYSTEM_PROMPT}
                room = annotator.window - (answer_tokens or self.settings.max_tokens) - 64
                room -= annotator.session.count([system], None)
                message_tokens = max(CURATE_MESSAGE_MIN, min(CURATE_MESSAGE_TOKENS, room))
                report = curate_thread(
                    self.store,
                    self.corpus,
                    partial(
                        annotator.ask,
                        purpose="curate",
                        max_tokens=answer_tokens,
                        decided=answer_decides,
                    ),
                    chat_many=partial(
                        annotator.ask_many,
                        purpose="curate",
                        max_tokens=answer_tokens,
                        decided=answer_decides,
                    ),
                    thread_id=thread.id,
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
                    run_id=self.run_id,
                    end_revision_id=self.store.history.last_revision_id(),
                    checkpoint_id=state.checkpoint_id,
                )
        finally:
            annotator.record_calls()
        return report

    def export(
        self,
        out_dir: Path,
        *,
        formats: tuple[str, ...] = FORMATS,
        as_of_thread: int | None = None,
    ) -> ExportReport:
        if as_of_thread is not None:
            self.thread(as_of_thread)
        return build_export(
            self.store, self.corpus, Path(out_dir), formats=formats, as_of_thread=as_of_thread
        )

    # -- the reader's edition ----------------------------------------------------------------

    def write_edition(self, as_of_thread: int) -> list[EditionReport]:
        """The reader's edition up to `as_of_thread`: every thread up to it without a current
        edition gets one, in story order (each after its curation: refused with one line if a
        thread up to it is not curated). Returns a report per thread up to it."""
        target = self.thread(as_of_thread)
        threads = self._threads[: target.position + 1]
        for thread in threads:
            if self._status(thread) != "curated":
                raise OrderError(
                    f"the edition as of {target.key} needs every thread up to it curated; "
                    f"{thread.key} is {self._status(thread)}: run it first"
                )
        self._get_annotator()  # the session: the one window gate every request passes
        self._ensure_run()
        assert self.session is not None
        writer = EditionWriter(
            self.store,
            self.corpus,
            self.session,
            concurrency=self.settings.concurrency,
            run_id=self.run_id,
            stop=self.stop,
            progress=self.progress,
        )
        return writer.write(threads)

    # -- corrections ------------------------------------------------------------------------

    def undo(
        self,
        *,
        decision_id: int | None = None,
        revision_id: int | None = None,
        reason: str | None = None,
    ) -> UndoResult:
        """Undo one curator decision or one revision with compensating revisions (by the user,
        in this run), however the entries changed since. Exactly one id is given."""
        if (decision_id is None) == (revision_id is None):
            raise InputError("undo: give a curator decision id or a revision id (one of them)")
        actor = Actor(kind="user", run_id=self.run_id)
        if decision_id is not None:
            return undo_decision(self.store, actor, decision_id, reason)
        assert revision_id is not None
        return undo_revision(self.store, actor, revision_id, reason)
