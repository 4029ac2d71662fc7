"""The corpus layer: read and validate a banished.db corpus, clean post bodies, batch scenes.

No Dagster here. `Corpus` is the read-only reader; `clean_body` turns imageboard HTML into the text
the agent reads; `batch_scenes` groups a thread's posts into scenes (runs of QM story posts);
"""

from terrarium_dagster.corpus.clean import clean_body
from terrarium_dagster.corpus.reader import Corpus, parse_ref
from terrarium_dagster.corpus.scenes import SceneBuilder, batch_scenes, iter_batch_scenes
from terrarium_dagster.corpus.units import (
    Post,
    Scene,
    Thread,
    format_thread_key,
    parse_thread_key,
)

__all__ = [
    "Corpus",
    "Post",
    "Scene",
    "SceneBuilder",
    "Thread",
    "batch_scenes",
    "clean_body",
    "format_thread_key",
    "iter_batch_scenes",
    "parse_ref",
    "parse_thread_key",
]
