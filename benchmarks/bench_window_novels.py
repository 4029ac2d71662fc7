"""Whole novels through a server that enforces its window, answered by the forgetful model.

Each book (a plain-text file, as Gutenberg ships it) is imported with `terrarium import`, then
annotated by `terrarium run` as a process, at each window and concurrency given, through the
loopback server of `tests/support/window_server.py`: it counts every prompt in Qwen3's real tokens
(`terrarium_dagster/testing/qwen3.py`), refuses what does not fit with vLLM's 400, and answers with
the forgetful model (`terrarium_dagster/testing/forgetful.py`), whose answers depend on what it is
shown. One line per run: the exit code, its time, the requests the server saw, how many it refused
as too long, the largest prompt plus answer room it took, and the prompt tokens of all its chat
requests with the share a server's prefix cache would not hold (`PrefixCache`: vLLM's automatic
prefix caching with a cache that forgets nothing, judged on the rendered prompt in blocks of 256
characters: an upper bound of what a real cache holds, so the uncached figure is a lower bound,
comparable between levels); with `--gold BOOK=LIST.yaml`, that
book's runs are scored against its gold list as `terrarium score` scores them (recall, split
referents, live entries), so the levels of one book can be compared. The benchmark exits 1 when
any request was refused or any run did not finish (a non-zero exit), 0 otherwise.

    .venv/bin/python -m benchmarks.bench_window_novels book1.txt book2.txt \
        --windows 8192 4096 --levels 1 16
    B=tests/data/books; .venv/bin/python -m benchmarks.bench_window_novels \
        $B/princess-of-mars-ch1-10.txt --windows 32768 --levels 1 16 \
        --gold princess-of-mars-ch1-10=$B/princess-of-mars-gold.yaml

Run from the checkout (`-m` puts the repo root on the path, for `tests.support`). A long check,
not a test: `tests/test_window_books.py` runs excerpts of four books in the suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from terrarium_dagster.testing import qwen3
from terrarium_dagster.testing.forgetful import ForgetfulBackend
from tests.support.cli import run_args, said, terrarium
from tests.support.window_server import run_window_server


class PrefixCache:
    """Counts a chat request's Qwen3 prompt tokens as the server does (`counting`) and estimates
    how many of them a prefix cache would hold: the request's rendered prompt is cut into blocks
    of `BLOCK` characters, each identified with everything before it; the leading blocks some
    earlier request also had are cached, and the cached tokens are that share of the prompt's."""

    BLOCK = 256

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()
        self.prompt = 0
        self.cached = 0

    def counting(self, body: Mapping[str, Any]) -> int:
        if "max_tokens" not in body and "max_completion_tokens" not in body:
            return qwen3.request_tokens(body)  # a /tokenize: nothing is prefilled
        thinking = bool((body.get("chat_template_kwargs") or {}).get("enable_thinking", True))
        text = qwen3.render(body.get("messages") or [], body.get("tools"), enable_thinking=thinking)
        tokens = qwen3.count(text)  # what `request_tokens` counts, the prompt rendered once
        running = hashlib.sha256()
        blocks = []
        for start in range(0, len(text) - len(text) % self.BLOCK, self.BLOCK):
            running.update(text[start : start + self.BLOCK].encode())
            blocks.append(running.copy().digest())
        with self._lock:
            held = 0
            while held < len(blocks) and blocks[held] in self._seen:
                held += 1
            self._seen.update(blocks)
            self.prompt += tokens
            self.cached += tokens * held * self.BLOCK // max(1, len(text))
        return tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("books", nargs="+", type=Path, help="plain-text novels")
    parser.add_argument("--windows", nargs="+", type=int, default=[8192])
    parser.add_argument("--levels", nargs="+", type=int, default=[1, 16], help="concurrency")
    parser.add_argument("--workdir", type=Path, help="where corpora and stores go (a temp dir)")
    parser.add_argument(
        "--gold",
        action="append",
        default=[],
        metavar="BOOK=LIST",
        help="score BOOK's runs (the file's name without .txt) against a gold list (YAML)",
    )
    args = parser.parse_args(argv)
    golds = dict(item.split("=", 1) for item in args.gold)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-window-novels-"))
    workdir.mkdir(parents=True, exist_ok=True)
    refused = failed = 0
    for book in args.books:
        corpus = workdir / f"{book.stem}.db"
        if not corpus.exists():
            imported = terrarium("import", str(book), "--out", str(corpus))
            if imported.returncode != 0:
                print(f"{book.stem}: import failed: {imported.stderr.strip()}")
                return 1
        for window in args.windows:
            for level in args.levels:
                store = workdir / f"{book.stem}-{window}-{level}.db"
                for stale in workdir.glob(store.name + "*"):
                    stale.unlink()
                backend = ForgetfulBackend(max_model_len=window)
                cache = PrefixCache()
                with run_window_server(window, counting=cache.counting, backend=backend) as s:
                    started = time.monotonic()
                    done = terrarium(
                        *run_args(
                            store,
                            corpus,
                            agent_url=s.url,
                            context_budget=window,
                            concurrency=level,
                        ),
                        timeout=3600,
                        clean=True,
                    )
                    took = time.monotonic() - started
                    requests, over, largest = len(s.requests), s.overflows, s.largest
                refused += over
                failed += done.returncode != 0
                lines = [line for line in done.stderr.splitlines() if said(line)]
                print(
                    f"{book.stem:12s} window {window:6d} concurrency {level:2d}: exit "
                    f"{done.returncode}, {took:6.1f} s, {requests} requests, {over} refused as "
                    f"too long, largest {largest}, {cache.prompt} prompt tokens "
                    f"({cache.prompt - cache.cached} uncached)"
                    + (f" · {lines[-1]}" if lines else "")
                    + (_scored(store, Path(golds[book.stem])) if book.stem in golds else ""),
                    flush=True,
                )
    if refused or failed:
        print(f"{refused} requests refused as too long, {failed} runs that did not finish")
        return 1
    return 0


def _scored(store: Path, gold: Path) -> str:
    """The store against a gold list, as `terrarium score` measures it, in a few words."""
    scored = terrarium("score", "--gold", str(gold), "--db", str(store), "--json")
    if scored.returncode != 0:
        return f" · not scored: {scored.stderr.strip()}"
    report = json.loads(scored.stdout)
    return (
        f" · recall {report['recall']:.3f}, {report['split_referents']} split, "
        f"{report['live_entries']} live"
    )


if __name__ == "__main__":
    raise SystemExit(main())
