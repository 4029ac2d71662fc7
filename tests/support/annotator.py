"""An `Annotator` over a small quest and a loopback server, built as a run builds one, for the
tests that look inside it (what its parts hold, what it measures) without running a scene."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from terrarium_dagster.agent.loop import Annotator
from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import open_corpus, open_store
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.session import ModelSession
from tests.support.corpus_builder import simple_quest


@contextmanager
def served_annotator(url: str, folder: Path) -> Iterator[Annotator]:
    """An annotator of a one-thread, two-scene quest in `folder`, its session on the server at
    `url`; the session and the store are closed after."""
    corpus = simple_quest(folder / "corpus.db", threads=1, scenes_per_thread=2)
    settings = load_settings(corpus=corpus, db=str(folder / "store.db"), agent_url=url)
    store = open_store(settings)
    try:
        session = ModelSession(
            ChatClient(ClientConfig(base_url=url)),
            store,
            budget=settings.context_budget,
            max_tokens=settings.max_tokens,
            run_id="run-1",
        )
        try:
            yield Annotator(
                store=store,
                corpus=open_corpus(settings, store),
                session=session,
                settings=settings,
                run_id="run-1",
            )
        finally:
            session.close()
    finally:
        store.close()
