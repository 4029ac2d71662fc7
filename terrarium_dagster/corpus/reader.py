"""The corpus reader: a read-only banished.db, validated on open, streamed in story order.

Everything is read through one read-only connection (`file:...?mode=ro`); the reader never writes,
never creates an index, and holds at most one thread's posts in memory (`posts` and `iter_scenes`
stream from SQLite cursors).

Performance without indexes. The real banished.db has no index but the rowid keys, so:

- a post's tags come from a `LEFT JOIN tag ... GROUP BY post.id` in the same statement as the
  posts (SQLite builds a transient automatic index on `tag.post_id` for the statement; a correlated
  subquery would scan the whole tag table once per post);
- `iter_scenes` reads the whole corpus in ONE statement ordered by (thread story order, time, id)
  when `post.thread_id` has no index: one table scan and one external sort, instead of a table
  scan per thread. With an index on `post.thread_id` it reads thread by thread, which is as fast and
  needs no sort of the whole table. `benchmarks/bench_scenes.py` measures both.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import string
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from terrarium_dagster.corpus.book_files import format_of
from terrarium_dagster.corpus.clean import clean_body
from terrarium_dagster.corpus.quote_links import PostLinks
from terrarium_dagster.corpus.scenes import (
    Role,
    SceneBuilder,
    batch_scenes,
    finished,
    story_role,
)
from terrarium_dagster.corpus.units import (
    QM_TAG,
    VOTE_TALLY_TAG,
    Post,
    Scene,
    Thread,
    parse_thread_key,
    thread_title,
)
from terrarium_dagster.errors import ConfigError, CorpusError, InputError

__all__ = ["REQUIRED_COLUMNS", "Corpus", "parse_ref"]

# The tables and columns the reader uses (the schema may have more: `file_url`, `file_name`...).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "thread": ("id", "title"),
    "post": ("thread_id", "id", "name", "trip_code", "subject", "time", "body"),
    "tag": ("post_id", "name"),
    "link": ("link_from", "link_to"),
}
URL_FIELDS = frozenset({"thread_id", "post_id"})

_TAG_SEPARATOR = "\x1f"
_POST_COLUMNS = (
    "p.id, p.thread_id, p.name, p.trip_code, p.subject, p.time, p.body, "
    "group_concat(t.name, char(31))"
)
_POST_FROM = "FROM post AS p LEFT JOIN tag AS t ON t.post_id = p.id"
POSTS_PER_QUERY = 500  # ids in one `posts_by_id` query (SQLite's limit on variables: 32,766)

ScanStrategy = Literal["per_thread", "single_query"]


def parse_ref(ref: str) -> tuple[int, int]:
    """`"<thread_id>#<post_id>"` -> `(thread_id, post_id)`; InputError if malformed."""
    if isinstance(ref, str):
        thread_part, hash_sign, post_part = ref.strip().partition("#")
        if (
            hash_sign
            and thread_part.isascii()
            and thread_part.isdigit()
            and post_part.isascii()
            and post_part.isdigit()
        ):
            return int(thread_part), int(post_part)
    raise InputError(
        f"malformed post reference {ref!r}: expected '<thread_id>#<post_id>', e.g. '1000#1042'"
    )


def _check_url_template(template: str) -> None:
    try:
        fields = [
            field for _, field, _, _ in string.Formatter().parse(template) if field is not None
        ]
    except ValueError as exc:
        raise ConfigError(f"url_template {template!r} is not a valid template: {exc}") from None
    unknown = sorted({field for field in fields if field not in URL_FIELDS})
    if unknown:
        shown = ", ".join("{" + field + "}" for field in unknown)
        raise ConfigError(
            f"url_template {template!r} has unknown placeholder(s) {shown}; "
            "use {thread_id} and {post_id}"
        )
    if "post_id" not in fields:
        raise ConfigError(f"url_template {template!r} must contain {{post_id}}")
    try:
        template.format(thread_id=1, post_id=2)
    except (ValueError, IndexError, KeyError) as exc:
        raise ConfigError(f"url_template {template!r} is not a valid template: {exc}") from None


def _close(cursor: sqlite3.Cursor) -> None:
    """Close a cursor a generator left early (its statement ends its read transaction)."""
    with contextlib.suppress(sqlite3.ProgrammingError):  # the corpus was closed first
        cursor.close()


def _tags(concatenated: str | None) -> frozenset[str]:
    if not concatenated:
        return frozenset()
    return frozenset(concatenated.split(_TAG_SEPARATOR))


def _post(row: tuple[Any, ...], tags: frozenset[str] | None = None) -> Post:
    return Post(
        id=row[0],
        thread_id=row[1],
        name=row[2],
        trip_code=row[3],
        subject=row[4],
        time=row[5],
        text=clean_body(row[6]),
        tags=_tags(row[7]) if tags is None else tags,
    )


log = logging.getLogger(__name__)


class QuoteLinks:
    """Which posts quote which, from the corpus's `link` rows: `Corpus.quotes`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def quoted_by(self, post_id: int) -> list[int]:
        """The ids of the posts that quote this one (`link` rows to it), ascending."""
        return self._linked("link_from", "link_to", post_id)

    def quotes_of(self, post_id: int) -> list[int]:
        """The ids of the posts this post quotes (`link` rows from it), ascending."""
        return self._linked("link_to", "link_from", post_id)

    def _linked(self, other: str, end: str, post_id: int) -> list[int]:
        """The `other` ends of the `link` rows whose `end` is `post_id`, ascending."""
        query = f"SELECT DISTINCT {other} FROM link WHERE {end} = ? ORDER BY {other}"
        return [row[0] for row in self._conn.execute(query, (post_id,))]


