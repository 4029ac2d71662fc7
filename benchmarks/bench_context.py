"""Token cost of a run: the engine, the offline backend's answers, vLLM's prefix cache simulated.

Usage: python benchmarks/bench_context.py [--threads 25] [--posts-per-thread 60] [--budget 32768]
                                          [--qm-words 150 450]

Generates a deterministic synthetic corpus, then runs the same per-thread sequence as
`terrarium run` (annotate, then curate each thread) with the offline backend producing the answers
and `SimulatedVLLM` in front of it: every request is rendered through a chat template, tokenized
deterministically and accounted like vLLM's automatic prefix caching (16-token blocks, chained
hashes, LRU capacity), and refused with vLLM's 400 when it exceeds the window.

Reported per run: calls, prompt / cached / uncached / completion tokens, the largest prompt, the
compactions, and the three targets: largest prompt within the budget, uncached prompt tokens at
most 2.5 times the corpus's own story tokens, at most 2 model calls per scene on average.

With the dev extras installed, every request is also counted in Qwen3's own tokens (rendered as
Qwen3's chat template does, `terrarium_dagster.testing.qwen3`): `qwen3` reports scene rounds per
scene, Qwen3 prompt tokens per scene (all requests, and scene rounds alone) and the fixed prefix
of a scene round (system prompt and tool schemas).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from terrarium_dagster.backends.offline import OfflineBackend
from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine import Engine
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.testing.simulator import SimulatedVLLM, tokenize_text
from terrarium_dagster.testing.synthetic import generate_corpus

UNCACHED_PER_STORY_TARGET = 2.5
# Words per quest-master story post. The bundled sample quest averages about 260 words an update
# (real quests run longer); `--qm-words 40 160` is a short-update stress shape.
QM_WORDS = (150, 450)
CALLS_PER_SCENE_TARGET = 2.0


def story_tokens(corpus_path: Path) -> tuple[int, int]:
    """(story tokens by the simulator's tokenizer, scenes) of the whole corpus."""
    tokens = scenes = 0
    with Corpus(corpus_path) as corpus:
        for scene in corpus.iter_scenes():
            scenes += 1
            tokens += len(tokenize_text(scene.text))
    return tokens, scenes


class Qwen3Tally(httpx.BaseTransport):
    """In front of the simulator: counts each chat request in Qwen3 tokens, by kind of request
    (the first line of its last user message: a scene, or a `# Task:`)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.tokens: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()
        self.system_turn = 0
        try:
            from terrarium_dagster.testing import qwen3

            qwen3.count("probe")
            self.qwen3 = qwen3
        except Exception:  # the dev extras are not installed: no Qwen3 figures
            self.qwen3 = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.qwen3 is not None and request.url.path.endswith("/chat/completions"):
            body = json.loads(request.content)
            users = [m for m in body.get("messages", []) if m.get("role") == "user"]
            first = str(users[-1].get("content") or "").split("\n", 1)[0] if users else ""
            kind = "annotate" if first.startswith("# Scene") else first.removeprefix("# Task: ")
            self.tokens[kind] += self.qwen3.request_tokens(body)
            self.requests[kind] += 1
            if kind == "annotate" and not self.system_turn:
                system = body["messages"][0]["content"]
                self.system_turn = self.qwen3.count(
                    self.qwen3.system_turn(system, body.get("tools"))
                )
        return self.inner.handle_request(request)

    def report(self, scenes: int) -> dict | None:
        if self.qwen3 is None:
            return None
        return {
            "scene_rounds_per_scene": round(self.requests["annotate"] / scenes, 2),
            "prompt_tokens_per_scene": round(sum(self.tokens.values()) / scenes),
            "scene_round_tokens_per_scene": round(self.tokens["annotate"] / scenes),
            "system_turn_tokens": self.system_turn,
            "requests": dict(sorted(self.requests.items())),
            "tokens": dict(sorted(self.tokens.items())),
        }


def run(
    threads: int,
    posts_per_thread: int,
    budget: int,
    seed: int,
    workdir: Path,
    qm_words: tuple[int, int] = QM_WORDS,
) -> dict:
    low, high = qm_words
    corpus_path = workdir / f"corpus-{threads}x{posts_per_thread}-{low}-{high}-{seed}.db"
    if not corpus_path.exists():
        generate_corpus(
            corpus_path,
            threads=threads,
            posts_per_thread=posts_per_thread,
            seed=seed,
            words_per_post=qm_words,
        )
    store_path = workdir / f"store-{time.time_ns()}.db"
    story, scenes = story_tokens(corpus_path)

    simulator = SimulatedVLLM(OfflineBackend(max_model_len=10 * budget), max_model_len=budget)
    tally = Qwen3Tally(simulator)
    client = ChatClient(
        ClientConfig(base_url="http://simulated/v1", max_retries=0), transport=tally
    )
    settings = load_settings(
        corpus=corpus_path,
        db=str(store_path),
        agent_url="http://simulated/v1",
        context_budget=budget,
    )
    started = time.monotonic()
    with Engine.open(settings, client=client) as engine:
        for thread in engine.threads:
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)
    elapsed = time.monotonic() - started

    stats = simulator.stats.as_dict()
    with sqlite3.connect(store_path) as connection:
        by_purpose = dict(
            connection.execute(
                "SELECT purpose, count(*) FROM agent_call GROUP BY purpose ORDER BY purpose"
            ).fetchall()
        )
        uncached_by_purpose = dict(
            connection.execute(
                "SELECT purpose, sum(prompt_tokens - cached_tokens) FROM agent_call "
                "GROUP BY purpose ORDER BY purpose"
            ).fetchall()
        )
        tiers = Counter(
            tier for (tier,) in connection.execute("SELECT tier FROM compaction").fetchall()
        )
        entries = connection.execute("SELECT count(*) FROM entry").fetchone()[0]
    uncached = stats["prompt_tokens"] - stats["cached_tokens"]
    limit = budget - settings.max_tokens
    return {
        "threads": threads,
        "posts": threads * posts_per_thread,
        "qm_words_per_post": list(qm_words),
        "scenes": scenes,
        "story_tokens": story,
        "budget": budget,
        "seconds": round(elapsed, 1),
        "calls": stats["calls"],
        "calls_by_purpose": by_purpose,
        "prompt_tokens": stats["prompt_tokens"],
        "cached_tokens": stats["cached_tokens"],
        "uncached_tokens": uncached,
        "uncached_by_purpose": uncached_by_purpose,
        "completion_tokens": stats["completion_tokens"],
        "largest_prompt": stats["largest_prompt"],
        "overflows": stats["overflows"],
        "compactions": dict(sorted(tiers.items())),
        "entries": entries,
        "calls_per_scene": round(stats["calls"] / scenes, 2),
        "qwen3": tally.report(scenes),
        "uncached_per_story_token": round(uncached / story, 2),
        "targets": {
            "largest_prompt_within_budget": stats["largest_prompt"] <= limit,
            "uncached_at_most_2.5x_story": uncached <= UNCACHED_PER_STORY_TARGET * story,
            "at_most_2_calls_per_scene": stats["calls"] <= CALLS_PER_SCENE_TARGET * scenes,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=25)
    parser.add_argument("--posts-per-thread", type=int, default=60)
    parser.add_argument("--budget", type=int, default=32768)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--qm-words",
        type=int,
        nargs=2,
        default=QM_WORDS,
        metavar=("LOW", "HIGH"),
        help="words per quest-master story post (uniform)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "terrarium-bench"
    )
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    report = run(
        args.threads,
        args.posts_per_thread,
        args.budget,
        args.seed,
        args.workdir,
        tuple(args.qm_words),
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
