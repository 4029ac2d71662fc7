"""`terrarium run`: annotate the threads in story order, with the progress display."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from typing import Any

from terrarium_dagster.cli.arguments import add_agent_command, settings_from_args
from terrarium_dagster.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    counted,
    find_thread,
    log,
    unknown_thread,
)
from terrarium_dagster.cli.progress_display import NoteHandler, Progress
from terrarium_dagster.errors import InputError, Interrupted


def add_run_parser(commands: Any) -> None:
    """Add `run`: the range of threads, a stop after N scenes, a rewind."""
    run = add_agent_command(
        commands,
        "run",
        help="annotate the threads in story order, curating each; the same command resumes",
        description="On a terminal one line shows the progress: threads and scenes done, "
        "entries new and updated, completion tokens per second, model requests in flight "
        "(not offline: the offline backend answers at once) and the time left. Its figures "
        "are this run's (a resumed run counts from nothing, out of the threads and scenes left).",
    )
    run.add_argument(
        "--threads",
        help="FIRST..LAST (thread ids, keys or numbers in story order as ch3; either side may "
        "be empty)",
    )
    run.add_argument(
        "--max-scenes",
        type=int,
        help="stop after this many scenes, at the end of a block of --concurrency scenes "
        "(resume later)",
    )
    run.add_argument(
        "--rewind",
        action="store_true",
        help="redo the --threads range (default: every thread) from its first thread, even "
        "though later threads built on it: they are rolled back too (as revisions, nothing "
        "erased), redone if in the range, else left pending for the next run",
    )
    run.add_argument(
        "--from-snapshot",
        type=int,
        metavar="ID",
        help="roll the glossary and context back to snapshot ID, then resume from there",
    )


def _thread_range(threads: list[Any], spec: str | None) -> list[Any]:
    """The threads `--threads` names (FIRST..LAST, either end open), in story order."""
    if not spec:
        return threads
    if ".." not in spec:
        first = last = spec
    else:
        first, last = spec.split("..", 1)

    def locate(text: str, default: int) -> int:
        if not text:
            return default
        thread = find_thread(threads, text)
        if thread is None:
            raise unknown_thread(text, threads, option="--threads: ")
        return threads.index(thread)

    start, stop = locate(first, 0), locate(last, len(threads) - 1)
    if start > stop:
        raise InputError(f"--threads: {first} comes after {last} in story order")
    return threads[start : stop + 1]


def cmd_run(args: argparse.Namespace) -> int:
    from terrarium_dagster.backends.language import offline_language_note
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.engine import Engine
    from terrarium_dagster.engine.opening import check_store_folder

    settings = settings_from_args(args)
    if (
        args.db is not None
    ):  # a typed --db; TERRARIUM_DB and the config file are deployment settings
        check_store_folder(settings.db)  # a mistyped folder is refused, not made
    if args.max_scenes is not None and args.max_scenes < 1:
        raise InputError(f"--max-scenes must be at least 1, not {args.max_scenes}")
    stop = threading.Event()

    running: list[Any] = []  # the engine, once open
    abandoned: list[Interrupted] = []  # the stop that abandoned a model call, said as such

    def request_stop(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        stop.set()
        if running and running[0].calling:  # abandon the request in flight: the scene rolls back
            log.debug("%s received: abandoning the model call in flight", name)
            abandoned.append(Interrupted(f"{name} during a model call"))
            raise abandoned[-1]
        log.debug("%s received: stopping after the current step", name)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    progress = Progress(sys.stderr)
    started = time.monotonic()
    root = logging.getLogger()
    handlers = root.handlers[:]
    if progress.live:  # log records go above the live line, not into it
        root.handlers = [NoteHandler(progress, handlers)]
    try:
        with Engine.open(
            settings,
            stop=stop,
            progress=progress,
            recorded_corpus=True,  # a refused --threads writes nothing, not even the lease:
            check=lambda corpus, _store: _thread_range(corpus.threads(), args.threads),
        ) as engine:
            running.append(engine)
            engine.max_scenes = args.max_scenes
            if args.from_snapshot is not None:
                engine.restore_snapshot(args.from_snapshot)
            selected = _thread_range(engine.threads, args.threads)
            engine.check_sources()  # a living corpus: sources edited or deleted since cited
            served = None if settings.offline else getattr(engine.client, "server_info", None)
            if served is not None:  # what the server is, said once the run has begun (a
                # refusal at start, such as a window too small, is then the only line)
                progress.heading = f"terrarium: {served.line()}"
            in_flight = None if settings.offline else (lambda: engine.in_flight)
            progress.unit = "chapter" if is_book(engine.corpus) else "thread"
            threads_left, scenes_left = engine.work_left(selected)
            if args.rewind:  # the range is read again from its first thread, whole
                threads_left = len(selected)
                scenes_left = sum(len(engine.corpus.scenes(thread.id)) for thread in selected)
            if threads_left and settings.offline and (note := offline_language_note(engine.corpus)):
                log.warning(note)  # said before the work, once a run has some
            progress.plan(threads_left, scenes_left, in_flight)
            for step in engine.sequence.run_threads(selected, rewind=bool(args.rewind)):
                for problem in step.curation.problems if step.curation else ():
                    log.warning("%s: curation could not apply: %s", step.thread.key, problem)
            totals = engine.store.runs.agent_call_totals(run_id=engine.run_id)
            unit = progress.unit
            left = engine.work_left(selected) if args.max_scenes is not None else (0, 0)
            chosen = {thread.id for thread in selected}
            outside = [thread for thread in engine.threads if thread.id not in chosen]
            beyond = engine.work_left(outside) if args.threads else (0, 0)
    except Interrupted as exc:
        # The engine's own word for where the stop found it ("stopped during scene 606#617":
        # an id no command takes) is no help: a stop the user asked for is said as one.
        if not stop.is_set() or exc in abandoned:
            raise
    finally:
        progress.finish()
        root.handlers = handlers
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stop.is_set():
        print("terrarium: interrupted: run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    elapsed = time.monotonic() - started
    # threads outside --threads still to annotate (never begun, or rolled back by --rewind)
    outside_line = (
        f"{counted(beyond[0], unit, unit + 's')} ({counted(beyond[1], 'scene', 'scenes')}) "
        f"outside --threads {args.threads} left to annotate; `terrarium run` without --threads "
        "annotates them"
        if beyond[0]
        else ""
    )
    if not threads_left and not totals.calls:  # a second run of the same command
        within = f" in --threads {args.threads}" if beyond[0] else ""
        print(f"run finished in {elapsed:.1f}s: nothing left to annotate{within} (0 calls)")
        if outside_line:
            print(outside_line)
        return EXIT_OK
    print(
        f"run finished in {elapsed:.1f}s: {totals.calls} calls, {totals.prompt_tokens} prompt "
        f"tokens ({totals.cached_tokens} cached), {totals.completion_tokens} completion tokens"
    )
    if outside_line and not left[0]:
        print(outside_line)
    if left[0]:  # stopped by --max-scenes before the end: say so, and how to go on
        print(
            f"stopped at --max-scenes {args.max_scenes}: {counted(left[0], unit, unit + 's')} "
            f"({counted(left[1], 'scene', 'scenes')}) left; the same command resumes"
        )
    return EXIT_OK
