"""The living quest in Dagster: the last annotated thread's partition is requested again when
story posts were added to it (the discovery sensor and the schedule both ask `grown_last_thread`).

Only the last annotated thread: threads are annotated in story order, so an earlier thread's new
posts wait for a rewind (`terrarium status` names them).
"""

from __future__ import annotations

from dataclasses import dataclass

from terrarium_dagster.defs.resources import CorpusResource, StoreResource
from terrarium_dagster.engine import DONE
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.progress import through_post


@dataclass(frozen=True)
class GrownThread:
    key: str
    through_post: int  # the last post annotated
    new_posts: int  # story posts after it

    @property
    def run_key(self) -> str:
        """One request per growth seen: the same new posts are not requested twice."""
        return f"grown {self.key} after post {self.through_post} (+{self.new_posts})"


def grown_last_thread(store: StoreResource, corpus: CorpusResource) -> GrownThread | None:
    """The last annotated thread, when story posts were added to it since it was annotated and
    no later thread has been started."""
    try:
        with store.read() as glossary:
            states = glossary.progress.thread_states()
    except InputError:  # no store yet
        return None
    done = [state for state in states if state.status in DONE]
    if not done:
        return None
    last = max(done, key=lambda state: state.position)
    if any(s.position > last.position and s.status != "pending" for s in states):
        return None
    through = through_post(last)
    if through is None:
        return None
    try:
        with corpus.open() as reader:
            count = reader.story_posts_after(last.thread_id, through)
    except InputError:
        return None
    return GrownThread(last.thread_key, through, count) if count else None
