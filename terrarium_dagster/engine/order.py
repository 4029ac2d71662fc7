"""The thread order and its status questions, beside the store's progress records.

One `ThreadOrder` answers every question the thread sequence asks about where threads stand:
a thread's recorded state and status, whether earlier threads are annotated (`check_order`),
which later ones are, which earlier ones still wait for their curation, what work is left.
"""

from __future__ import annotations

from terrarium_dagster.corpus.models import Thread
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import OrderError
from terrarium_dagster.store.models import ThreadState
from terrarium_dagster.store.progress import ThreadProgress

DONE = ("annotated", "curated")


class ThreadOrder:
    """The corpus's threads in story order and where each stands (`store.progress`)."""

    def __init__(self, corpus: Corpus, progress: ThreadProgress) -> None:
        self.corpus = corpus
        self.progress = progress
        self._threads = corpus.threads()
        self._by_id = {thread.id: thread for thread in self._threads}

    @property
    def threads(self) -> list[Thread]:
        return list(self._threads)

    def thread(self, thread_id: int) -> Thread:
        if thread_id not in self._by_id:
            return self.corpus.thread(thread_id)  # raises CorpusError naming it
        return self._by_id[thread_id]

    def thread_by_key(self, key: str) -> Thread:
        return self.corpus.thread_by_key(key)

    def before(self, thread: Thread, *, inclusive: bool = False) -> list[Thread]:
        """The threads before `thread` (and it, `inclusive`), in story order."""
        return self._threads[: thread.position + (1 if inclusive else 0)]

    def state(self, thread: Thread) -> ThreadState | None:
        return self.progress.thread_state(thread.id)

    def status(self, thread: Thread) -> str:
        """`pending`, `annotating`, `annotated`, `curated`, … as the store records it."""
        state = self.state(thread)
        return state.status if state else "pending"

    def finished(self, thread_id: int) -> bool:
        return self.status(self.thread(thread_id)) in DONE

    def check_order(self, thread_id: int) -> None:
        """Fail fast unless every earlier thread (story order) is annotated."""
        thread = self.thread(thread_id)
        for earlier in self._threads[: thread.position]:
            if self.status(earlier) not in DONE:
                raise OrderError(
                    f"thread {thread.key} cannot be annotated before {earlier.key}: "
                    f"{earlier.key} is not annotated yet (threads are annotated in story order)"
                )

    def later_annotated(self, thread_id: int) -> list[Thread]:
        thread = self.thread(thread_id)
        return [t for t in self._threads[thread.position + 1 :] if self.status(t) in DONE]

    def uncurated_predecessors(self, thread_id: int) -> list[Thread]:
        """Earlier threads annotated but not curated (annotating `thread_id` curates them first)."""
        thread = self.thread(thread_id)
        return [t for t in self._threads[: thread.position] if self.status(t) == "annotated"]

    def work_left(self, threads: list[Thread]) -> tuple[int, int]:
        """(threads, scenes) of `threads` not yet annotated, for a progress display."""
        left = [thread for thread in threads if self.status(thread) not in DONE]
        scenes = 0
        for thread in left:
            state = self.state(thread)
            scenes += len(self.corpus.scenes(thread.id)) - (state.scenes_done if state else 0)
        return len(left), scenes
