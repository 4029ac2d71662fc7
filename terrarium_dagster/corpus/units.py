"""The corpus as the engine sees it: posts, threads and scenes (immutable values)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from terrarium_dagster.errors import InputError

__all__ = [
    "DROPPED_TRIP_TAG",
    "OP_TAG",
    "QM_TAG",
    "STORY_TAG",
    "VOTE_TALLY_TAG",
    "Post",
    "Scene",
    "Thread",
    "format_thread_key",
    "parse_thread_key",
]

QM_TAG = "qm_post"
OP_TAG = "op_post"
STORY_TAG = "story_post"
VOTE_TALLY_TAG = "vote_tally_post"
DROPPED_TRIP_TAG = "dropped_trip"

_THREAD_KEY = re.compile(r"t(\d{5,})-(\d+)")


@dataclass(frozen=True, slots=True)
class Post:
    """One post, its body cleaned to text (see `corpus.clean`)."""

    id: int
    thread_id: int
    name: str | None
    trip_code: str | None
    subject: str | None
    time: int
    text: str
    tags: frozenset[str]

    @property
    def ref(self) -> str:
        """The post reference `<thread_id>#<post_id>`."""
        return f"{self.thread_id}#{self.id}"

    @property
    def is_qm(self) -> bool:
        """Posted by the quest master (tagged `qm_post`)."""
        return QM_TAG in self.tags

    @property
    def is_vote_tally(self) -> bool:
        """A vote tally (tagged `vote_tally_post`): not story text."""
        return VOTE_TALLY_TAG in self.tags


@dataclass(frozen=True, slots=True)
class Thread:
    """One thread; `position` is its 0-based index in story order (first post time, then id)."""

    id: int
    title: str
    position: int
    first_time: int
    post_count: int

    @property
    def key(self) -> str:
        """The partition key, `t<position:05d>-<id>`: keys sort in story order."""
        return format_thread_key(self.position, self.id)


@dataclass(frozen=True, slots=True)
class Scene:
    """A maximal run of consecutive QM story posts within one thread (see `corpus.scenes`)."""

    id: str
    thread_id: int
    index: int
    posts: tuple[Post, ...]

    @property
    def text(self) -> str:
        """The posts as `[post <id>]` blocks, separated by a blank line."""
        return "\n\n".join(f"[post {post.id}]\n{post.text}" for post in self.posts)

    @property
    def post_ids(self) -> tuple[int, ...]:
        return tuple(post.id for post in self.posts)


def format_thread_key(position: int, thread_id: int) -> str:
    """The partition key of the thread at `position` in story order."""
    return f"t{position:05d}-{thread_id}"


def parse_thread_key(key: str) -> tuple[int, int]:
    """`t00042-32266754` -> `(42, 32266754)`; InputError unless the key is in canonical form."""
    match = _THREAD_KEY.fullmatch(key) if isinstance(key, str) else None
    if match is None:
        raise InputError(
            f"malformed thread key {key!r}: expected 't<position, 5+ digits>-<thread id>', "
            "e.g. 't00042-32266754'"
        )
    position, thread_id = int(match.group(1)), int(match.group(2))
    if format_thread_key(position, thread_id) != key:
        raise InputError(
            f"malformed thread key {key!r}: not canonical, expected "
            f"{format_thread_key(position, thread_id)!r}"
        )
    return position, thread_id


def thread_title(raw: object) -> str:
    """A thread's title as the corpus gives it, the one rule for every reader of it: NULL or
    only whitespace ("   ") is no title, "" (what shows it shows the thread without one)."""
    text = "" if raw is None else str(raw)
    return text if text.strip() else ""


def chapter_label(key: str) -> str:
    """A book's chapter as `--threads` takes it and the tables show it: `ch4` for the key
    `t00003-81` (its position in the book, from 1)."""
    return f"ch{parse_thread_key(key)[0] + 1}"


def thread_name(key: str, *, book: bool, labelled: bool = False) -> str:
    """A thread as a line names it: a quest's by its key (`labelled`: "thread t00003-81"), a
    book's chapter by its number in the book and then its key ("chapter 4 (t00003-81)";
    `--threads ch4` takes that number)."""
    try:
        if book:
            return f"chapter {parse_thread_key(key)[0] + 1} ({key})"
    except InputError:  # not a key (never from the store): as given
        return key
    return f"thread {key}" if labelled else key
