"""Edits of a glossary already written: undo, a snapshot restored, the exports, the reader's
edition (`Engine.edits`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from terrarium_dagster.corpus.story import is_book
from terrarium_dagster.corpus.units import thread_name
from terrarium_dagster.curation.decision_undo import (
    require_one_id,
    undo_decision,
    undo_revision,
)
from terrarium_dagster.curation.decisions import UndoResult
from terrarium_dagster.edition.writer import EditionReport, EditionWriter
from terrarium_dagster.engine.parts import EngineParts
from terrarium_dagster.errors import OrderError
from terrarium_dagster.exports import build_export
from terrarium_dagster.exports.build import FORMATS
from terrarium_dagster.reports import ExportReport
from terrarium_dagster.snapshots.context_snapshots import load_snapshot, restore_from_snapshot
from terrarium_dagster.store.annotator import Actor


class GlossaryEdits(EngineParts):
    """Corrections and what is made from the glossary, in one run."""

    def restore_snapshot(self, snapshot_id: int) -> None:
        """Roll the glossary back to a snapshot and make its context the live one (resumable)."""
        load_snapshot(self.store, snapshot_id)  # an unknown id is refused before anything
        self.run.ensure_started()
        actor = Actor(kind="rollback", run_id=self.run.run_id)
        restore_from_snapshot(self.store, actor, snapshot_id)
        self.run.reload()

    def export(
        self,
        out_dir: Path,
        *,
        formats: tuple[str, ...] = FORMATS,
        as_of_thread: int | None = None,
    ) -> ExportReport:
        if as_of_thread is not None:
            self.order.thread(as_of_thread)
        return build_export(
            self.store, self.corpus, Path(out_dir), formats=formats, as_of_thread=as_of_thread
        )

    def write_edition(self, as_of_thread: int) -> list[EditionReport]:
        """The reader's edition up to `as_of_thread`: every thread up to it without a current
        edition gets one, in story order (each after its curation: refused with one line if a
        thread up to it is not curated). Returns a report per thread up to it."""
        target = self.order.thread(as_of_thread)
        threads = self.order.before(target, inclusive=True)
        book = is_book(self.corpus)
        named = partial(thread_name, book=book)  # a book's chapter by its number, as `status`
        for thread in threads:
            if self.order.status(thread) != "curated":
                unit = "chapter" if book else "thread"
                raise OrderError(
                    f"the edition as of {named(target.key)} needs every {unit} up to it "
                    f"curated; {named(thread.key)} is {self.order.status(thread)}: run it first "
                    "(`terrarium run`)"
                )
        self.run.annotator()  # the session: the one window gate every request passes
        if any(self.store.editions.thread(thread.id) is None for thread in threads):
            self.run.ensure_started()  # a run on record only when there is one to write
        assert self.run.session is not None
        writer = EditionWriter(
            self.store,
            self.corpus,
            self.run.session,
            concurrency=self.settings.concurrency,
            run_id=self.run.run_id,
            stop=self.run.stop,
            progress=self.run.progress,
        )
        return writer.write(threads)

    def undo(
        self,
        *,
        decision_id: int | None = None,
        revision_id: int | None = None,
        reason: str | None = None,
    ) -> UndoResult:
        """Undo one curator decision or one revision with compensating revisions (by the user,
        in this run), however the entries changed since. Exactly one id is given."""
        require_one_id(decision_id, revision_id)
        actor = Actor(kind="user", run_id=self.run.run_id)
        if decision_id is not None:
            return undo_decision(self.store, actor, decision_id, reason)
        assert revision_id is not None
        return undo_revision(self.store, actor, revision_id, reason)
