"""The thread order and its status questions, beside the store's progress records.

`ThreadOrder.standing` answers, in one `Standing` read at once from the store's progress
records, every question the thread sequence asks about a thread: its recorded state and status,
whether every earlier thread is annotated (`check_order`), which later ones are, which earlier
ones still wait for their curation. `ThreadOrder` also says what work is left.
"""

from __future__ import annotations

from dataclasses import dataclass

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import is_book
from terrarium_dagster.corpus.units import Thread, thread_name
from terrarium_dagster.errors import PredecessorNotAnnotated
from terrarium_dagster.store.models import ThreadState
from terrarium_dagster.store.progress import ThreadProgress

DONE = ("annotated", "curated")


@dataclass(frozen=True)
class Standing:
    """Where one thread stands in the story's order, as the store's progress records say."""

    thread: Thread
    state: ThreadState | None
    not_annotated_before: Thread | None  # the first earlier thread not annotated yet
    uncurated_predecessors: tuple[Thread, ...]  # earlier threads annotated but not curated
    later_annotated: tuple[Thread, ...]  # later threads annotated (or curated)
    book: bool = False  # an imported book, its threads named as chapters (known for a refusal)

    @property
    def status(self) -> str:
        """`pending`, `annotating`, `annotated`, `curated`, … as the store records it."""
        return self.state.status if self.state else "pending"

    @property
    def finished(self) -> bool:
        return self.status in DONE

    def check_order(self) -> None:
        """Fail fast unless every earlier thread (story order) is annotated."""
        earlier = self.not_annotated_before
        if earlier is not None:
            this = thread_name(self.thread.key, book=self.book, labelled=True)
            missing = thread_name(earlier.key, book=self.book)
            unit = "chapters" if self.book else "threads"
            raise PredecessorNotAnnotated(
                f"{this} cannot be annotated before {missing}: {missing} is not annotated yet "
                f"({unit} are annotated in story order)",
                thread=self.thread.key,
                missing=earlier.key,
            )


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

    def standing(self, thread_id: int) -> Standing:
        """Where the thread stands, with every earlier and later thread's status read at once."""
        thread = self.thread(thread_id)
        states = {state.thread_id: state for state in self.progress.thread_states()}

        def status(other: Thread) -> str:
            state = states.get(other.id)
            return state.status if state else "pending"

        earlier = self._threads[: thread.position]
        missing = next((t for t in earlier if status(t) not in DONE), None)
        return Standing(
            thread=thread,
            state=states.get(thread.id),
            not_annotated_before=missing,
            uncurated_predecessors=tuple(t for t in earlier if status(t) == "annotated"),
            later_annotated=tuple(
                t for t in self._threads[thread.position + 1 :] if status(t) in DONE
            ),
            # read from the corpus file only for the refusal that names it
            book=missing is not None and is_book(self.corpus),
        )

    def work_left(self, threads: list[Thread]) -> tuple[int, int]:
        """(threads, scenes) of `threads` not yet annotated, for a progress display."""
        left = [thread for thread in threads if self.status(thread) not in DONE]
        scenes = 0
        for thread in left:
            state = self.state(thread)
            scenes += len(self.corpus.scenes(thread.id)) - (state.scenes_done if state else 0)
        return len(left), scenes
