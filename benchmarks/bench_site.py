"""The reader's site at novel scale: size and build time (README figures, not a test).

Generates a corpus (default 80 threads), annotates it with the offline backend, then times
`build_site` and measures what it wrote. Targets: ≤ 20 MB and ≤ 10 s for 80 threads and about
600 entries.

    python benchmarks/bench_site.py [--threads 80] [--posts 40]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine import Engine
from terrarium_dagster.exports.site import build_site
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=80)
    parser.add_argument("--posts", type=int, default=40, help="posts per thread")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        corpus_path = generate_corpus(
            root / "novel.db", threads=args.threads, posts_per_thread=args.posts, seed=3
        )
        settings = load_settings(offline=True, corpus=corpus_path, db=str(root / "store.db"))
        started = time.monotonic()
        with Engine.open(settings) as engine:
            for thread in engine.threads:
                engine.annotate_thread(thread.id)
                engine.curate_thread(thread.id)
        annotated = time.monotonic() - started
        with GlossaryStore(root / "store.db") as store, Corpus(corpus_path) as corpus:
            entries = len(store.glossary.entries())
            started = time.monotonic()
            report = build_site(store, corpus, root / "site")
            built = time.monotonic() - started
        print(
            f"threads {report.threads}, entries {entries} ({report.entries} in the site), "
            f"versions {report.versions}"
        )
        print(
            f"annotation (offline) {annotated:.1f} s; site build {built:.2f} s, "
            f"{report.bytes / 1e6:.2f} MB"
        )


if __name__ == "__main__":
    main()
