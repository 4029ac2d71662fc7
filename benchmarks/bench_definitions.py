"""Definitions that grow, tags, sound links (README figures, not a test).

Runs the offline backend (annotate + curate) on the bundled sample quest and on a generated
corpus, then reports `exports.definition_report.definition_report`: of the live entries that existed
at the end of the first thread, how many have a different definition at the end; how many live
entries are tagged (by tag); and nested, broken or ordinary-word links in the exports.

    python benchmarks/bench_definitions.py [--threads 20] [--posts 60]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.sample import sample_corpus_path
from terrarium_dagster.engine import Engine, open_corpus
from terrarium_dagster.exports.definition_report import definition_report, render_definition_report
from terrarium_dagster.testing.synthetic import generate_corpus


def measure(corpus: Path, db: Path) -> str:
    settings = load_settings(offline=True, corpus=corpus, db=str(db))
    with Engine.open(settings) as engine:
        for thread in engine.threads:
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)
        report = definition_report(engine.store, open_corpus(settings, engine.store))
    return render_definition_report(report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--posts", type=int, default=60, help="posts per thread")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        print("sample quest (5 threads):")
        print(measure(sample_corpus_path(), root / "sample.db"))
        corpus = generate_corpus(
            root / "quest.db", threads=args.threads, posts_per_thread=args.posts, seed=7
        )
        print(f"\ngenerated corpus ({args.threads} threads x {args.posts} posts):")
        print(measure(corpus, root / "generated.db"))


if __name__ == "__main__":
    main()
