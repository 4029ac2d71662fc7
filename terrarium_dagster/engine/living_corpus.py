"""The living corpus: a story that grows and changes between runs.

Posts added to the last annotated thread become its new scenes (`reopen_grown`); a
post cited as a source and edited or deleted since is reported, kept in the store and marked on
the entries citing it (`check_sources`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from terrarium_dagster.corpus.living import cited_lookups, scenes_after, split_after
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import post_place
from terrarium_dagster.corpus.units import Scene, Thread
from terrarium_dagster.engine.order import DONE
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ThreadState
from terrarium_dagster.store.progress import through_post
from terrarium_dagster.store.sources import SourceChange
from terrarium_dagster.store.sources import describe as describe_source_change

log = logging.getLogger(__name__)

SOURCE_CHANGED_TAG = "source-changed"  # an entry citing a post edited or deleted since


class LivingCorpus:
    """New posts and changed sources, seen by one run."""

    def __init__(self, corpus: Corpus, store: GlossaryStore, *, run_id: str) -> None:
        self.corpus = corpus
        self.store = store
        self.run_id = run_id
        self._source_changes: list[SourceChange] | None = None  # once checked this run

    def new_scenes(self, thread: Thread, state: ThreadState | None) -> list[Scene]:
        """Scenes of an annotated thread (its recorded `state`) added since it was annotated
        (its new posts)."""
        if state is None or state.status not in DONE:
            return []
        scenes = split_after(self.corpus.scenes(thread.id), through_post(state))
        return scenes_after(scenes, state.cursor_scene_id)

    def reopen_grown(
        self, thread: Thread, state: ThreadState | None, *, before_write: Callable[[], None]
    ) -> bool:
        """An annotated thread that grew (new scenes since it was annotated) is annotated again
        from its new scenes, then curated: True when it did. `before_write` runs before its
        state is written (the run goes on record first); nothing is written when it did not
        grow."""
        new = len(self.new_scenes(thread, state))
        if not new:
            return False
        before_write()
        assert state is not None
        log.info("%s grew by %d scene(s) since it was annotated: annotating them", thread.key, new)
        self.store.progress.set_thread_state(
            thread.id, status="annotating", scenes_total=state.scenes_done + new
        )
        return True

    def check_sources(self) -> list[SourceChange]:
        """Compare the posts cited as sources with the corpus now, once per run (the CLI at its
        start, any run when it starts work): each change one warning line, kept in the store
        and on the entries citing it (a writer). Posts cited before hashes were kept are
        hashed as they are now."""
        if self._source_changes is not None:
            return self._source_changes
        hash_of, text_of = cited_lookups(self.corpus, self.store.sources.cited_posts())
        self.store.sources.record(hash_of)

        changes = self.store.sources.check(hash_of, text_of)
        if changes or self.store.sources.marked():
            with self.store.transaction():
                self.store.sources.mark(changes)
                self._tag_changed_sources(changes)
        place = post_place(self.corpus) if changes else None
        for change in changes:
            log.warning("source changed: %s", describe_source_change(change, place))
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
