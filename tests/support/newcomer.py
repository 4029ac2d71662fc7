"""What the newcomer tests share (tests/test_newcomer*.py; a pytest plugin): `terrarium` as
they run it (the installed script, or its `main` in-process), its one-line refusals, the bundled
sample annotated offline (`sample_run`: by the script, once for a module; `sample_store`: a copy
of the session's same run) and a real book (a trimmed Project Gutenberg text) imported once for
a module (`mars_once`; `mars` copies it)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.support.cli import run_args, store_copy, terrarium, terrarium_main

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