# What SQLite makes beside a database in WAL mode, even for a reader (store/base.SIDE_FILES
# lists them with the store's own; the corpus layer does not import the store's).
_WAL_FILES = ("-wal", "-shm")


class Corpus:
    """A read-only banished.db corpus. Validates on open; raises CorpusError with one clear line.

    Threads are read once, on open (story order: time of the first post, then id; threads without
    posts are left out). Reopen the corpus to see threads added since. Not for concurrent use from
    several threads at once; open one Corpus per worker.
    """

    def __init__(
        self, path: str | Path, url_template: str | None = None, *, site_url: str | None = None
    ) -> None:
        self.path = Path(path)
        if url_template is not None:
            _check_url_template(url_template)
        self.url_template = url_template
        self.links = PostLinks(url_template, site_url)
        wal = [Path(f"{self.path}{suffix}") for suffix in _WAL_FILES]
        self._wal_made = not any(file.exists() for file in wal)  # (a file in WAL mode makes them)
        self._conn = self._connect()
        self.quotes = QuoteLinks(self._conn)  # which posts quote which (`link` rows)
        try:
            self._validate_schema()
            self._threads = self._load_threads()
            self._indexed_thread_id = self._has_index("post", "thread_id")
        except BaseException:
            self._conn.close()
            self._let_go_of_wal()
            raise
        self._by_id = {thread.id: thread for thread in self._threads}
        self._closed = False

    # -- opening and validation -------------------------------------------------------------

    def _fail(self, problem: str) -> CorpusError:
        return CorpusError(f"{problem}: {self.path}")

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            raise self._fail("corpus file not found")
        if self.path.is_dir():
            raise self._fail("corpus path is a directory, not an SQLite file")
        try:
            size = self.path.stat().st_size
        except OSError as exc:
            raise self._fail(f"cannot read corpus file ({exc.strerror})") from None
        if size == 0:
            raise self._fail("corpus file is empty (0 bytes), not an SQLite database")
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            message = str(exc)
            if "not a database" in message or "malformed" in message:
                if format_of(self.path.suffix):  # a book given as a corpus, not imported yet
                    raise CorpusError(
                        f"{self.path} is not a corpus (an SQLite file): make one of a book with "
                        f"`terrarium import {self.path} --out CORPUS.db`, and give that as --corpus"
                    ) from None
                raise self._fail(f"not an SQLite database ({message})") from None
            raise self._fail(f"cannot open corpus ({message})") from None
        return conn

    def _validate_schema(self) -> None:
        rows = self._conn.execute(
            "SELECT lower(name) FROM sqlite_master WHERE type IN ('table', 'view')"
        ).fetchall()
        tables = {row[0] for row in rows}
        missing_tables = [table for table in REQUIRED_COLUMNS if table not in tables]
        if missing_tables and {"meta", "entry", "revision"} <= tables:
            raise CorpusError(
                f"{self.path} is an annotator store, not a corpus: give it as --db, and --corpus "
                "the corpus it was built from (or no --corpus: the store records its own)"
            )
        if missing_tables:
            names = ", ".join(repr(table) for table in missing_tables)
            plural = "s" if len(missing_tables) > 1 else ""
            raise self._fail(f"corpus is missing table{plural} {names} (banished.db schema)")
        for table, required in REQUIRED_COLUMNS.items():
            present = {row[1].lower() for row in self._conn.execute(f"PRAGMA table_info({table})")}
            missing = [column for column in required if column not in present]
            if missing:
                names = ", ".join(repr(column) for column in missing)
                plural = "s" if len(missing) > 1 else ""
                raise self._fail(f"table {table!r} is missing column{plural} {names}")

    def _check_values(self) -> None:
        """Column types the schema cannot enforce: a post's time is a number, its body text; a
        post whose thread is missing is named (it cannot be read, so it is left out)."""
        try:
            bad_time = self._conn.execute(
                "SELECT count(*), min(id) FROM post "
                "WHERE time IS NOT NULL AND typeof(time) NOT IN ('integer', 'real')"
            ).fetchone()
            bad_body = self._conn.execute(
                "SELECT count(*), min(id) FROM post WHERE typeof(body) = 'blob'"
            ).fetchone()
            orphans = self._conn.execute(
                "SELECT count(*), group_concat(DISTINCT thread_id) FROM post "
                "WHERE thread_id NOT IN (SELECT id FROM thread)"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._fail(f"cannot read corpus ({exc})") from None
        if bad_time[0]:
            raise self._fail(
                f"{bad_time[0]} post(s) have a time that is not a number (first: post "
                f"{bad_time[1]}); post.time must be a Unix time"
            )
        if bad_body[0]:
            raise self._fail(
                f"{bad_body[0]} post(s) have a binary body (first: post {bad_body[1]}); "
                "post.body must be text"
            )
        for table in ("thread", "post"):
            self._check_unique_ids(table)
        if orphans[0]:
            threads = ", ".join(str(orphans[1]).split(",")[:5])
            log.warning(
                "%d post(s) belong to no thread of the corpus (thread id(s) %s): left out",
                orphans[0],
                threads,
            )

    def _check_unique_ids(self, table: str) -> None:
        """A table whose `id` is not its primary key may hold an id twice: two posts of one id
        were read as one (`GROUP BY p.id`) and two threads of one id as two threads that
        refused each other's order. Refused, naming the id; a primary key is not scanned."""
        declared = [row for row in self._conn.execute(f"PRAGMA table_info({table})") if row[5]]
        if len(declared) == 1 and declared[0][1].lower() == "id":
            return
        try:
            duplicate = self._conn.execute(
                f"SELECT id, count(*) FROM {table} WHERE id IS NOT NULL "
                "GROUP BY id HAVING count(*) > 1 ORDER BY id LIMIT 1"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._fail(f"cannot read corpus ({exc})") from None
        if duplicate is not None:
            raise self._fail(
                f"{table} id {duplicate[0]} is used by {duplicate[1]} rows; "
                f"{table}.id must be unique"
            )

    def _load_threads(self) -> list[Thread]:
        try:
            if self._conn.execute("SELECT 1 FROM thread LIMIT 1").fetchone() is None:
                raise self._fail("empty corpus: table 'thread' has no rows")
            if self._conn.execute("SELECT 1 FROM post LIMIT 1").fetchone() is None:
                raise self._fail("empty corpus: table 'post' has no rows")
            rows = self._conn.execute(
                "SELECT th.id, th.title, a.first_time, a.posts, a.untimed "
                "FROM (SELECT thread_id, min(time) AS first_time, count(*) AS posts, "
                "             sum(time IS NULL) AS untimed "
                "      FROM post GROUP BY thread_id) AS a "
                "JOIN thread AS th ON th.id = a.thread_id "
                "ORDER BY a.first_time, th.id"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._fail(f"cannot read corpus ({exc})") from None
        if not rows:
            raise self._fail("empty corpus: no thread has a post")
        self._check_values()
        untimed = [row for row in rows if row[4]]
        if untimed:
            total = sum(row[4] for row in untimed)
            raise self._fail(
                f"{total} post(s) have no time (first in thread {untimed[0][0]}); "
                "posts are ordered by time"
            )
        return [
            Thread(
                id=row[0],
                title=thread_title(row[1]),
                position=position,
                first_time=row[2],
                post_count=row[3],
            )
            for position, row in enumerate(rows)
        ]

    def _has_index(self, table: str, column: str) -> bool:
        """True if some index of `table` starts with `column` (usable for `WHERE column = ?`)."""
        for index in self._conn.execute(f"PRAGMA index_list({table})").fetchall():
            columns = self._conn.execute(f"PRAGMA index_info({index[1]!r})").fetchall()
            first = min(columns, key=lambda info: info[0]) if columns else None
            if first is not None and first[2] is not None and first[2].lower() == column:
                return True
        return False

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def connection(self) -> sqlite3.Connection:
        """The read-only connection (for diagnostics and tests: tracing, query plans)."""
        return self._conn

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._conn.close()
            self._let_go_of_wal()

    def _let_go_of_wal(self) -> None:
        """Remove the WAL files this reader's opening made beside a file in WAL mode (a store
        given as --corpus, refused: nothing is left of the refusal), which a ``mode=ro``
        connection cannot remove: a plain connection closed as the file's last one does (where
        another connection still uses them, a writer's, they stay)."""
        wal = [Path(f"{self.path}{suffix}") for suffix in _WAL_FILES]
        if not self._wal_made or not any(file.exists() for file in wal):
            return
        with contextlib.suppress(sqlite3.Error, OSError):
            uri = self.path.resolve().as_uri() + "?mode=rw"
            conn = sqlite3.connect(uri, uri=True, timeout=0)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Corpus({str(self.path)!r}, threads={len(self._threads)})"

    # -- threads ----------------------------------------------------------------------------

    def threads(self) -> list[Thread]:
        """Every thread with at least one post, in story order (first post time, then id)."""
        return list(self._threads)

    def thread(self, thread_id: int) -> Thread:
        """The thread with this id; CorpusError if the corpus has no such thread (with posts)."""
        try:
            return self._by_id[thread_id]
        except KeyError:
            raise CorpusError(f"no thread {thread_id} in the corpus: {self.path}") from None

    def thread_by_key(self, key: str) -> Thread:
        """The thread of a partition key `t<position>-<id>`; the position must still match."""
        position, thread_id = parse_thread_key(key)
        thread = self.thread(thread_id)
        if thread.position != position:
            raise CorpusError(
                f"thread key {key!r} is stale: thread {thread_id} is now at position "
                f"{thread.position} ({thread.key}): {self.path}"
            )
        return thread

    # -- posts ------------------------------------------------------------------------------

    def posts(self, thread_id: int) -> Iterator[Post]:
        """The thread's posts in (time, id) order, tags included, streamed from one statement."""
        self.thread(thread_id)
        return self._stream(
            f"SELECT {_POST_COLUMNS} {_POST_FROM} WHERE p.thread_id = ? "
            "GROUP BY p.id ORDER BY p.time, p.id",
            (thread_id,),
        )

    def _stream(self, sql: str, parameters: tuple[Any, ...]) -> Iterator[Post]:
        cursor = self._conn.execute(sql, parameters)
        try:
            for row in cursor:
                yield _post(row)
        finally:
            _close(cursor)

    def post(self, post_id: int) -> Post | None:
        """The post with this id, or None."""
        row = self._conn.execute(
            f"SELECT {_POST_COLUMNS} {_POST_FROM} WHERE p.id = ? GROUP BY p.id", (post_id,)
        ).fetchone()
        return None if row is None else _post(row)

    def posts_by_id(self, post_ids: Iterable[int]) -> dict[int, Post]:
        """The posts with these ids (an id no post has is left out), read a few hundred to a
        query: a book's thousands of cited paragraphs, checked at a run's start, were one query
        each."""
        wanted = sorted(set(post_ids))
        found: dict[int, Post] = {}
        for start in range(0, len(wanted), POSTS_PER_QUERY):
            chunk = wanted[start : start + POSTS_PER_QUERY]
            marks = ", ".join("?" for _ in chunk)
            cursor = self._conn.execute(
                f"SELECT {_POST_COLUMNS} {_POST_FROM} WHERE p.id IN ({marks}) GROUP BY p.id",
                chunk,
            )
            for row in cursor.fetchall():
                post = _post(row)
                found[post.id] = post
        return found

    def story_posts_after(self, thread_id: int, post_id: int) -> int:
        """How many story posts (QM posts, not tallies) of the thread come after `post_id` in
        (time, id) order: a living corpus's posts added since that one was annotated (image-only
        ones included); 0 when `post_id` is gone."""
        row = self._conn.execute(
            "SELECT count(*) FROM post p JOIN post q ON q.id = ? "
            "WHERE p.thread_id = ? AND (p.time, p.id) > (q.time, q.id) "
            "AND EXISTS (SELECT 1 FROM tag t WHERE t.post_id = p.id AND t.name = ?) "
            "AND NOT EXISTS (SELECT 1 FROM tag t WHERE t.post_id = p.id AND t.name = ?)",
            (post_id, thread_id, QM_TAG, VOTE_TALLY_TAG),
        ).fetchone()
        return int(row[0])

    def has_story(self) -> bool:
        """Whether any post of a thread is story text (tagged `qm_post`, not a vote tally): a
        corpus without one gives a run nothing to annotate."""
        row = self._conn.execute(
            "SELECT 1 FROM tag t JOIN post p ON p.id = t.post_id "
            "JOIN thread th ON th.id = p.thread_id WHERE t.name = ? "
            "AND NOT EXISTS (SELECT 1 FROM tag v WHERE v.post_id = p.id AND v.name = ?) LIMIT 1",
            (QM_TAG, VOTE_TALLY_TAG),
        ).fetchone()
        return row is not None

    def require_story(self) -> None:
        """Refuse (one line) a corpus with no story post: its run would end at once with an
        empty glossary and exit 0, as if the quest held no names."""
        if not self.has_story():
            raise self._fail(
                f"no post is tagged {QM_TAG!r} (a vote tally aside), so there is no story text "
                f"to annotate: scenes are runs of the quest master's posts tagged {QM_TAG!r} in "
                "table 'tag'"
            )

    def has_post(self, post_id: int) -> bool:
        return (
            self._conn.execute("SELECT 1 FROM post WHERE id = ?", (post_id,)).fetchone() is not None
        )

    def post_range(self, thread_id: int, start_post_id: int, count: int) -> list[Post]:
        """Up to `count` posts of the thread from `start_post_id` on, in (time, id) order.

        CorpusError if the thread is unknown; InputError if the start post is not in that
        thread or `count` is negative.
        """
        self.thread(thread_id)
        if count < 0:
            raise InputError(f"count must be zero or more, got {count}")
        start = self._conn.execute(
            "SELECT thread_id, time FROM post WHERE id = ?", (start_post_id,)
        ).fetchone()
        if start is None:
            raise InputError(f"no post {start_post_id} in the corpus")
        if start[0] != thread_id:
            raise InputError(f"post {start_post_id} is in thread {start[0]}, not {thread_id}")
        if count == 0:
            return []
        return list(
            self._stream(
                f"SELECT {_POST_COLUMNS} {_POST_FROM} "
                "WHERE p.thread_id = ? AND (p.time > ? OR (p.time = ? AND p.id >= ?)) "
                "GROUP BY p.id ORDER BY p.time, p.id LIMIT ?",
                (thread_id, start[1], start[1], start_post_id, count),
            )
        )

    def neighbours(self, post: Post, count: int = 2) -> tuple[list[Post], list[Post]]:
        """Up to `count` posts of the post's thread just before it and just after it, in
        (time, id) order."""
        if count <= 0:
            return [], []
        before, after = (
            list(
                self._stream(
                    f"SELECT {_POST_COLUMNS} {_POST_FROM} "
                    f"WHERE p.thread_id = ? AND (p.time {op} ? OR (p.time = ? AND p.id {op} ?)) "
                    f"GROUP BY p.id ORDER BY p.time{way}, p.id{way} LIMIT ?",
                    (post.thread_id, post.time, post.time, post.id, count),
                )
            )
            for op, way in (("<", " DESC"), (">", ""))
        )
        return before[::-1], after

    def post_url(self, ref_or_post: str | Post, quote: str | None = None) -> str | None:
        """The post's link (`corpus.quote_links.PostLinks`): the url_template's when one is set,
        else the post's page on the served site (the quote highlighted); None with neither."""
        if isinstance(ref_or_post, Post):
            thread_id, post_id = ref_or_post.thread_id, ref_or_post.id
        else:
            thread_id, post_id = parse_ref(ref_or_post)
        return self.links.url(thread_id, post_id, quote)

    # -- scenes -----------------------------------------------------------------------------

    def scenes(self, thread_id: int) -> list[Scene]:
        """The thread's scenes (see `corpus.scenes` for the rules)."""
        return batch_scenes(self.posts(thread_id))

    def iter_scenes(self, strategy: ScanStrategy | None = None) -> Iterator[Scene]:
        """Every scene of the corpus, thread by thread in story order, streamed.

        Bodies are cleaned only for posts that can be story text. `strategy` forces the scan:
        `"per_thread"` (one statement per thread) or `"single_query"` (one statement for the whole
        corpus); by default the reader picks per_thread when `post.thread_id` is indexed.
        """
        if strategy is None:
            strategy = "per_thread" if self._indexed_thread_id else "single_query"
        if strategy == "per_thread":
            rows = self._rows_per_thread()
        elif strategy == "single_query":
            rows = self._rows_single_query()
        else:
            raise InputError(f"unknown scan strategy {strategy!r}: per_thread or single_query")
        return self._scenes_from_rows(rows)

    def _rows_per_thread(self) -> Iterator[tuple[Any, ...]]:
        sql = (
            f"SELECT {_POST_COLUMNS} {_POST_FROM} WHERE p.thread_id = ? "
            "GROUP BY p.id ORDER BY p.time, p.id"
        )
        for thread in self._threads:
            cursor = self._conn.execute(sql, (thread.id,))
            try:
                yield from cursor
            finally:
                _close(cursor)

    def _rows_single_query(self) -> Iterator[tuple[Any, ...]]:
        # Story order is (first post time, thread id); threads without a `thread` row are left
        # out, as in threads().
        cursor = self._conn.execute(
            f"SELECT {_POST_COLUMNS} {_POST_FROM} "
            "JOIN (SELECT thread_id, min(time) AS first_time FROM post GROUP BY thread_id) AS s "
            "  ON s.thread_id = p.thread_id "
            "JOIN thread AS th ON th.id = p.thread_id "
            "GROUP BY p.id ORDER BY s.first_time, p.thread_id, p.time, p.id"
        )
        try:
            yield from cursor
        finally:
            _close(cursor)

    def _scenes_from_rows(self, rows: Iterator[tuple[Any, ...]]) -> Iterator[Scene]:
        builder: SceneBuilder | None = None
        for row in rows:
            thread_id = row[1]
            if builder is None or builder.thread_id != thread_id:
                yield from finished(builder)
                builder = SceneBuilder(thread_id)
            tags = _tags(row[7])
            if story_role(tags) is Role.STORY:
                scene = builder.add(_post(row, tags))
            else:
                scene = builder.interrupt()
            if scene is not None:
                yield scene
        yield from finished(builder)
