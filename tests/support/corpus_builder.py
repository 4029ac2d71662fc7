"""Build small banished.db corpora for tests: real SQLite files in the banished.db schema."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE thread (id INTEGER PRIMARY KEY, title TEXT);
CREATE TABLE post (thread_id INTEGER, id INTEGER PRIMARY KEY, name TEXT, trip_code TEXT,
                   subject TEXT, time INTEGER, file_url TEXT, file_name TEXT, body TEXT);
CREATE TABLE tag (post_id INTEGER, name TEXT);
CREATE TABLE link (link_from INTEGER, link_to INTEGER);
"""


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
    connection = sqlite3.connect(path)
    try:
        connection.executescript(SCHEMA)
        post_id = first_id
        time = 1_600_000_000
        for thread in threads:
            thread_id = post_id
            connection.execute("INSERT INTO thread VALUES (?, ?)", (thread_id, thread.title))
            for index, post in enumerate(thread.posts):
                name = "Quest Master" if post.qm else "Anonymous"
                connection.execute(
                    "INSERT INTO post VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?)",
                    (thread_id, post_id, name, "!!QM" if post.qm else None, None, time, post.body),
                )
                tags = []
                if index == 0:
                    tags.append("op_post")
                if post.qm:
                    tags.append("qm_post")
                    tags.append("vote_tally_post" if post.tally else "story_post")
                connection.executemany(
                    "INSERT INTO tag VALUES (?, ?)", [(post_id, tag) for tag in tags]
                )
                connection.executemany(
                    "INSERT INTO link VALUES (?, ?)", [(post_id, target) for target in post.links]
                )
                post_id += 7
                time += 600
            time += 86_400
        connection.commit()
    finally:
        connection.close()
    return path


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
