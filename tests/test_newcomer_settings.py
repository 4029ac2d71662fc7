"""What a newcomer trying every command twice trips on before any store: a setting misspelt or
of a bad value (in the environment, the configuration file, an option), a usage error, the help,
a server that is not there.

`terrarium` (its `main` in-process: tests/support/newcomer.py); the bundled sample's are in
tests/test_newcomer.py.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import run_args
from tests.support.newcomer import one_line_refusal, run_terrarium


def test_an_editions_line_for_one_entry_says_one_entry_and_one_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`terrarium edition` on Frankenstein said 'chapter 1 (t00000-1): 1 entries rewritten
    (0 kept), 1 requests, 914 tokens'."""
    from terrarium_dagster.cli.edition_command import _edition_progress

    written: list[str] = []
    for rewritten, requests in ((1, 1), (2, 3)):
        data = {"thread_key": "t00000-1", "rewritten": rewritten, "kept": 0}
        data |= {"requests": requests, "tokens": 914}
        _edition_progress("edition", data, written, book=True)
    assert capsys.readouterr().out.splitlines() == [
        "chapter 1 (t00000-1): 1 entry rewritten (0 kept), 1 request, 914 tokens",
        "chapter 1 (t00000-1): 2 entries rewritten (0 kept), 3 requests, 914 tokens",
    ]


def test_help_offers_only_what_a_command_reads_and_says_each_thing_once() -> None:
    export = " ".join(run_terrarium("export", "--help").stdout.split())
    assert export.count("Write the glossary") == 1
    lineage = " ".join(run_terrarium("lineage", "--help").stdout.split())
    assert "term entry id (E12), term or alias" in lineage
    why = run_terrarium("why", "--help").stdout
    for never_read in ("--concurrency", "--max-rounds", "--curator-thinking", "--story"):
        assert never_read not in why, never_read
    edition = run_terrarium("edition", "--help").stdout
    assert "--concurrency" in edition and "--max-rounds" not in edition
    assert "--story" in run_terrarium("dev", "--help").stdout
    assert "--story" not in run_terrarium("run", "--help").stdout
    undo = run_terrarium("undo", "--help").stdout
    assert "--corpus" in undo and "--url-template" not in undo  # it shows no post links


def test_a_misspelt_setting_in_the_configuration_file_names_the_one_meant(
    tmp_path: Path,
) -> None:
    (tmp_path / "terrarium.yaml").write_text("concurency: 3\n", encoding="utf-8")
    for _ in range(2):
        one_line_refusal(
            run_terrarium(*run_args("store.db"), cwd=tmp_path),
            f"concurency (in {tmp_path / 'terrarium.yaml'}): no such setting (did you mean "
            "concurrency?)",
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]


