"""Per-thread cost as the glossary grows (README figures, not a test).

Generates a corpus (Banished-like: `--threads` threads of `--posts` posts; the real quest has
about 130,000 posts in about 400 threads), annotates and curates it with the offline backend, and
reports the time per thread over the first and the last 10% of threads (target: last ≤ 1.3 ×
first), the peak memory and the store's size.

    python benchmarks/bench_scale.py [--threads 400] [--posts 325]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=400)
    parser.add_argument("--posts", type=int, default=325, help="posts per thread")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        corpus = generate_corpus(
            root / "quest.db", threads=args.threads, posts_per_thread=args.posts, seed=11
        )
        db = root / "store.db"
        settings = load_settings(offline=True, corpus=corpus, db=str(db))
        seconds: list[float] = []
        scenes: list[int] = []
        with Engine.open(settings) as engine:
            for thread in engine.threads:
                started = time.monotonic()
                report = engine.annotate_thread(thread.id)
                engine.curate_thread(thread.id)
                seconds.append(time.monotonic() - started)
                scenes.append(max(1, report.scenes_annotated))
        tenth = max(1, len(seconds) // 10)
        first = statistics.mean(seconds[:tenth])
        last = statistics.mean(seconds[-tenth:])
        # threads differ in length: the cost per scene is what must not grow with the glossary
        first_scene = sum(seconds[:tenth]) / sum(scenes[:tenth])
        last_scene = sum(seconds[-tenth:]) / sum(scenes[-tenth:])
        with GlossaryStore(db) as store:
            entries = len(store.glossary.entries())
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{args.threads} threads x {args.posts} posts: {entries} entries")
        print(
            f"time per thread: first 10% {first:.2f} s, last 10% {last:.2f} s "
            f"(ratio {last / first:.2f}; target <= 1.3)"
        )
        print(
            f"time per scene: first 10% {first_scene * 1000:.0f} ms, last 10% "
            f"{last_scene * 1000:.0f} ms (ratio {last_scene / first_scene:.2f})"
        )
        print(
            f"total {sum(seconds):.0f} s; peak RSS {peak_mb:.0f} MB; store "
            f"{db.stat().st_size / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
