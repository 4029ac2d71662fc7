"""Scenes: the quest master's story updates, batched between the players' replies.

A scene is a maximal run of consecutive QM story posts within one thread, in (time, id) order.
The rules, decided here and tested in `tests/test_scenes.py`:

- A post tagged `qm_post` is story text, whatever else it is tagged (`op_post`, `story_post`,
  `dropped_trip`: a QM post that lost its trip code is still the QM's if it is tagged so).
- A post tagged `vote_tally_post` is not story text, even when the QM posted it: it is left out of
  every scene and it ENDS the current run (a tally separates two updates).
- Any other post (a player's) ends the current run.
- A QM post whose cleaned text is empty (an image-only post) is skipped without ending the run.
- A change of thread ends the run; scene indices count from 0 within each thread.

`SceneBuilder` applies the rules one post at a time, so a whole corpus streams through in constant
memory; `batch_scenes` is the list form. `story_role` says what a post's tags make of it, so a
reader can skip cleaning the bodies of posts that can only end a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import Enum

from terrarium_dagster.corpus.units import QM_TAG, VOTE_TALLY_TAG, Post, Scene

__all__ = ["Role", "SceneBuilder", "batch_scenes", "iter_batch_scenes", "story_role"]


class Role(Enum):
    STORY = "story"  # a QM story post: joins the current run (unless its text is empty)
    BREAK = "break"  # a player post or a vote tally: ends the current run


def story_role(tags: frozenset[str]) -> Role:
    """What a post with these tags is to scene batching."""
    if QM_TAG in tags and VOTE_TALLY_TAG not in tags:
        return Role.STORY
    return Role.BREAK


class SceneBuilder:
    """Collects the scenes of one thread, one post at a time (posts in (time, id) order)."""

    __slots__ = ("_count", "_last", "_run", "thread_id")

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self._run: list[Post] = []
        self._count = 0
        self._last: tuple[int, int] | None = None

    @property
    def scenes_done(self) -> int:
        return self._count

    def add(self, post: Post) -> Scene | None:
        """Feed the next post of the thread; returns the scene it completed, if any."""
        if post.thread_id != self.thread_id:
            raise ValueError(f"post {post.ref} is not in thread {self.thread_id}")
        order = (post.time, post.id)
        if self._last is not None and order <= self._last:
            raise ValueError(
                f"post {post.ref} comes before the previous post in (time, id) order; "
                "feed posts sorted by time, then id"
            )
        self._last = order
        if story_role(post.tags) is Role.BREAK:
            return self.interrupt()
        if post.text:
            self._run.append(post)
        return None

    def interrupt(self) -> Scene | None:
        """A post that is not story text came next: the current run, if any, is a scene."""
        if not self._run:
            return None
        first = self._run[0]
        scene = Scene(
            id=f"{self.thread_id}#{first.id}",
            thread_id=self.thread_id,
            index=self._count,
            posts=tuple(self._run),
        )
        self._count += 1
        self._run = []
        return scene

    def finish(self) -> Scene | None:
        """The thread ended: the last run, if any, is a scene."""
        return self.interrupt()


def iter_batch_scenes(posts: Iterable[Post]) -> Iterator[Scene]:
    """The scenes of `posts`, streaming, as they complete.

    `posts` is one or more threads one after the other, each in (time, id) order (ValueError
    otherwise); a change of thread ends the current run.
    """
    builder: SceneBuilder | None = None
    for post in posts:
        if builder is None or post.thread_id != builder.thread_id:
            yield from finished(builder)
            builder = SceneBuilder(post.thread_id)
        scene = builder.add(post)
        if scene is not None:
            yield scene
    yield from finished(builder)


def finished(builder: SceneBuilder | None) -> Iterator[Scene]:
    """The last scene of the thread `builder` read (none without a builder or a last run)."""
    last = builder.finish() if builder is not None else None
    if last is not None:
        yield last


def batch_scenes(posts: Iterable[Post]) -> list[Scene]:
    """The scenes of a thread's posts. See the module docstring for the rules.

    The posts are put in (time, id) order first, so posts whose ids are out of time order land
    where their time puts them. Posts of several threads give each thread's scenes, threads in
    the order they first appear.
    """
    listed = list(posts)
    thread_rank: dict[int, int] = {}
    for post in listed:
        thread_rank.setdefault(post.thread_id, len(thread_rank))
    listed.sort(key=lambda post: (thread_rank[post.thread_id], post.time, post.id))
    return list(iter_batch_scenes(listed))
