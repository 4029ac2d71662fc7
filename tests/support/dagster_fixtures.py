"""Fixtures for materializing the code location's assets on a test instance (a pytest plugin).

`keys` (the sample quest's thread partition keys), `store_path`, `resources` (sample corpus,
store at `store_path`, offline agent) and `instance` (a test instance with the keys added).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.defs.partitions import threads_partitions
from terrarium_dagster.defs.resources import AgentResource, CorpusResource, StoreResource


@pytest.fixture
def keys(sample_db: Path) -> list[str]:
    with Corpus(sample_db) as corpus:
        found = [thread.key for thread in corpus.threads()]
    assert len(found) >= 3, "these tests need a sample quest of at least three threads"
    return found


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "terrarium.db"


@pytest.fixture
def resources(sample_db: Path, store_path: Path) -> dict[str, Any]:
    return {
        "corpus": CorpusResource(path=str(sample_db)),  # links: the served post pages
        "store": StoreResource(path=str(store_path)),
        "agent": AgentResource(offline=True),
    }


@pytest.fixture(scope="session")
def empty_instance_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a test instance that holds nothing yet (its SQLite storages created and
    migrated), made once per worker: each test's `instance` starts from a copy of it. Creating
    and migrating the storages took about 0.2 s of CPU for every test; a copy, a quarter of it."""
    home = tmp_path_factory.mktemp("empty_dagster_home")
    with dg.instance_for_test(temp_dir=str(home)):
        pass
    return home


@pytest.fixture
def instance(
    keys: list[str], empty_instance_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dg.DagsterInstance]:
    """A test instance of its own (a fresh copy of `empty_instance_home`) with the keys added."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copytree(empty_instance_home, home, dirs_exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home)) as test_instance:
        test_instance.add_dynamic_partitions(threads_partitions.name, keys)
        yield test_instance
