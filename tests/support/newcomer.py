"""What the newcomer tests share (tests/test_newcomer*.py; a pytest plugin): `terrarium` as
they run it (the installed script, or its `main` in-process), its one-line refusals, the bundled
sample annotated offline (`sample_run`: by the script, once for a module; `sample_store`: a copy
of the session's same run) and a real book (a trimmed Project Gutenberg text) imported once for
a module (`mars_once`; `mars` copies it)."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.support.cli import digest, run_args, store_copy, terrarium, terrarium_main

MARS = Path(__file__).parents[1] / "data" / "books" / "princess-of-mars-ch1-10.txt"

# `terrarium` with none of the developer's TERRARIUM_* settings: the installed script itself
# (`run_script`) where the process is what is tested (the README's first try, a signal) and
# `main` in this process (`run_terrarium`) where what a command says and leaves is (the same
# output, exit code and files, without a process's start: most of these files' CPU before)
run_script = partial(terrarium, timeout=120, clean=True)
run_terrarium = partial(terrarium_main, clean=True)


def one_line_refusal(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("terrarium: error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def sample_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The bundled sample annotated offline, the whole of it, as the README's first try."""
    db = tmp_path_factory.mktemp("sample") / "sample.db"
    done = run_script(*run_args(db))
    assert done.returncode == 0, done.stderr
    return db, done


@pytest.fixture(scope="module")
def sample_store(offline_bundled_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run's store (`terrarium run --offline`, the bundled sample), made once per worker
    in-process (tests/conftest.py) and copied for the module: `sample_run` is the script's."""
    return store_copy(offline_bundled_store, tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="module")
def mars_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book's chapters I-X imported once; `mars` copies it for a test."""
    corpus = tmp_path_factory.mktemp("mars") / "mars.db"
    done = run_terrarium("import", str(MARS), "--out", str(corpus))
    assert done.returncode == 0, done.stderr
    return corpus


@pytest.fixture
def mars(mars_once: Path) -> Callable[[Path], Path]:
    """Put a copy of the imported book at a path (what `terrarium import` would write there)."""

    def imported(corpus: Path) -> Path:
        shutil.copyfile(mars_once, corpus)
        return corpus

    return imported


# A store's side files and what a refusal calls each (the product's words, written out here so a
# change of them is seen): tests/test_newcomer_side_files.py and test_newcomer_third_try.py
SIDE_FILES = {
    "-calls": "call ledger",
    "-lease": "writer's lease",
    "-wal": "write-ahead log",
    "-shm": "shared-memory index",
    "-journal": "rollback journal",
}


def folder_digests(path: Path) -> dict[str, str]:
    """Every file under `path` with its content's digest (a folder: its name alone)."""
    return {
        str(item.relative_to(path)): digest(item) if item.is_file() else "folder"
        for item in sorted(path.rglob("*"))
    }


QUOTED = re.compile(r"`terrarium ([a-z]+)([^`]*)`")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def command_options() -> dict[str, set[str]]:
    """Each command's options, from the parser the `terrarium` script runs."""
    from terrarium_dagster.cli.app import build_parser

    (commands,) = [
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    return {
        name: {flag for action in parser._actions for flag in action.option_strings}
        for name, parser in commands.choices.items()
    }


def misaddressed(line: str, command: str, options: dict[str, set[str]]) -> list[str]:
    """The options `line` (said by `command`) names that the command it names does not take:
    in a quoted `terrarium CMD ...`, CMD's; elsewhere, `command`'s own."""
    wrong = []
    for named, rest in QUOTED.findall(line):
        wrong += [f"{named} {flag}" for flag in OPTION.findall(rest) if flag not in options[named]]
    unquoted = QUOTED.sub("", line)
    return wrong + [
        f"{command} {flag}" for flag in OPTION.findall(unquoted) if flag not in options[command]
    ]


SAMPLE_GOLD = Path(__file__).parents[2] / "terrarium_dagster" / "corpus" / "sample" / "gold.yaml"


def db_commands(out: Path) -> dict[str, list[str]]:
    """Every command that takes --db, with what else it needs to get that far."""
    return {
        "run": ["--offline"],
        "edition": ["--offline", "--as-of-thread", "ch1"],
        "status": [],
        "export": ["--format", "json", "--out", str(out / "g.json")],
        "lineage": ["E1"],
        "score": ["--gold", str(SAMPLE_GOLD)],
        "serve": ["--port", "0"],
        "dev": ["--offline", "--port", "0"],
        "undo": ["--decision", "1"],
        "recover": ["--out", str(out / "r.db")],
        "snapshots": [],
        "why": ["E1", "--offline"],
    }
