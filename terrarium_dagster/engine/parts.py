"""What the engine's use cases share: the settings, the corpus, the store, where threads stand,
the living corpus and the run on record — made once by `facade.py::Engine`, handed to each."""

from __future__ import annotations

from dataclasses import dataclass

from terrarium_dagster.config import Settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine.living_corpus import LivingCorpus
from terrarium_dagster.engine.model_run import ModelRun
from terrarium_dagster.engine.order import ThreadOrder
from terrarium_dagster.store.annotator import GlossaryStore


@dataclass(frozen=True)
class EngineParts:
    """The parts of one engine that its use cases (`ThreadSequence`, `GlossaryEdits`) work
    with; each use case is one of these with its own methods."""

    settings: Settings
    corpus: Corpus
    store: GlossaryStore
    order: ThreadOrder
    living: LivingCorpus
    run: ModelRun
