"""What a run measures before its first scene teaches its token counter nothing.

A resumed run restores the saved context (the counter's calibration and its remembered exact
counts), then checks the window, counting the fixed prefix exactly (`/tokenize`). Once more than
64 exact counts had been remembered, the prefix's had left them, so the resumed run asked the
server again and learned from that count: its calibration was no longer the one an
uninterrupted run had at that point, and it truncated and compacted at other sizes (a long post
read in parts, stopped after its 13th part: compaction token counts 8 to 16 tokens apart, and the
saved context state differed). The window check measures with a fork of the counter.
"""

from __future__ import annotations

from pathlib import Path

from terrarium_dagster.agent.loop import Annotator
from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import open_corpus, open_store
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.session import ModelSession
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import ScriptedVLLM


def test_counting_the_prefix_for_the_window_check_leaves_the_counter_as_it_was(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    corpus = simple_quest(tmp_path / "corpus.db", threads=1, scenes_per_thread=2)
    settings = load_settings(
        corpus=corpus, db=str(tmp_path / "store.db"), agent_url=vllm_server.url
    )
    store = open_store(settings)
    try:
        session = ModelSession(
            ChatClient(ClientConfig(base_url=vllm_server.url)),
            store,
            budget=settings.context_budget,
            max_tokens=settings.max_tokens,
            run_id="run-1",
        )
        annotator = Annotator(
            store=store,
            corpus=open_corpus(settings, store),
            session=session,
            settings=settings,
            run_id="run-1",
        )
        counter = session.counter
        before = (counter.calibration(), counter.anchors())
        prefix = annotator.served_prefix_tokens()
        assert (counter.calibration(), counter.anchors()) == before
        # still the server's own count of the prefix, not the estimate
        system = {"role": "system", "content": annotator.system_prompt}
        assert prefix == counter.fork().count_exact([system], list(annotator.tools))
        session.close()
    finally:
        store.close()
