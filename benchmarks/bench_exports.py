"""Export cost in a backfill (README figures, not a test).

Generates a corpus with a large invented vocabulary, annotates and curates the first `--warmup`
threads with the offline backend (untimed, so that the glossary starts the backfill at about
3,000 entries), then goes through the next `--threads` threads as a Dagster backfill of the whole
chain does: annotate, curate, then export the glossary as of the thread into its own folder with
one `Exporter` for the run (the previous thread's folder as the base). Reports the share of the
backfill's time spent exporting (target: at most 10%), and checks that the last thread's folder
is byte for byte what a fresh `terrarium export --as-of-thread` writes.

Times are the process's CPU time (user + system), so other work on the machine does not skew the
share.

    python benchmarks/bench_exports.py [--threads 100] [--warmup 20] [--posts 325] [--scale 60]
"""

from __future__ import annotations

import argparse
import filecmp
import tempfile
import time
from pathlib import Path

from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.exports import Exporter, build_export
from terrarium_dagster.exports.files import staged_directory
from terrarium_dagster.testing.synthetic import generate_corpus


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=100, help="threads of the backfill")
    parser.add_argument("--warmup", type=int, default=20, help="threads annotated beforehand")
    parser.add_argument("--posts", type=int, default=325, help="posts per thread")
    parser.add_argument("--scale", type=int, default=60, help="vocabulary scale")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        corpus = generate_corpus(
            root / "quest.db",
            threads=args.warmup + args.threads,
            posts_per_thread=args.posts,
            seed=11,
            vocabulary_scale=args.scale,
        )
        settings = load_settings(offline=True, corpus=corpus, db=str(root / "store.db"))
        exports = root / "exports"
        working = exporting = 0.0
        with Engine.open(settings) as engine:
            threads = engine.threads
            for thread in threads[: args.warmup]:
                engine.annotate_thread(thread.id)
                engine.curate_thread(thread.id)
            start_entries = len(engine.store.glossary.entry_views())
            exporter = Exporter(engine.store, engine.corpus)
            per_thread: list[float] = []
            for thread in threads[args.warmup :]:
                started = time.process_time()
                engine.annotate_thread(thread.id)
                engine.curate_thread(thread.id)
                annotated = time.process_time()
                out_dir = exports / thread.key
                previous = exports / threads[thread.position - 1].key
                base = previous if previous.is_dir() else out_dir
                with staged_directory(out_dir) as staging:
                    exporter.export(staging, as_of_thread=thread.id, base=base, final_dir=out_dir)
                done = time.process_time()
                working += annotated - started
                exporting += done - annotated
                per_thread.append(done - annotated)
            end_entries = len(engine.store.glossary.entry_views())
            last = threads[-1]
            fresh = root / "fresh"
            started = time.process_time()
            build_export(engine.store, engine.corpus, fresh, as_of_thread=last.id)
            full = time.process_time() - started
        names = _files(exports / last.key)
        _match, mismatch, errors = filecmp.cmpfiles(exports / last.key, fresh, names, shallow=False)
        identical = names == _files(fresh) and not mismatch and not errors
        total = working + exporting
        print(
            f"{args.threads} threads x {args.posts} posts after {args.warmup}: glossary "
            f"{start_entries} -> {end_entries} entries, {len(names)} files per export"
        )
        print(
            f"annotate + curate {working:.1f} s, export {exporting:.1f} s: exporting is "
            f"{100 * exporting / total:.1f}% of the backfill (target <= 10%)"
        )
        per_thread.sort()
        print(
            f"export per thread: median {per_thread[len(per_thread) // 2]:.2f} s, first "
            f"(nothing to reuse) {max(per_thread):.2f} s; a full export of the last thread "
            f"{full:.2f} s; identical to a fresh export: {identical}"
        )


if __name__ == "__main__":
    main()