@pytest.mark.parametrize(
    ("args", "help_of"),
    [
        ((), "terrarium"),
        (("frobnicate",), "terrarium"),
        (("run", "--offline", "--bogus"), "terrarium run"),
        (("lineage",), "terrarium lineage"),
        (("export", "--format", "pdf", "--out", "x"), "terrarium export"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_help_to_read(
    args: tuple[str, ...], help_of: str, tmp_path: Path
) -> None:
    line = one_line_refusal(run_terrarium(*args, cwd=tmp_path), f"(`{help_of} --help` shows")
    assert "usage:" not in line
    assert list(tmp_path.iterdir()) == []


def test_dev_says_when_its_dagster_instance_would_not_queue_a_storys_runs(tmp_path: Path) -> None:
    """`terrarium dev` with a DAGSTER_HOME whose dagster.yaml sets no pool limit (or none at
    all, or outside a checkout with no DAGSTER_HOME: a temporary instance) says in one line that
    a second run of one story would fail on the writer lease, and what to add; the checkout's
    own dagster.yaml and the PostgreSQL recipe's say nothing."""
    from terrarium_dagster.cli.dev_command import instance_pool_problem

    root = Path(__file__).resolve().parents[1]
    assert instance_pool_problem(str(root)) is None
    assert instance_pool_problem(str(root / "deploy" / "local")) is None
    assert "temporary folder" in str(instance_pool_problem(None))
    homes = {
        "none": None,
        "telemetry only": "telemetry:\n  enabled: false\n",
        "run granularity": "concurrency:\n  pools:\n    default_limit: 1\n    granularity: run\n",
        "no limit": "concurrency:\n  pools:\n    granularity: op\n",
        "not yaml": "concurrency: [\n",
    }
    for name, text in homes.items():
        home = tmp_path / name.replace(" ", "-")
        home.mkdir()
        if text is not None:
            (home / "dagster.yaml").write_text(text, encoding="utf-8")
        said = instance_pool_problem(str(home))
        assert said is not None and "\n" not in said, name
        assert "writer lease" in said and "default_limit: 1, granularity: op" in said, name


def test_a_configuration_file_that_is_not_yaml_is_named_by_line_and_column(tmp_path: Path) -> None:
    """PyYAML's excerpt ('in "<unicode string>", line 1, column 14: concurrency: [1 ^') pasted
    into the line read as noise: the line and column and the problem are enough."""
    (tmp_path / "terrarium.yaml").write_text("concurrency: [1\n", encoding="utf-8")
    for args in (run_args("store.db"), ["status", "--db", "store.db"]) * 2:
        line = one_line_refusal(
            run_terrarium(*args, cwd=tmp_path),
            f"cannot read configuration file {tmp_path / 'terrarium.yaml'}: line 2, column 1: "
            "expected ',' or ']', but got '<stream end>' (not valid YAML)",
        )
        assert "<unicode string>" not in line and "^" not in line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]


@pytest.mark.parametrize(
    "command",
    [
        ("status",),
        ("lineage", "E1"),
        ("recover", "--out", "new.db"),
        ("serve", "--port", "0"),
        ("why", "E1", "--offline"),
        ("undo", "--decision", "1"),
        ("run", "--offline"),
    ],
)
def test_a_folder_or_notes_as_the_store_say_what_they_are_and_what_to_do(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    """A folder as --db was 'no annotator store at DIR' (and `serve` served it as a store not
    written yet); notes as a reader's --db were offered 'a new file name for a new store',
    which only a run can use (`why` and `undo`, which need a store, offered it too)."""
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: lamp oil\n", encoding="utf-8")
    for _ in range(2):
        one_line_refusal(
            run_terrarium(*command, "--db", str(tmp_path), cwd=tmp_path, timeout=30),
            f"--db {tmp_path} is a folder: give the annotator store's file",
        )
        line = one_line_refusal(
            run_terrarium(*command, "--db", str(notes), cwd=tmp_path, timeout=30),
            f"{notes} is not an annotator store (not an SQLite database)",
        )
        assert ("a new file name for a new store" in line) == (command[0] == "run"), line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_an_unreachable_server_with_no_retries_says_one_attempt(tmp_path: Path) -> None:
    done = run_terrarium(
        *run_args(tmp_path / "s.db", agent_url="http://127.0.0.1:9/v1", max_retries=0)
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "terrarium: failed: GET /v1/models failed after 1 attempt; last error: cannot connect"
    ), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_bad_setting_value_is_said_with_the_value_given_and_without_pydantics_prefix(
    tmp_path: Path,
) -> None:
    """'site_url: Value error, must start with ...'; 'concurrency: Input should be a valid
    integer' without the value that was not one (a misspelt value in terrarium.yaml)."""
    (tmp_path / "terrarium.yaml").write_text("concurrency: lots\n", encoding="utf-8")
    for _ in range(2):
        line = one_line_refusal(
            run_terrarium("lineage", "--db", "s.db", "--site-url", "x", "E1", cwd=tmp_path),
            "site_url: must start with http:// or https:// (given 'x')",
        )
        assert "Value error" not in line
        one_line_refusal(
            run_terrarium(*run_args("s.db"), cwd=tmp_path),
            f"concurrency (in {tmp_path / 'terrarium.yaml'}): Input should be a valid integer, "
            "unable to parse string as an integer (given 'lots')",
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]


@pytest.mark.parametrize(
    ("variable", "given", "flag"),
    [("TERRARIUM_OFFLINE", "maybe", ["--offline"]), ("TERRARIUM_CONCURRENCY", "0", [])],
)
def test_a_bad_value_in_the_environment_is_refused_by_name_even_where_an_option_overrides_it(
    tmp_path: Path, variable: str, given: str, flag: list[str]
) -> None:
    """`TERRARIUM_OFFLINE=maybe` with `run --offline` ran as if it were not set: every command
    that reads the setting names the variable and its value, in one line, and writes nothing;
    `status`, which never reads it, is not refused over it."""
    run = [*run_args("s.db"), *flag, "--max-scenes", "1"]
    if variable == "TERRARIUM_CONCURRENCY":
        run += ["--concurrency", "2"]
    for args in (run, run_args("t.db", concurrency=1)):
        done = run_terrarium(*args, cwd=tmp_path, env={variable: given})
        setting = variable.removeprefix("TERRARIUM_").lower()
        one_line_refusal(done, f"invalid configuration: {setting} ({variable}): ", repr(given))
    status = run_terrarium("status", "--db", "s.db", cwd=tmp_path, env={variable: given})
    one_line_refusal(status, "no annotator store at s.db")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("setting", "given", "flag"),
    [("offline", "maybe", ["--offline"]), ("concurrency", "lots", ["--concurrency", "3"])],
)
def test_a_bad_value_in_the_configuration_file_is_refused_even_where_an_option_overrides_it(
    tmp_path: Path, setting: str, given: str, flag: list[str]
) -> None:
    """`offline: maybe` in terrarium.yaml failed `status` but `run --offline` ran over it
    (and `--concurrency 3` over `concurrency: lots`): every command that reads the setting
    says the bad value; `status` and `export`, which never read it, go on."""
    (tmp_path / "terrarium.yaml").write_text(f"{setting}: {given}\n", encoding="utf-8")
    run = [*run_args("s.db", offline=False), *flag, "--max-scenes", "1"]
    if "--offline" not in flag:
        run.append("--offline")
    for args in (run, ["why", "E1", "--db", "s.db"] if setting == "offline" else run):
        one_line_refusal(
            run_terrarium(*args, cwd=tmp_path),
            f"invalid configuration: {setting} (in {tmp_path / 'terrarium.yaml'}): ",
            repr(given),
        )
    for args in (
        ["status", "--db", "s.db"],
        ["export", "--db", "s.db", "--format", "json", "--out", "g.json"],
    ):
        one_line_refusal(run_terrarium(*args, cwd=tmp_path), "no annotator store at s.db")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]
    # a value checked across settings is judged as run: the option given wins
    (tmp_path / "terrarium.yaml").write_text(
        "offline: true\ncontext_budget: 4096\nmax_tokens: 3000\n"
    )
    done = run_terrarium(*run_args("s.db", max_scenes=1, context_budget=8192), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_resumed_runs_progress_line_counts_this_runs_work_and_says_so(tmp_path: Path) -> None:
    """A resumed run's line put this run's entries beside token figures that read as the
    store's: every figure is this run's, labelled so, and the tokens name which is which."""
    db = tmp_path / "s.db"
    # blocks of 16: a scene limit ends each run at a block's end, here a thread's end
    limited = {"max_scenes": 1, "concurrency": 16}
    assert run_terrarium(*run_args(db, **limited)).returncode == 0

    def entries() -> int:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            (count,) = conn.execute("SELECT COUNT(*) FROM entry").fetchone()
        conn.close()
        return count

    before = entries()
    resumed = run_terrarium(*run_args(db, **limited))
    assert resumed.returncode == 0, resumed.stderr
    (line,) = resumed.stderr.splitlines()
    shown = re.search(
        r" done \(1/(\d+)\): \d+ scenes in \S+ · this run: scenes \d+/(\d+) · entries (\d+) new, "
        r"\d+ updated · tokens (\d+) prompt \+ (\d+) completion \(\d+% cached\) · ",
        line,
    )
    assert shown, line
    left = re.search(r"(\d+) threads \((\d+) scenes\) left", resumed.stdout)
    finished = re.search(r": \d+ calls, (\d+) prompt tokens .*, (\d+) completion", resumed.stdout)
    assert left and finished, resumed.stdout
    threads, scenes, created, prompt, completion = map(int, shown.groups())
    assert created == entries() - before > 0  # the entries this run made, not the store's
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (store_prompt,) = conn.execute("SELECT SUM(prompt_tokens) FROM agent_call").fetchone()
    conn.close()
    assert 0 < prompt <= int(finished.group(1)) < store_prompt  # this run's tokens
    assert 0 < completion <= int(finished.group(2))
    # out of what was left when this run began: the thread it did and the ones still left
    assert threads == int(left.group(1)) + 1
    assert scenes > int(left.group(2))
    usage = " ".join(run_terrarium("run", "--help").stdout.split())
    assert "Its figures are this run's" in usage


def test_a_variable_set_empty_is_unset(tmp_path: Path) -> None:
    """`TERRARIUM_CORPUS=` ran on the corpus "." ('corpus path is a directory'), `TERRARIUM_DB=`
    was 'no annotator store at  ' (no path), `TERRARIUM_OFFLINE=` a bad boolean whose message
    showed no value: an empty variable sets nothing, as `TERRARIUM_HOME=` never did."""
    empty = {
        f"TERRARIUM_{name}": ""
        for name in ("CORPUS", "DB", "OFFLINE", "CONCURRENCY", "AGENT_URL", "SITE_URL")
    }
    home = tmp_path / "home"
    status = run_terrarium("status", cwd=tmp_path, env={**empty, "TERRARIUM_HOME": str(home)})
    one_line_refusal(status, f"no annotator store at {home / 'terrarium.db'} ")
    for _ in range(2):
        done = run_terrarium(*run_args("s.db", max_scenes=1), cwd=tmp_path, env=empty)
        assert done.returncode == 0, done.stderr
    assert "scenes 2/5" in run_terrarium("status", "--db", "s.db", cwd=tmp_path, env=empty).stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["status", "--db", ""], "db: names no file"),
        (["export", "--db", "", "--format", "json", "--out", "g.json"], "db: names no file"),
        (["run", "--offline", "--corpus", "", "--db", "s.db"], "corpus: names no file"),
        (["serve", "--db", "s.db", "--host", ""], "an empty address binds every interface"),
        (["dev", "--offline", "--db", "s.db", "--host", " "], "binds every interface"),
        (["import", "", "--out", "c.db"], "book: names no file"),
        (["import", "book.txt", "--out", ""], "--out: names no file"),
        (["score", "--db", "s.db", "--gold", ""], "--gold: names no file"),
        (["export", "--db", "s.db", "--format", "json", "--out", ""], "--out: names no file"),
        (["serve", "--db", "s.db", "--exports-dir", ""], "--exports-dir: names no file"),
    ],
)
def test_an_empty_path_or_address_is_refused_in_one_line(
    tmp_path: Path, args: list[str], said: str
) -> None:
    """`--db ''` was 'no annotator store at  ', `--corpus ''` the corpus '.' ('a directory'),
    `serve --host ''` served on every interface (0.0.0.0), not loopback, and `import ''`,
    `score --gold ''` or `export --out ''` named the working folder ("." is a folder)."""
    for _ in range(2):
        one_line_refusal(run_terrarium(*args, cwd=tmp_path), said)
    assert list(tmp_path.iterdir()) == []


def test_import_out_named_as_a_book_is_refused_and_an_empty_as_of_thread_is_no_thread(
    tmp_path: Path,
) -> None:
    """`import BOOK --out q.txt` wrote a corpus, an SQLite file, under a text file's name (a
    later `import q.txt` would read it as a book); `export --as-of-thread ''` exported the
    glossary as it stands now, as if the option were not given."""
    book = tmp_path / "book.txt"
    book.write_text("CHAPTER I\n\n" + "Maren walked the Salt Road for nine days. " * 20 + "\n")
    for _ in range(2):
        one_line_refusal(
            run_terrarium("import", "book.txt", "--out", "q.txt", cwd=tmp_path),
            "--out q.txt names a book file (.txt)",
            "--out q.db",
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.txt"]
    done = run_terrarium(*run_args("s.db", max_scenes=1), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    exported = run_terrarium(
        "export", "--db", "s.db", "--format", "json", "--out", "g.json", "--as-of-thread", "",
        cwd=tmp_path,
    )  # fmt: skip
    one_line_refusal(exported, "--as-of-thread: no thread ''")
    assert not (tmp_path / "g.json").exists()
