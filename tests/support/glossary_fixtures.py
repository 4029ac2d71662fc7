"""Fixtures for export and lineage tests: a small quest, a store, a glossary built on them
(a pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.glossary.store import GlossaryStore
from tests.test_curation import URL, build_corpus
from tests.test_exports import build_glossary


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    with Corpus(build_corpus(tmp_path / "quest.db"), url_template=URL) as reader:
        yield reader


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "glossary.db") as opened:
        yield opened


@pytest.fixture
def ids(store: GlossaryStore, corpus: Corpus) -> dict[str, int]:
    return build_glossary(store, corpus)
