"""Shared fixtures: the bundled sample corpus (built once per session) and a fresh store."""

from __future__ import annotations

import compileall
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# the support package's asserts report their values like a test's, whichever module imports it first
pytest.register_assert_rewrite("tests.support")

from tests.support.vllm_server import vllm_server_fixture  # noqa: E402, F401

# The real browser (`browser`, `page`: Debian's Chromium driven by Playwright) for any test.
pytest_plugins = ["tests.support.browser"]

# Tests never write into the user's data folder or cache.
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
# Scripted servers answer in the order requests arrive, so the suite runs serially by default;
# the concurrent engine is tested where a test asks for it (tests/test_throughput.py).
os.environ.setdefault("TERRARIUM_CONCURRENCY", "1")
# Tests stop the processes they start as Ctrl-C does (SIGINT). A command a shell without job
# control starts in the background (`.ci/run &`, `nohup ... &` in a script) has SIGINT ignored,
# and an ignored signal is inherited by every process started from it, so no `terrarium serve`
# of the suite could be stopped. A handler is not inherited: the tests' processes start with
# SIGINT's default again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package and the tests' helpers to bytecode once, before the workers start.
    The suite starts hundreds of Python processes (`terrarium`, `dagster dev` and its run
    workers, the stand-in servers); where PYTHONDONTWRITEBYTECODE is set (CI images often set it)
    each of them compiled every module of ours from source again, about 0.3 s apiece."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    root = Path(__file__).resolve().parent.parent
    for folder in ("terrarium_dagster", "tests"):
        compileall.compile_dir(root / folder, quiet=2, workers=1, force=False)


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("terrarium_home")
    previous = os.environ.get("TERRARIUM_HOME")
    os.environ["TERRARIUM_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("TERRARIUM_HOME", None)
    else:
        os.environ["TERRARIUM_HOME"] = previous


@pytest.fixture(scope="session")
def sample_db(_isolated_home: Path) -> Path:
    """The bundled sample quest as a SQLite file (built from the shipped SQL)."""
    from terrarium_dagster.corpus.sample import sample_corpus_path

    return sample_corpus_path()


@pytest.fixture(scope="session")
def offline_sample_store(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole sample quest annotated and curated with the offline backend (`terrarium run`
    in-process, as the tests did each for themselves), once per worker: a test that starts from
    such a store takes a copy of it (a file copy; the run is the same every time)."""
    from terrarium_dagster.cli import main
    from tests.support.cli import run_args

    db = tmp_path_factory.mktemp("offline_sample") / "store.db"
    assert main(run_args(db, sample_db)) == 0
    assert not db.with_name(db.name + "-wal").exists(), "the run left its WAL: copies would lose it"
    return db


@pytest.fixture(scope="session")
def offline_bundled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample annotated offline as `terrarium run --offline` alone does it (no
    --corpus: the store records the bundled sample and its post URL template), once per worker;
    a module takes a copy (`tests.support.cli.store_copy`)."""
    from terrarium_dagster.cli import main
    from tests.support.cli import run_args

    db = tmp_path_factory.mktemp("offline_bundled") / "store.db"
    assert main(run_args(db)) == 0
    assert not db.with_name(db.name + "-wal").exists(), "the run left its WAL: copies would lose it"
    return db


# The files that took longest, longest first (the three workers' seconds per file in a run of the
# suite, 2026-12-02, with the newcomer and CLI files since run in-process reckoned in): xdist's
# workers take whole files in order, one ahead each, so a file of minutes taken last would run
# alone at the end while the other workers wait; the two stories on PostgreSQL, one test of
# minutes, start first. Measured again when the suite changes much; a file not listed only runs
# in its place.
LONGEST_FILES = (
    "test_postgres_stories.py",
    "test_boundary_overlap.py",
    "test_defs_assets.py",
    "test_exact_resume.py",
    "test_window.py",
    "test_throughput.py",
    "test_dagster_dev.py",
    "test_defs_automation.py",
    "test_window_books.py",
    "test_llama_server.py",
    "test_dagster_paths.py",
    "test_books_at_concurrency.py",
    "test_scene_parts.py",
    "test_parallel_parity.py",
    "test_dagster_backfill_order.py",
    "test_accounting.py",
    "test_dev_browser.py",
    "test_one_writer.py",
    "test_cli_messages.py",
    "test_site_reader.py",
    "test_newcomer.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (`LONGEST_FILES`), then the other files with a `slow` test (a real
    `dagster dev`, llama.cpp), then the rest, each file's tests kept together: xdist's workers
    take whole files in this order, so no minute-long file starts when the rest of the suite is
    done."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    rank = {name: place for place, name in enumerate(LONGEST_FILES)}

    def order(item: pytest.Item) -> tuple[int, bool]:
        return rank.get(item.path.name, len(rank)), item.path not in slow

    items.sort(key=order)
