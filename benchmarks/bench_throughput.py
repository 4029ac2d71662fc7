"""Wall time against a server that batches like vLLM: concurrency 1, 4, 16 and 32.

Usage: python benchmarks/bench_throughput.py [--model offline|forgetful] [--threads 25]
                                             [--posts-per-thread 110] [--scenes-per-thread 20]
                                             [--people 60] [--places 40] [--mentions 3 6]
                                             [--lookups 3] [--scale 0.1] [--levels 1 4 16 32]
                                             [--json]

A generated quest (the same seed every time) is annotated by `terrarium run` once per
concurrency level, each against a fresh `terrarium_dagster.testing.batching` server in its own
process (so the prefix cache starts empty): an engine loop whose step takes
16 ms + 0.25 ms × running sequences, decodes one token per running sequence per step and prefills
uncached prompt tokens at 8,000 tokens/s in chunks of 2,048 per step, every duration multiplied
by `--scale`. The answers are the same model's at every level:

- `--model offline` (the default): the offline backend, on the synthetic quest
  (`testing.synthetic`, `--threads` × `--posts-per-thread`); its gold is the invented vocabulary;
- `--model forgetful`: the model that forgets like a real one (`testing.forgetful`: at most
  `--lookups` lookups a scene of names it does not see as entries, names a thing by the form
  the scene uses, rewrites a definition from what it is shown), on the recurring quest
  (`testing.recurring`, `--threads` × `--scenes-per-thread`, a cast of `--people` and
  `--places` with full names and short forms, each scene introducing two and naming `--mentions`
  known ones, one fact each); its gold is the quest's cast and the facts told.

Reported per level: wall time, speed-up against concurrency 1, model calls, the server's peak of
requests in flight, uncached prompt tokens against serial, and the glossary's quality
(`testing.quality.quality`): recall, split entities (created over the run / live at the end),
lost facts (a fact a scene added that the entry's final definition lacks) and dropped facts (a
rewrite that left out a fact the definition had, even if a later scene wrote it again), redrafts
where the store records them. Then a projection to Banished (about 130,000 posts): seconds per
post at each level, the stand-in's engine time scaled back to real time and the rest of the wall
time (the client's own work) counted as it was measured.

Targets (issue 30): at 16, wall time at least 5× shorter than at 1 (8× the aim), uncached prompt
tokens at most 1.3× serial's, recall no lower than serial − 0.02, no more splits and no more lost
facts than serial.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import httpx

from terrarium_dagster.exports.score import GoldList
from terrarium_dagster.testing.quality import (
    Quality,
    gold_of_quest,
    gold_of_terms,
    quality,
    vocabulary_in,
)
from terrarium_dagster.testing.recurring import RecurringQuest, generate_recurring_quest
from terrarium_dagster.testing.synthetic import generate_corpus

BANISHED_POSTS = 130_000
SPEEDUP_TARGET = 5.0
UNCACHED_TARGET = 1.3
RECALL_SLACK = 0.02
TERRARIUM = str(Path(sys.executable).with_name("terrarium"))


def serve(scale: float, model: str, lookups: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "terrarium_dagster.testing.batching"),
            *("--scale", str(scale), "--model", model, "--lookups", str(lookups)),
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        process.kill()
        raise SystemExit(f"the batching server did not start: {url!r}")
    return process, url


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run_level(
    corpus: Path, workdir: Path, level: int, scale: float, model: str, lookups: int
) -> dict[str, object]:
    process, url = serve(scale, model, lookups)
    db = workdir / f"c{level}.db"
    try:
        started = time.perf_counter()
        done = subprocess.run(
            [
                *(TERRARIUM, "run", "--agent-url", url, "--corpus", str(corpus)),
                *("--db", str(db), "--concurrency", str(level)),
            ],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"concurrency {level} failed: {done.stderr[-800:]}")
        stats = httpx.get(url.removesuffix("/v1") + "/stats", timeout=10).json()
    finally:
        stop(process)
    return {"level": level, "wall_s": round(wall, 2), "db": str(db), **stats}


def make_quest(
    args: argparse.Namespace, workdir: Path
) -> tuple[Path, GoldList, RecurringQuest | None]:
    """The quest the model is benchmarked on, its gold, and the recurring quest's facts."""
    if args.model == "forgetful":
        quest = generate_recurring_quest(
            workdir / "quest.db",
            threads=args.threads,
            scenes_per_thread=args.scenes_per_thread,
            people=args.people,
            places=args.places,
            mentions_per_scene=(args.mentions[0], args.mentions[1]),
            seed=args.seed,
        )
        return quest.path, gold_of_quest(quest), quest
    corpus = generate_corpus(
        workdir / "quest.db",
        threads=args.threads,
        posts_per_thread=args.posts_per_thread,
        seed=args.seed,
    )
    return corpus, gold_of_terms(vocabulary_in(corpus, args.seed)), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("offline", "forgetful"), default="offline")
    parser.add_argument("--threads", type=int, default=25)
    parser.add_argument("--posts-per-thread", type=int, default=110, help="offline's quest")
    parser.add_argument("--scenes-per-thread", type=int, default=20, help="forgetful's quest")
    parser.add_argument("--people", type=int, default=60, help="forgetful's quest's cast")
    parser.add_argument("--places", type=int, default=40, help="forgetful's quest's cast")
    parser.add_argument(
        "--mentions",
        type=int,
        nargs=2,
        default=[3, 6],
        metavar=("LOW", "HIGH"),
        help="forgetful's quest: known things a scene names besides its new ones",
    )
    parser.add_argument("--lookups", type=int, default=3, help="forgetful's lookups a scene")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    corpus, gold, recurring = make_quest(args, workdir)
    with closing(sqlite3.connect(corpus)) as conn:
        posts = conn.execute("SELECT COUNT(*) FROM post").fetchone()[0]
    levels = sorted(set(args.levels) | {1})
    results = []
    for level in levels:
        result = run_level(corpus, workdir, level, args.scale, args.model, args.lookups)
        measured: Quality = quality(Path(str(result["db"])), gold, recurring)
        result.update(
            recall=round(measured.recall, 3),
            live_entries=measured.live_entries,
            splits_created=measured.splits_created,
            splits_live=measured.split_live,
            lost_facts=measured.lost_facts,
            dropped_facts=measured.dropped_facts,
            facts_added=measured.facts_added,
            fact_recall=measured.fact_recall,
            redrafts=measured.redrafts,
        )
        results.append(result)
        print(
            f"concurrency {level:>2}: {result['wall_s']:>7.1f} s, "
            f"{result['chat_requests']} calls, peak in flight {result['peak_in_flight']}, "
            f"uncached {result['uncached_tokens']}, {measured.line()}",
            file=sys.stderr,
        )
    serial = results[0]
    report = {
        "model": args.model,
        "posts": posts,
        "threads": args.threads,
        "scale": args.scale,
        "gold_terms": len(gold.terms),
        "levels": [],
    }
    for result in results:
        speedup = float(serial["wall_s"]) / float(result["wall_s"])
        uncached = int(result["uncached_tokens"]) / max(1, int(serial["uncached_tokens"]))
        # The engine's busy time is the GPU's, scaled back; the rest of the wall time (the
        # client's work, the stand-in's own CPU) happens at real speed and is counted once.
        gpu_s = float(result["engine_busy_s"])
        other_s = max(0.0, float(result["wall_s"]) - gpu_s * args.scale)
        real_s_per_post = (gpu_s + other_s) / posts
        report["levels"].append(
            {
                **{k: v for k, v in result.items() if k != "db"},
                "speedup": round(speedup, 2),
                "uncached_vs_serial": round(uncached, 3),
                "recall_vs_serial": round(float(result["recall"]) - float(serial["recall"]), 3),
                "banished_hours": round(real_s_per_post * BANISHED_POSTS / 3600, 1),
            }
        )
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.model} model: {posts} posts in {args.threads} threads, "
        f"{len(gold.terms)} gold terms, durations × {args.scale}"
    )
    print(
        "level  wall s  speed-up  calls  peak  uncached×serial  recall  splits (made/live)  "
        "facts (lost/dropped)  redrafts  Banished (h, H100)"
    )
    for row in report["levels"]:
        redrafts = "-" if row["redrafts"] is None else str(row["redrafts"])
        splits = f"{row['splits_created']}/{row['splits_live']}"
        facts = f"{row['lost_facts']}/{row['dropped_facts']}"
        print(
            f"{row['level']:>5}  {row['wall_s']:>6.1f}  {row['speedup']:>8.2f}  "
            f"{row['chat_requests']:>5}  {row['peak_in_flight']:>4}  "
            f"{row['uncached_vs_serial']:>15.2f}  {row['recall']:>6.3f}  {splits:>18}  "
            f"{facts:>20}  {redrafts:>8}  {row['banished_hours']:>8.1f}"
        )
    sixteen = next((row for row in report["levels"] if row["level"] == 16), None)
    if sixteen is not None:
        first = report["levels"][0]
        verdict = (
            sixteen["speedup"] >= SPEEDUP_TARGET
            and sixteen["uncached_vs_serial"] <= UNCACHED_TARGET
            and sixteen["recall_vs_serial"] >= -RECALL_SLACK
            and sixteen["splits_created"] <= first["splits_created"]
            and sixteen["lost_facts"] <= first["lost_facts"]
            and sixteen["dropped_facts"] <= first["dropped_facts"]
        )
        print(
            f"target at 16 (≥{SPEEDUP_TARGET}× faster, uncached ≤{UNCACHED_TARGET}× serial, "
            f"recall ≥ serial − {RECALL_SLACK}, no more splits, lost or dropped facts): "
            f"{'met' if verdict else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
