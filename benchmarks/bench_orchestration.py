"""What Dagster costs: annotate a corpus through Dagster and through `terrarium run`.

Both use the offline backend and a fresh store; the corpus is the bundled sample quest, or with
`--synthetic THREADS` a larger deterministic synthetic quest. Three measurements:

- `cli`: wall time of the `terrarium run --offline` process (annotate, then curate, each thread);
- `dagster_dev`: a single-run backfill of `thread_annotations` over every thread, launched through
  the GraphQL API of a real `dagster dev`. `worker_launch_to_end`: from the run coordinator
  launching the run worker to the run's end (process start-up, Dagster and code loading, the
  engine, event logging): the counterpart of the CLI's process wall time. `run_seconds`: the run's
  own start to end (after start-up). For information, `queued_to_end` adds the wait in the run
  queue and `launch_to_end` the backfill daemon's polling (up to 30 s) too;
- `materialize`: the same range through `dagster.materialize` in this process, against the engine
  called directly in this process (Dagster's per-run overhead without process start-up).

The target is `worker_launch_to_end / cli < 1.5`. Run: `python benchmarks/bench_orchestration.py`
(`--repeat N` for the in-process and CLI figures, `--skip-dev` to leave out `dagster dev`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.cli import TERRARIUM, run_args  # noqa: E402  (the repo root is on the path now)

TARGET_RATIO = 1.5


class Bench:
    """One corpus, one scratch folder; every measurement gets a fresh store."""

    def __init__(self, root: Path, home: Path, corpus: Path | None, keys: list[str]) -> None:
        self.root = root
        self.home = home
        self.corpus = corpus
        self.keys = keys

    def env(self, db: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TERRARIUM_")}
        env.update(
            TERRARIUM_HOME=str(self.home),
            TERRARIUM_DB=str(db),
            DAGSTER_DISABLE_TELEMETRY="1",
            TERRARIUM_SENSOR_INTERVAL="1",
        )
        if self.corpus is not None:
            env["TERRARIUM_CORPUS"] = str(self.corpus)
        return env

    def store(self, name: str) -> Path:
        db = self.root / name / "terrarium.db"
        db.parent.mkdir(parents=True)
        return db

    def cli(self, index: int) -> float:
        db = self.store(f"cli{index}")
        started = time.perf_counter()
        done = subprocess.run(
            [TERRARIUM, *run_args(db)],
            env=self.env(db),
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"terrarium run failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return elapsed

    def engine_in_process(self, index: int) -> float:
        from terrarium_dagster.config import load_settings
        from terrarium_dagster.engine import Engine

        db = self.store(f"engine{index}")
        settings = load_settings(offline=True, db=str(db), corpus=self.corpus)
        started = time.perf_counter()
        with Engine.open(settings) as engine:
            for key in self.keys:
                engine.annotate_thread(engine.order.thread_by_key(key).id)
        return time.perf_counter() - started

    def materialize(self, index: int) -> float:
        import dagster as dg

        from terrarium_dagster.defs.assets import scene_batches, thread_annotations
        from terrarium_dagster.defs.partitions import range_tags, threads_partitions
        from terrarium_dagster.defs.resources import (
            AgentResource,
            CorpusResource,
            StoreResource,
        )

        resources = {
            "corpus": CorpusResource(path=str(self.corpus or "")),
            "store": StoreResource(path=str(self.store(f"materialize{index}"))),
            "agent": AgentResource(offline=True),
        }
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions(threads_partitions.name, self.keys)
            started = time.perf_counter()
            result = dg.materialize(
                [scene_batches, thread_annotations],
                selection=[thread_annotations.key],
                instance=instance,
                resources=resources,
                tags=range_tags(self.keys[0], self.keys[-1]),
            )
            elapsed = time.perf_counter() - started
        if not result.success:
            raise SystemExit("dagster.materialize of thread_annotations failed")
        return elapsed

    def dagster_dev(self) -> dict[str, float]:
        from tests.support.dagster_dev import DagsterDev

        work = self.root / "dagster_dev"
        db = self.store("dagster_dev_store")
        with DagsterDev(work, self.env(db), quick=False) as dev:  # Dagster's own pace
            dev.wait_until_loaded()
            dev.wait_for(
                lambda: dev.partition_keys("thread_annotations") == self.keys,
                timeout=120,
                what="the corpus's thread partitions",
            )
            launched = time.time()
            backfill_id = dev.launch_backfill("thread_annotations", self.keys)
            (run,) = dev.wait_for(
                lambda: dev.backfill(backfill_id)["runs"], timeout=120, what="the backfill's run"
            )
            finished = dev.wait_for(
                lambda: (
                    (found := dev.run(run["runId"]))["status"] in ("SUCCESS", "FAILURE") and found
                ),
                timeout=3600,
                what="the backfill's run to finish",
                every=0.2,
            )
            if finished["status"] != "SUCCESS":
                raise SystemExit(f"the backfill's run failed:\n{dev.log_tail()}")
            worker_launched = dev.run_event_times(run["runId"])["RunStartingEvent"]
            return {
                "worker_launch_to_end_seconds": finished["endTime"] - worker_launched,
                "run_seconds": finished["endTime"] - finished["startTime"],
                "queued_to_end_seconds": finished["endTime"] - finished["creationTime"],
                "launch_to_end_seconds": finished["endTime"] - launched,
            }


def timings(repeat: int, measure: Callable[[int], float]) -> dict[str, float]:
    times = [measure(index) for index in range(repeat)]
    return {"best": round(min(times), 3), "median": round(statistics.median(times), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-dev", action="store_true", help="leave out `dagster dev`")
    parser.add_argument(
        "--synthetic", type=int, metavar="THREADS", help="a synthetic quest of THREADS threads"
    )
    parser.add_argument("--posts-per-thread", type=int, default=80)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench_orchestration_") as scratch:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        os.environ["TERRARIUM_HOME"] = str(home)
        os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
        from terrarium_dagster.corpus.reader import Corpus
        from terrarium_dagster.corpus.sample import sample_corpus_path
        from terrarium_dagster.testing.synthetic import generate_corpus

        corpus_path: Path | None = None
        if args.synthetic:
            corpus_path = generate_corpus(
                root / "synthetic.db",
                threads=args.synthetic,
                posts_per_thread=args.posts_per_thread,
                seed=0,
            )
        with Corpus(corpus_path or sample_corpus_path()) as corpus:
            keys = [thread.key for thread in corpus.threads()]
            scenes = sum(len(corpus.scenes(thread.id)) for thread in corpus.threads())

        bench = Bench(root, home, corpus_path, keys)
        report: dict[str, Any] = {
            "corpus": f"synthetic {args.synthetic} threads" if args.synthetic else "sample",
            "threads": len(keys),
            "scenes": scenes,
            "cli_seconds": timings(args.repeat, bench.cli),
            "engine_in_process_seconds": timings(args.repeat, bench.engine_in_process),
            "materialize_seconds": timings(args.repeat, bench.materialize),
        }
        report["materialize_over_engine"] = round(
            report["materialize_seconds"]["best"] / report["engine_in_process_seconds"]["best"], 3
        )
        if not args.skip_dev:
            dev = {key: round(value, 3) for key, value in bench.dagster_dev().items()}
            cli = report["cli_seconds"]["best"]
            report["dagster_dev"] = dev
            report["dagster_worker_over_cli"] = round(dev["worker_launch_to_end_seconds"] / cli, 3)
            report["dagster_run_over_cli"] = round(dev["run_seconds"] / cli, 3)
            report["target"] = f"dagster_worker_over_cli < {TARGET_RATIO}"
            report["target_met"] = report["dagster_worker_over_cli"] < TARGET_RATIO
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
