"""Opening a corpus validates it: each broken corpus is one clear CorpusError naming the problem."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import ConfigError, CorpusError, InputError

TABLES = {
    "thread": "id INTEGER PRIMARY KEY, title TEXT",
    "post": "thread_id INTEGER, id INTEGER PRIMARY KEY, name TEXT, trip_code TEXT, subject TEXT, "
    "time INTEGER, file_url TEXT, file_name TEXT, body TEXT",
    "tag": "post_id INTEGER, name TEXT",
    "link": "link_from INTEGER, link_to INTEGER",
}


def build(
    path: Path,
    *,
    tables: dict[str, str] | None = None,
    threads: tuple[tuple[int, str], ...] = ((100, "Quest #1"),),
    posts: tuple[tuple[int, int, int | None, str], ...] = ((100, 100, 1000, "Hello"),),
) -> Path:
    """A banished.db with the given table definitions and rows (thread_id, id, time, body)."""
    conn = sqlite3.connect(path)
    for table, columns in (TABLES if tables is None else tables).items():
        conn.execute(f"CREATE TABLE {table} ({columns})")
    table_names = set(TABLES if tables is None else tables)
    if threads and "thread" in table_names:
        conn.executemany("INSERT INTO thread (id, title) VALUES (?, ?)", threads)
    if posts and "post" in table_names:
        conn.executemany("INSERT INTO post (thread_id, id, time, body) VALUES (?, ?, ?, ?)", posts)
    conn.commit()
    conn.close()
    return path


def open_error(path: Path) -> str:
    with pytest.raises(CorpusError) as caught:
        Corpus(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_a_valid_corpus_opens(tmp_path: Path) -> None:
    with Corpus(build(tmp_path / "ok.db")) as corpus:
        assert [thread.id for thread in corpus.threads()] == [100]


def test_missing_file_is_reported_as_not_found(tmp_path: Path) -> None:
    assert "not found" in open_error(tmp_path / "absent.db")


def test_directory_is_reported_as_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "corpus.db"
    folder.mkdir()
    assert "directory" in open_error(folder)


def test_text_file_is_reported_as_not_sqlite(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("these are notes, not a database\n" * 50)
    assert "not an SQLite database" in open_error(text)


def test_empty_file_is_reported_as_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    assert "empty (0 bytes)" in open_error(empty)


@pytest.mark.parametrize("missing", ["thread", "post", "tag", "link"])
def test_missing_table_is_named(tmp_path: Path, missing: str) -> None:
    tables = {name: columns for name, columns in TABLES.items() if name != missing}
    message = open_error(build(tmp_path / "c.db", tables=tables))
    assert f"missing table '{missing}'" in message


def test_several_missing_tables_are_all_named(tmp_path: Path) -> None:
    message = open_error(build(tmp_path / "c.db", tables={"thread": TABLES["thread"]}))
    assert "'post', 'tag', 'link'" in message


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("thread", "title"),
        ("post", "time"),
        ("post", "body"),
        ("post", "thread_id"),
        ("tag", "name"),
        ("link", "link_to"),
    ],
)
def test_missing_column_names_table_and_column(tmp_path: Path, table: str, column: str) -> None:
    kept = [
        definition for definition in TABLES[table].split(", ") if definition.split()[0] != column
    ]
    tables = dict(TABLES, **{table: ", ".join(kept)})
    # No rows: the schema is checked before the rows are.
    message = open_error(build(tmp_path / "c.db", tables=tables, threads=(), posts=()))
    assert f"table '{table}' is missing column '{column}'" in message


def test_corpus_without_threads_is_empty(tmp_path: Path) -> None:
    message = open_error(build(tmp_path / "c.db", threads=(), posts=()))
    assert "empty corpus" in message
    assert "'thread'" in message


def test_corpus_without_posts_is_empty(tmp_path: Path) -> None:
    message = open_error(build(tmp_path / "c.db", posts=()))
    assert "empty corpus" in message
    assert "'post'" in message


def test_corpus_whose_posts_belong_to_no_thread_is_empty(tmp_path: Path) -> None:
    message = open_error(build(tmp_path / "c.db", posts=((999, 999, 1000, "orphan"),)))
    assert "no thread has a post" in message


def test_posts_without_time_are_refused(tmp_path: Path) -> None:
    posts = ((100, 100, 1000, "a"), (100, 101, None, "b"), (100, 102, None, "c"))
    message = open_error(build(tmp_path / "c.db", posts=posts))
    assert "2 post(s) have no time" in message
    assert "thread 100" in message


def test_corpus_errors_are_input_errors_with_exit_code_2(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        Corpus(tmp_path / "absent.db")
    assert caught.value.exit_code == 2


def test_open_is_read_only_and_leaves_the_file_unchanged(tmp_path: Path) -> None:
    path = build(tmp_path / "c.db")
    before = path.read_bytes()
    with Corpus(path) as corpus, pytest.raises(sqlite3.OperationalError, match="readonly"):
        corpus.connection.execute("CREATE TABLE scratch (a)")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]


def test_path_with_uri_special_characters_opens(tmp_path: Path) -> None:
    folder = tmp_path / "odd #dir? 100%"
    folder.mkdir()
    with Corpus(build(folder / "quest #1.db")) as corpus:
        assert corpus.thread(100).title == "Quest #1"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("https://quest.example/{thread}#{post_id}", "unknown placeholder(s) {thread}"),
        ("https://quest.example/{}#{post_id}", "unknown placeholder(s) {}"),
        ("https://quest.example/{thread_id}", "must contain {post_id}"),
        ("https://quest.example/{thread_id#{post_id}", "not a valid template"),
        ("https://quest.example/{post_id:q}", "not a valid template"),
    ],
)
def test_bad_url_template_is_a_config_error(tmp_path: Path, template: str, expected: str) -> None:
    path = build(tmp_path / "c.db")
    with pytest.raises(ConfigError) as caught:
        Corpus(path, url_template=template)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_time_that_is_text_is_one_line_naming_the_post(tmp_path: Path) -> None:
    posts = ((100, 100, 1000, "Hello"), (100, 101, "yesterday", "Later"))  # type: ignore[misc]
    message = open_error(build(tmp_path / "t.db", posts=posts))  # type: ignore[arg-type]
    assert "not a number" in message and "post 101" in message


def test_a_binary_body_is_one_line_naming_the_post(tmp_path: Path) -> None:
    path = build(tmp_path / "b.db")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO post (thread_id, id, time, body) VALUES (100, 102, 2000, ?)",
                     (b"\x00\x01binary",))  # fmt: skip
    message = open_error(path)
    assert "binary body" in message and "post 102" in message


def test_posts_of_a_missing_thread_are_named_in_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    posts = ((100, 100, 1000, "Hello"), (999, 200, 1100, "Lost"))
    with Corpus(build(tmp_path / "o.db", posts=posts)) as corpus:
        assert [thread.id for thread in corpus.threads()] == [100]
    assert "belong to no thread" in caplog.text and "999" in caplog.text


@pytest.mark.parametrize("table", ["post", "thread"])
def test_an_id_used_twice_is_one_line_naming_it(tmp_path: Path, table: str) -> None:
    """Without a primary key an id may repeat: two posts of one id were read as one (the run
    went on), two threads of one id as two threads that each waited for the other."""
    tables = {**TABLES, table: TABLES[table].replace("id INTEGER PRIMARY KEY", "id INTEGER")}
    posts = ((100, 100, 1000, "Hello"), (100, 101, 1001, "Once"))
    if table == "post":
        posts += ((100, 101, 1002, "Twice"),)
    threads = ((100, "Quest #1"),) * (2 if table == "thread" else 1)
    path = build(tmp_path / "d.db", tables=tables, threads=threads, posts=posts)
    id_ = 101 if table == "post" else 100
    assert f"{table} id {id_} is used by 2 rows" in open_error(path)


def test_an_id_declared_the_primary_key_is_not_scanned_for_repeats(tmp_path: Path) -> None:
    path = build(tmp_path / "ok.db")
    with Corpus(path) as corpus:
        statements: list[str] = []
        corpus.connection.set_trace_callback(statements.append)
        corpus._check_unique_ids("post")
        corpus._check_unique_ids("thread")
    assert not [sql for sql in statements if "HAVING" in sql]
