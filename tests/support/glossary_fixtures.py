"""Fixtures for export and lineage tests: a small quest (`ember_road_quest`), a store, a glossary
built on them (`build_glossary`; a pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ProvenanceIn
from tests.support.corpus_builder import EMBER_ROAD_URL, ember_road_quest

T1, T2 = 100, 200


def agent(thread_id: int) -> Actor:
    return Actor("agent", run_id="run-x", thread_id=thread_id, scene_id=f"{thread_id}#1")


def src(post_id: int, quote: str = "", thread_id: int = T1) -> ProvenanceIn:
    return ProvenanceIn(post_id=post_id, thread_id=thread_id, quote=quote)


def finish_thread(store: GlossaryStore, corpus: Corpus, thread_id: int) -> None:
    thread = corpus.thread(thread_id)
    store.progress.set_thread_state(
        thread_id,
        thread_key=thread.key,
        position=thread.position,
        status="curated",
        end_revision_id=store.history.last_revision_id(),
    )


def build_glossary(store: GlossaryStore, corpus: Corpus) -> dict[str, int]:
    """Thread 100: four live entries, one merged, one rejected. Thread 200: a revised definition,
    a new source and a new entry."""
    ids: dict[str, int] = {}
    ids["tithe"] = store.glossary.create_entry(
        agent(T1),
        "Ember Tithe",
        "A toll paid at the border fort, enforced by the [[Ashen Guard]]. "
        "Explained by [[Keth'ra|the guide]].",
        tags=["custom"],
        provenance=[src(102, "The Ember Tithe is due"), src(103)],
    ).id
    ids["guard"] = store.glossary.create_entry(
        agent(T1),
        "Ashen Guard",
        "Soldiers of the border gate; they collect the Ember Tithe.",
        tags=["faction"],
        provenance=[src(106, "The Ashen Guard stands at the gate")],
    ).id
    ids["kethra"] = store.glossary.create_entry(
        agent(T1),
        "Keth'ra",
        "A guide who explains the [[Tithe of Embers]] and serves the [[Salt Queen]].",
        tags=["character"],
        provenance=[src(104)],
    ).id
    ids["embers"] = store.glossary.create_entry(
        agent(T1), "Tithe of Embers", "One coal per soul.", provenance=[src(104)]
    ).id
    ids["caravan"] = store.glossary.create_entry(
        agent(T1), "Caravan", "The travellers' wagons.", provenance=[src(100)]
    ).id
    ids["door"] = store.glossary.create_entry(
        agent(T1), "Door", "A door.", provenance=[src(105)]
    ).id
    curator = Actor("curator", run_id="run-x", thread_id=T1)
    store.glossary.merge_entries(curator, ids["embers"], ids["tithe"], "same toll")
    store.glossary.update_entry(curator, ids["door"], status="rejected", reason="common word")
    store.glossary.update_entry(curator, ids["guard"], status="confirmed", reason="seen twice")
    finish_thread(store, corpus, T1)
    store.glossary.update_entry(
        agent(T2),
        ids["tithe"],
        definition="A toll paid at the border fort, enforced by the [[Ashen Guard]]. "
        "Doubled in the ash fields.",
        provenance=[src(200, "the tithe doubles", thread_id=T2)],
    )
    ids["fields"] = store.glossary.create_entry(
        agent(T2),
        "Ash Fields",
        "Grey plains beyond the fort.",
        tags=["place"],
        provenance=[src(200, thread_id=T2)],
    ).id
    finish_thread(store, corpus, T2)
    return ids


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    with Corpus(ember_road_quest(tmp_path / "quest.db"), url_template=EMBER_ROAD_URL) as reader:
        yield reader


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "glossary.db") as opened:
        yield opened


@pytest.fixture
def ids(store: GlossaryStore, corpus: Corpus) -> dict[str, int]:
    return build_glossary(store, corpus)


def cite_first_source(store: Path, *, reason: str | None = None) -> tuple[int, int, int]:
    """Revise the first confirmed entry's definition (as the curator) to cite its first source
    and a post no corpus holds, with `reason` (`{post}` is that source's id); (entry id, its
    thread, its post)."""
    with GlossaryStore(store) as glossary:
        views = glossary.glossary.entry_views()
        entry = next(e for e in views if e.status == "confirmed" and e.provenance)
        source = min(entry.provenance, key=lambda p: p.post_id)
        glossary.glossary.update_entry(
            Actor("curator"),
            entry.id,
            definition=f"Seen at the gate (>>{source.post_id}); not at >>999999.",
            reason=None if reason is None else reason.format(post=source.post_id),
        )
    return entry.id, source.thread_id, source.post_id
