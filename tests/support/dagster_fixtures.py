"""Fixtures for materializing the code location's assets on a test instance (a pytest plugin).

`keys` (the sample quest's thread partition keys), `store_path`, `resources` (sample corpus,
store at `store_path`, offline agent) and `instance` (a test instance with the keys added).
"""

from __future__ import annotations

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


@pytest.fixture
def instance(keys: list[str]) -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        test_instance.add_dynamic_partitions(threads_partitions.name, keys)
        yield test_instance
