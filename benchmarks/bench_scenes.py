"""Scene batching over a whole synthetic corpus: time and peak memory.

Usage: python benchmarks/bench_scenes.py [--posts 100000] [--threads N] [--strategy auto|all|...]

Generates a deterministic synthetic corpus (cached in a temporary folder, one file per shape), then
consumes `Corpus.iter_scenes()` to the end, once per measured configuration, each in a fresh Python
process so that memory figures do not mix:

- seconds: wall time of opening the corpus and consuming every scene (no tracing);
- tracemalloc peak: the peak of Python allocations during a second, traced pass;
- maxrss delta: growth of the process's peak resident set (ru_maxrss) during the untraced pass,
  which includes SQLite's page cache and sorter, not only Python objects.

Targets on the reference machine (2 cores): under 5 s and under 200 MB for 100,000 posts.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

TARGET_SECONDS = 5.0
TARGET_MB = 200.0
GENERATOR_VERSION = 1


def _maxrss_mb() -> float:
    # Linux reports ru_maxrss in KiB, macOS in bytes.
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024


def _consume(db: Path, strategy: str | None) -> tuple[int, int, int]:
    from terrarium_dagster.corpus.reader import Corpus

    scenes = 0
    story_posts = 0
    chars = 0
    with Corpus(db) as corpus:
        for scene in corpus.iter_scenes(strategy):  # type: ignore[arg-type]
            scenes += 1
            story_posts += len(scene.posts)
            chars += len(scene.text)
    return scenes, story_posts, chars


def measure(db: Path, strategy: str | None) -> dict[str, object]:
    """One configuration in this process: imports first, then a timed pass and a traced pass."""
    import terrarium_dagster.corpus.reader  # noqa: F401  (imports are not part of the figures)

    rss_before = _maxrss_mb()
    started = time.perf_counter()
    scenes, story_posts, chars = _consume(db, strategy)
    seconds = time.perf_counter() - started
    rss_after = _maxrss_mb()
    tracemalloc.start()
    _consume(db, strategy)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "strategy": strategy or "auto",
        "seconds": seconds,
        "scenes": scenes,
        "story_posts": story_posts,
        "story_chars": chars,
        "tracemalloc_peak_mb": peak / 1024 / 1024,
        "maxrss_delta_mb": rss_after - rss_before,
        "maxrss_mb": rss_after,
    }


def corpus_for(posts: int, threads: int, indexes: bool, cache: Path) -> tuple[Path, float | None]:
    from terrarium_dagster.testing.synthetic import generate_corpus

    per_thread = max(1, posts // threads)
    suffix = "-idx" if indexes else ""
    path = cache / f"synthetic-v{GENERATOR_VERSION}-{threads}x{per_thread}{suffix}.db"
    if path.exists():
        return path, None
    started = time.perf_counter()
    generate_corpus(path, threads=threads, posts_per_thread=per_thread, seed=0, indexes=indexes)
    return path, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=100_000, help="posts in the corpus")
    parser.add_argument("--threads", type=int, default=0, help="threads (default: posts / 1000)")
    parser.add_argument(
        "--strategy",
        choices=("auto", "all", "single_query", "per_thread"),
        default="all",
        help="scan strategy; 'all' measures the default on the schema as shipped (no index) and "
        "both strategies with and without an index on post.thread_id",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "terrarium-bench",
        help="folder for the generated corpora",
    )
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure is not None:  # child process: one configuration, JSON on stdout
        strategy = None if args.strategy == "auto" else args.strategy
        print(json.dumps(measure(args.measure, strategy)))
        return 0

    threads = args.threads or max(1, args.posts // 1000)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.strategy == "all":
        plan = [
            (False, "auto"),
            (False, "per_thread"),
            (True, "auto"),
            (True, "single_query"),
        ]
    else:
        plan = [(False, args.strategy)]
    rows = []
    for indexes, strategy in plan:
        db, generated = corpus_for(args.posts, threads, indexes, args.cache)
        if generated is not None:
            print(f"generated {db.name} in {generated:.2f} s", flush=True)
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(db), "--strategy", strategy],
            check=True,
            capture_output=True,
            text=True,
        )
        figures = json.loads(child.stdout)
        figures["index"] = "yes" if indexes else "no"
        rows.append(figures)

    posts_total = threads * max(1, args.posts // threads)
    print(f"\nscene batching over {posts_total:,} posts in {threads} threads (iter_scenes)\n")
    header = (
        f"{'index':<6}{'strategy':<14}{'seconds':>8}{'posts/s':>10}{'scenes':>8}"
        f"{'story':>8}{'tracemalloc':>13}{'rss delta':>11}{'rss':>8}"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for row in rows:
        seconds = float(row["seconds"])  # type: ignore[arg-type]
        peak = float(row["tracemalloc_peak_mb"])  # type: ignore[arg-type]
        delta = float(row["maxrss_delta_mb"])  # type: ignore[arg-type]
        print(
            f"{row['index']:<6}{row['strategy']:<14}{seconds:>8.2f}{posts_total / seconds:>10,.0f}"
            f"{row['scenes']:>8}{row['story_posts']:>8}{peak:>10.1f} MB{delta:>8.1f} MB"
            f"{float(row['maxrss_mb']):>5.0f} MB"  # type: ignore[arg-type]
        )
        if row["strategy"] == "auto":
            ok = ok and seconds < TARGET_SECONDS and max(peak, delta) < TARGET_MB
    print(
        f"\ntarget for the default strategy: < {TARGET_SECONDS:.0f} s and < {TARGET_MB:.0f} MB: "
        + ("met" if ok else "NOT MET")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
