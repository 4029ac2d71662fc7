"""What the integrity check at open costs on a Banished-scale store (README figures, not a test).

A writer runs ``PRAGMA quick_check`` every time it opens an existing store. Annotating the whole
Banished-scale corpus takes over an hour (bench_scale.py), so this builds a real store from a
short generated corpus (offline backend, annotate + curate), then grows it to `--mb` megabytes
(the README's Banished-scale store is 171 MB) with copies of its own rows: snapshots, revisions,
provenance and calls, the tables that grow with the story. Then it times the check and a whole
writer open (check + migrations + WAL), with the file in the page cache (a cold read from disk
adds the time to read the file once; measured once by hand: 1.96 s for 212 MB).

    python benchmarks/bench_integrity.py [--mb 171]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus

GROWING = ("snapshot", "revision", "provenance", "agent_call")


def _grow(db: Path, megabytes: int) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        while db.stat().st_size < megabytes * 1024 * 1024:
            conn.execute("BEGIN")
            for table in GROWING:
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                names = ", ".join(c for c in columns if c != "id")
                conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {table}")
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _time(action: object, repeat: int = 3) -> float:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()  # type: ignore[operator]
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=171, help="store size to grow to")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        corpus = generate_corpus(root / "quest.db", threads=12, posts_per_thread=120, seed=11)
        db = root / "store.db"
        settings = load_settings(offline=True, corpus=corpus, db=str(db))
        with Engine.open(settings) as engine:
            for thread in engine.threads:
                engine.annotate_thread(thread.id)
                engine.curate_thread(thread.id)
        _grow(db, args.mb)
        size_mb = db.stat().st_size / 1024 / 1024

        def quick_check() -> None:
            conn = sqlite3.connect(db)
            assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
            conn.close()

        def writer_open() -> None:
            GlossaryStore(db).close()

        warm = _time(quick_check)
        opening = _time(writer_open)
        print(f"store {size_mb:.0f} MB")
        print(f"quick_check: {warm:.2f} s; a writer's whole open (check included): {opening:.2f} s")


if __name__ == "__main__":
    main()
