"""What Dagster costs: annotate the sample quest through Dagster and through `terrarium run`.

Both use the offline backend and a fresh store. Three measurements:

- `cli`: wall time of the `terrarium run --offline` process (annotate, then curate, each thread);
- `dagster_run`: a single-run backfill of `thread_annotations` over every thread, launched through
  the GraphQL API of a real `dagster dev`: the run's own start to end (run worker start-up, code
  loading, the engine, event logging), and, for information, launch to success (which adds the
  backfill daemon's polling, up to 30 s);
- `materialize`: the same range through `dagster.materialize` in this process, against the engine
  called directly in this process (Dagster's per-run overhead without process start-up).

The target is `dagster_run / cli < 1.5`. Run: `python benchmarks/bench_orchestration.py`
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

TARGET_RATIO = 1.5


def _env(home: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERRARIUM_")}
    env.update(
        TERRARIUM_HOME=str(home),
        TERRARIUM_DB=str(db),
        DAGSTER_DISABLE_TELEMETRY="1",
        TERRARIUM_SENSOR_INTERVAL="1",
    )
    return env


def time_cli(work: Path, home: Path) -> float:
    db = work / "cli" / "terrarium.db"
    db.parent.mkdir(parents=True)
    started = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("terrarium")), "run", "--offline", "--db", str(db)],
        env=_env(home, db),
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"terrarium run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def time_engine_in_process(work: Path, keys: list[str]) -> float:
    from terrarium_dagster.config import load_settings
    from terrarium_dagster.engine import Engine

    settings = load_settings(offline=True, db=str(work / "engine" / "terrarium.db"))
    started = time.perf_counter()
    with Engine.open(settings) as engine:
        for key in keys:
            engine.annotate_thread(engine.thread_by_key(key).id)
    return time.perf_counter() - started


def time_materialize(work: Path, keys: list[str]) -> float:
    import dagster as dg

    from terrarium_dagster.defs.assets import scene_batches, thread_annotations
    from terrarium_dagster.defs.partitions import range_tags, threads_partitions
    from terrarium_dagster.defs.resources import AgentResource, CorpusResource, StoreResource

    resources = {
        "corpus": CorpusResource(),
        "store": StoreResource(path=str(work / "materialize" / "terrarium.db")),
        "agent": AgentResource(offline=True),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(threads_partitions.name, keys)
        started = time.perf_counter()
        result = dg.materialize(
            [scene_batches, thread_annotations],
            selection=[thread_annotations.key],
            instance=instance,
            resources=resources,
            tags=range_tags(keys[0], keys[-1]),
        )
        elapsed = time.perf_counter() - started
    if not result.success:
        raise SystemExit("dagster.materialize of thread_annotations failed")
    return elapsed


def time_dagster_dev(work: Path, home: Path, keys: list[str]) -> dict[str, float]:
    from tests.test_dagster_dev import DagsterDev, dev_environment

    db = work / "dagster" / "terrarium.db"
    with DagsterDev(work / "dagster", dev_environment(home, db)) as dev:
        dev.wait_until_loaded()
        dev.wait_for(
            lambda: dev.partition_keys("thread_annotations") == keys,
            timeout=90,
            what="the sample's thread partitions",
        )
        launched = time.time()
        backfill_id = dev.launch_backfill("thread_annotations", keys)
        (run,) = dev.wait_for(
            lambda: dev.backfill(backfill_id)["runs"], timeout=120, what="the backfill's run"
        )
        finished = dev.wait_for(
            lambda: (found := dev.run(run["runId"]))["status"] in ("SUCCESS", "FAILURE") and found,
            timeout=600,
            what="the backfill's run to finish",
            every=0.2,
        )
        if finished["status"] != "SUCCESS":
            raise SystemExit(f"the backfill's run failed:\n{dev.log_tail()}")
        return {
            "run_seconds": finished["endTime"] - finished["startTime"],
            "queued_to_end_seconds": finished["endTime"] - finished["creationTime"],
            "launch_to_end_seconds": finished["endTime"] - launched,
        }


def best_of(repeat: int, measure: Callable[[int], float]) -> dict[str, float]:
    times = [measure(index) for index in range(repeat)]
    return {"best": min(times), "median": statistics.median(times)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-dev", action="store_true", help="leave out `dagster dev`")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench_orchestration_") as scratch:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        os.environ["TERRARIUM_HOME"] = str(home)
        os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
        from terrarium_dagster.corpus.reader import Corpus
        from terrarium_dagster.corpus.sample import sample_corpus_path

        with Corpus(sample_corpus_path()) as corpus:
            keys = [thread.key for thread in corpus.threads()]
            scenes = sum(len(corpus.scenes(thread.id)) for thread in corpus.threads())

        report: dict[str, Any] = {"threads": len(keys), "scenes": scenes}
        report["cli_seconds"] = best_of(args.repeat, lambda i: time_cli(root / f"c{i}", home))
        report["engine_in_process_seconds"] = best_of(
            args.repeat, lambda i: time_engine_in_process(root / f"e{i}", keys)
        )
        report["materialize_seconds"] = best_of(
            args.repeat, lambda i: time_materialize(root / f"m{i}", keys)
        )
        report["materialize_over_engine"] = round(
            report["materialize_seconds"]["best"] / report["engine_in_process_seconds"]["best"], 3
        )
        if not args.skip_dev:
            dev = time_dagster_dev(root / "dev", home, keys)
            report["dagster_dev"] = dev
            report["dagster_run_over_cli"] = round(
                dev["run_seconds"] / report["cli_seconds"]["best"], 3
            )
            report["target"] = f"dagster_run_over_cli < {TARGET_RATIO}"
            report["target_met"] = report["dagster_run_over_cli"] < TARGET_RATIO
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
