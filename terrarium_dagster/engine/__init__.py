"""The engine: what the CLI and the Dagster assets call. It never imports Dagster.

Its rooms, one per use case: `opening.py` (corpus, store and its writer lease, model client),
`order.py` (where threads stand), `sequence.py` (annotate and curate, thread after thread),
`living_corpus.py` (new posts, changed sources), `edits.py` (undo, restore, export, edition),
`model_run.py` (the run's record and its path to the model), `facade.py` (`Engine`).
"""

from terrarium_dagster.engine.facade import Engine
from terrarium_dagster.engine.model_run import ProgressCallback
from terrarium_dagster.engine.opening import (
    check_corpus_identity,
    open_client,
    open_corpus,
    open_store,
)
from terrarium_dagster.engine.order import DONE
from terrarium_dagster.engine.sequence import ThreadStep

__all__ = [
    "DONE",
    "Engine",
    "ProgressCallback",
    "ThreadStep",
    "check_corpus_identity",
    "open_client",
    "open_corpus",
    "open_store",
]
