"""The engine facade: what the CLI and the Dagster assets call. It never imports Dagster.

One `Engine` serves one run. It opens the corpus, the store (taking its writer lease) and the
model client (`opening.py`), and hands each use case its room: the thread sequence
(`sequence.py`, asking `order.py` where threads stand), the living corpus (`living_corpus.py`),
edits of the glossary (`edits.py`); the run's record and model path are `model_run.py`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Self

from terrarium_dagster.config import Settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.curation.decisions import CurationReport
from terrarium_dagster.edition.writer import EditionReport
from terrarium_dagster.engine.edits import GlossaryEdits
from terrarium_dagster.engine.living_corpus import LivingCorpus
from terrarium_dagster.engine.model_run import ModelRun, ProgressCallback, quiet
from terrarium_dagster.engine.opening import open_client, open_writer, release_writer
from terrarium_dagster.engine.order import ThreadOrder
from terrarium_dagster.engine.sequence import ThreadSequence
from terrarium_dagster.errors import DiskSpaceError, InputError, TerrariumError
from terrarium_dagster.model.replicas import ModelClient
from terrarium_dagster.reports import ThreadReport
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.sources import SourceChange


class Engine:
    """A run over one corpus and one store. Its rooms: `order` (where threads stand),
    `sequence` (annotate, curate), `living` (new posts, changed sources), `edits` (undo,
    restore, export, edition), `run` (the run's record and model path)."""

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
        self.progress: ProgressCallback = progress or quiet
        self.max_scenes: int | None = None  # read when the scene loop is made
        self.order = ThreadOrder(corpus, store.progress)
        self.living = LivingCorpus(corpus, store, run_id=run_id)
        self.run = ModelRun(
            settings,
            corpus,
            store,
            self.living,
            client=lambda: self.client,
            max_scenes=lambda: self.max_scenes,
            run_id=run_id,
            stop=self.stop,
            progress=self.progress,
        )
        parts = (settings, corpus, store, self.order, self.living, self.run)
        self.sequence = ThreadSequence(*parts)
        self.edits = GlossaryEdits(*parts)

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
        recorded_corpus: bool = False,
        must_exist: bool = False,
        check: Callable[[Corpus, GlossaryStore], None] | None = None,
    ) -> Self:
        """Open a writer: corpus, store (taking its writer lease) and model client. With
        ``model=False`` (an edit such as an undo) no model is configured or needed, the store
        must exist, and the corpus is the one the store records unless the settings name one;
        ``recorded_corpus`` (the command line's run and edition) takes that corpus for an existing
        store with a model too (Dagster's code location keeps to its corpus resource, which its
        partitions come from); ``must_exist`` (an edition) refuses a store that is not there;
        ``check`` (the command's input checks) runs before the writer lease is taken, so a
        refusal writes nothing."""
        run_id = run_id or uuid.uuid4().hex[:12]
        corpus, store, chat = open_writer(
            settings,
            run_id,
            client,
            model=model,
            recorded_corpus=recorded_corpus,
            must_exist=must_exist,
            check=check,
        )
        return cls(settings, corpus, store, chat, run_id=run_id, stop=stop, progress=progress)

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
        elif isinstance(exc, InputError) and not self.run.started and self.store.created:
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
            self.store.discard()
            self.corpus.close()
            return
        try:
            self.run.finish(status, error)
        finally:
            release_writer(self.store, self.corpus, self._client, self.run_id)

    # -- what the CLI's progress display asks -----------------------------------------------

    @property
    def threads(self) -> list[Thread]:
        return self.order.threads

    def thread(self, thread_id: int) -> Thread:
        return self.order.thread(thread_id)

    def work_left(self, threads: list[Thread]) -> tuple[int, int]:
        """(threads, scenes) of `threads` not yet annotated, for a progress display."""
        return self.order.work_left(threads)

    @property
    def calling(self) -> bool:
        """True while a model request is with the server (a Ctrl-C may abandon it)."""
        return self.run.calling

    @property
    def in_flight(self) -> int:
        """Model requests with the server right now."""
        return self.run.in_flight

    # -- the thread sequence (sequence.py) --------------------------------------------------

    def annotate_thread(self, thread_id: int, *, rewind: bool = False) -> ThreadReport:
        """One thread's scenes into the glossary (`ThreadSequence.annotate_thread`)."""
        return self.sequence.annotate_thread(thread_id, rewind=rewind)

    def curate_thread(self, thread_id: int) -> CurationReport:
        """One annotated thread curated (`ThreadSequence.curate_thread`)."""
        return self.sequence.curate_thread(thread_id)

    def check_sources(self) -> list[SourceChange]:
        """Posts cited as sources and changed since, once per run (`LivingCorpus`)."""
        return self.living.check_sources()

    # -- edits (edits.py) -------------------------------------------------------------------

    def restore_snapshot(self, snapshot_id: int) -> None:
        """Roll the glossary back to a snapshot (`GlossaryEdits.restore_snapshot`)."""
        self.edits.restore_snapshot(snapshot_id)

    def write_edition(self, as_of_thread: int) -> list[EditionReport]:
        """The reader's edition up to a thread (`GlossaryEdits.write_edition`)."""
        return self.edits.write_edition(as_of_thread)
