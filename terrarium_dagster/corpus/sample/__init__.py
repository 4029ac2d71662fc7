"""The bundled sample corpus: *Lanternwake Quest*, an original five-thread forum quest.

The story ships as `quest.json` (the rows of each table of the banished.db schema, one a line)
and its gold glossary as `gold.yaml`. Both are generated from `_story.txt` by
`terrarium_dagster/testing/sample_builder.py`; the module here only reads them, and holds the
schema the rows go into. `sample_corpus_path()` builds the SQLite file once into a cache folder,
named after a hash of the data, so a changed story gives a new file and concurrent callers are
safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict

from terrarium_dagster.corpus.corpus_schema import CORPUS_INDEXES

__all__ = [
    "SAMPLE_TABLES",
    "GoldTerm",
    "build_sample_corpus",
    "gold_path",
    "gold_terms",
    "sample_cache_dir",
    "sample_corpus_path",
    "sample_data_path",
]

_HERE = Path(__file__).resolve().parent

# The banished.db schema the sample's rows go into (indexes after the rows), and the columns the
# data file gives for each table.
_SCHEMA = (
    "CREATE TABLE thread (id INTEGER PRIMARY KEY, title TEXT);\n"
    "CREATE TABLE post (thread_id INTEGER, id INTEGER PRIMARY KEY, name TEXT, trip_code TEXT,"
    " subject TEXT, time INTEGER, file_url TEXT, file_name TEXT, body TEXT);\n"
    "CREATE TABLE tag (post_id INTEGER, name TEXT);\n"
    "CREATE TABLE link (link_from INTEGER, link_to INTEGER);\n"
)
SAMPLE_TABLES: dict[str, tuple[str, ...]] = {
    "thread": ("id", "title"),
    "post": (
        "thread_id",
        "id",
        "name",
        "trip_code",
        "subject",
        "time",
        "file_url",
        "file_name",
        "body",
    ),
    "tag": ("post_id", "name"),
    "link": ("link_from", "link_to"),
}

TermKind = Literal["person", "place", "faction", "magic", "item", "creature", "custom", "title"]


class GoldTerm(BaseModel):
    """A term a reader of the sample quest should find, with where the story introduces it.

    `first_post_id` is the first QM story post naming the term or an alias; `thread_id` its
    thread. `changes_in_thread` (a thread id) and `change_post_id` mark where the meaning turns.
    """

    model_config = ConfigDict(frozen=True)

    term: str
    aliases: list[str] = []
    kind: TermKind
    first_post_id: int
    thread_id: int
    note: str
    changes_in_thread: int | None = None
    change_post_id: int | None = None
    change_note: str | None = None

    @property
    def names(self) -> list[str]:
        """The term followed by its aliases."""
        return [self.term, *self.aliases]


def sample_data_path() -> Path:
    """The shipped rows of the sample quest (JSON)."""
    return _HERE / "quest.json"


def gold_path() -> Path:
    """The shipped gold glossary (YAML)."""
    return _HERE / "gold.yaml"


def gold_terms() -> list[GoldTerm]:
    """The gold glossary of the sample quest, in order of first appearance."""
    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    return [GoldTerm.model_validate(item) for item in data["terms"]]


def build_sample_corpus(dest: Path) -> Path:
    """Write the shipped rows into a new SQLite file at `dest` (atomically replaced); return it."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(sample_data_path().read_text(encoding="utf-8"))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        connection = sqlite3.connect(tmp)
        try:
            _write_tables(connection, data)
        finally:
            connection.close()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest


def _write_tables(connection: sqlite3.Connection, data: dict[str, Any]) -> None:
    connection.executescript(_SCHEMA)
    with connection:
        for table, columns in SAMPLE_TABLES.items():
            if data[table]["columns"] != list(columns):
                raise ValueError(f"the sample's {table} rows are not in the schema's columns")
            marks = ", ".join("?" for _ in columns)
            connection.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                data[table]["rows"],
            )
    connection.executescript(CORPUS_INDEXES)


def sample_cache_dir() -> Path:
    """`$TERRARIUM_HOME/sample`, else `~/.cache/terrarium-dagster/sample`."""
    home = os.environ.get("TERRARIUM_HOME")
    if home:
        return Path(home).expanduser() / "sample"
    return Path.home() / ".cache" / "terrarium-dagster" / "sample"


def sample_corpus_path() -> Path:
    """The sample quest as a SQLite file in the cache folder, built on first use."""
    digest = hashlib.sha256(sample_data_path().read_bytes()).hexdigest()[:12]
    path = sample_cache_dir() / f"sample-{digest}.db"
    if not path.is_file():
        build_sample_corpus(path)
    return path
