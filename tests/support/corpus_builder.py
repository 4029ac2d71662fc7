"""Build small banished.db corpora for tests: real SQLite files in the banished.db schema.

`write_corpus` is the one place a test corpus is written (the schema is the product's own,
`corpus/corpus_schema.py::CORPUS_SCHEMA`): rows as given (`PostRow`). `build_corpus` writes threads
of posts in story order from specs, `simple_quest` a tiny generated quest, `ember_road_quest` the
two-thread quest of the curation, export and lineage tests.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from terrarium_dagster.corpus.corpus_schema import CORPUS_SCHEMA


@dataclass(frozen=True)
class PostRow:
    """One post as stored: its id, thread, time, body, tags and author."""

    id: int
    thread: int
    time: int
    body: str = "text"
    tags: tuple[str, ...] = ()
    name: str | None = "Anonymous"
    trip: str | None = None
    subject: str | None = None


def write_corpus(
    path: Path,
    threads: Mapping[int, str | None],
    posts: Iterable[PostRow],
    links: Iterable[tuple[int, int]] = (),
    *,
    index_thread_id: bool = False,
) -> Path:
    """A corpus file with exactly these threads, posts (with their tags) and quote links."""
    connection = sqlite3.connect(path)
    try:
        connection.executescript(CORPUS_SCHEMA)
        connection.executemany("INSERT INTO thread VALUES (?, ?)", threads.items())
        for row in posts:
            connection.execute(
                "INSERT INTO post (thread_id, id, name, trip_code, subject, time, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row.thread, row.id, row.name, row.trip, row.subject, row.time, row.body),
            )
            connection.executemany(
                "INSERT INTO tag VALUES (?, ?)", [(row.id, tag) for tag in row.tags]
            )
        connection.executemany("INSERT INTO link VALUES (?, ?)", links)
        if index_thread_id:
            connection.execute("CREATE INDEX post_thread ON post (thread_id)")
        connection.commit()
    finally:
        connection.close()
    return path


@dataclass
class PostSpec:
    body: str
    qm: bool = True
    tally: bool = False
    links: Sequence[int] = field(default_factory=tuple)


@dataclass
class ThreadSpec:
    title: str
    posts: Sequence[PostSpec]


def build_corpus(path: Path, threads: Sequence[ThreadSpec], *, first_id: int = 1000) -> Path:
    """Write `threads` in story order: ids and times increase; the first post opens the thread."""
    titles: dict[int, str | None] = {}
    rows: list[PostRow] = []
    links: list[tuple[int, int]] = []
    post_id = first_id
    time = 1_600_000_000
    for thread in threads:
        thread_id = post_id
        titles[thread_id] = thread.title
        for index, post in enumerate(thread.posts):
            tags = ["op_post"] if index == 0 else []
            if post.qm:
                tags += ["qm_post", "vote_tally_post" if post.tally else "story_post"]
            rows.append(
                PostRow(
                    post_id,
                    thread_id,
                    time,
                    post.body,
                    tuple(tags),
                    name="Quest Master" if post.qm else "Anonymous",
                    trip="!!QM" if post.qm else None,
                )
            )
            links += [(post_id, target) for target in post.links]
            post_id += 7
            time += 600
        time += 86_400
    return write_corpus(path, titles, rows, links)


def simple_quest(path: Path, *, threads: int = 2, scenes_per_thread: int = 3) -> Path:
    """A tiny quest with invented names, a QM scene and a player reply alternating."""
    names = ["Vaskari", "Orlundel", "Mirethane", "Quillhaven", "Sardomir", "Tethrick"]
    specs = []
    for t in range(threads):
        posts: list[PostSpec] = []
        for s in range(scenes_per_thread):
            a = names[(t * scenes_per_thread + s) % len(names)]
            b = names[(t * scenes_per_thread + s + 1) % len(names)]
            posts.append(
                PostSpec(
                    f"The envoy met {a} at the gate of {b}.<br>Later {a} spoke of the "
                    f"&quot;ashmark&quot; and the ashmark answered."
                )
            )
            posts.append(PostSpec(f"[X] Trust {a}", qm=False))
        specs.append(ThreadSpec(f"Test Quest {t + 1}", posts))
    return build_corpus(path, specs)


EMBER_ROAD_URL = "https://quest.example/test/{thread_id}#{post_id}"
EMBER_ROAD_POSTS: list[tuple[int, int, str, tuple[str, ...]]] = [
    (100, 100, "Welcome to the Ember Road. The caravan sets out at dawn.", ("qm_post", "op_post")),
    (100, 101, "Can we check the wagons first?", ()),
    (100, 102, "The Ember Tithe is due at the border fort. Every traveller pays it.", ("qm_post",)),
    (100, 103, ">>102 What is the Ember Tithe exactly?", ()),
    (100, 104, "Keth'ra explains the Tithe of Embers: one coal per soul.", ("qm_post",)),
    (100, 105, "Open the door and look outside.", ()),
    (100, 106, "The Ashen Guard stands at the gate, spears lowered.", ("qm_post",)),
    (100, 107, "We bribe the guard.", ()),
    (100, 108, "Vote tally: bribe 4, fight 1", ("qm_post", "vote_tally_post")),
    (100, 109, "The Ashen Guard takes the coin and waves you through.", ("qm_post",)),
    (200, 200, "Ashfall begins. Keth'ra leads you into the ash fields.", ("qm_post", "op_post")),
    (200, 201, "Keep close to Keth'ra.", ()),
]


def ember_road_quest(path: Path) -> Path:
    """Two threads: "The Ember Road" (100, ten posts) and "Ashfall" (200, two posts)."""
    rows = [
        PostRow(
            post_id,
            thread_id,
            1000 + post_id,
            body,
            tags,
            name="QM" if "qm_post" in tags else "Anonymous",
        )
        for thread_id, post_id, body, tags in EMBER_ROAD_POSTS
    ]
    return write_corpus(path, {100: "The Ember Road", 200: "Ashfall"}, rows, [(103, 102)])
