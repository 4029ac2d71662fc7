"""The `terrarium` command.

Exit codes: 0 success, 1 runtime failure (the model server failed persistently, the context
cannot fit), 2 bad input (corpus, configuration, arguments), 130 interrupted (resume with the
same command).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import signal
import sys
import threading
import time
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from pydantic_core import PydanticUndefined

from terrarium_dagster.config import Settings, cli_group, load_settings
from terrarium_dagster.errors import EntryNotFoundError, InputError, Interrupted, TerrariumError
from terrarium_dagster.paths import default_store_path

if TYPE_CHECKING:
    from terrarium_dagster.corpus.reader import Corpus

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

log = logging.getLogger("terrarium")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it has one (not for flags, nor for settings, whose
    defaults come from `Settings` and are written into their help)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _UsageError(message)


def _command(commands: Any, name: str, *, help: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary (in `terrarium --help`) is also the first line of
    its own `--help`."""
    summary = help[0].upper() + help[1:] + "."
    description = kwargs.pop("description", None)
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=f"{summary} {description}" if description else summary,
        **kwargs,
    )
    return parser


class _UsageError(Exception):
    pass


# Aliases kept for options users already know; every other flag is `--<setting-name>`.
_ALIASES = {"enable_thinking": ("--thinking",)}
# Options that exclude each other (one backend is chosen).
_EXCLUSIVE = {"agent_url", "offline"}


def _option_type(annotation: Any) -> Any:
    """The argparse type of a setting: the one non-None member of its annotation."""
    members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return members[0] if members else annotation


# Settings only some commands use: the site's address (where post links point, where `serve`
# listens) means nothing to status, score, recover, snapshots or undo.
_ONLY_WHERE_ASKED = frozenset({"site_url"})


def _shown_default(name: str) -> str | None:
    """A setting's default as its help shows it (None: it has none, or its text says it)."""
    if name == "db":
        return str(default_store_path())
    default = Settings.model_fields[name].default
    if default is None or default is False or default is PydanticUndefined:
        return None
    return str(default)


def _add_settings(
    parser: argparse.ArgumentParser, group_name: str, also: frozenset[str] = frozenset()
) -> None:
    """Generate the options of one settings group from `Settings` (the single source); the
    settings of `_ONLY_WHERE_ASKED` only when named in `also`."""
    target: Any = parser
    if group_name == "agent":
        target = parser.add_argument_group("agent")
    exclusive = target.add_mutually_exclusive_group() if group_name == "agent" else None
    for name, field in Settings.model_fields.items():
        if cli_group(name) != group_name or (name in _ONLY_WHERE_ASKED and name not in also):
            continue
        flags = (f"--{name.replace('_', '-')}", *_ALIASES.get(name, ()))
        where = exclusive if name in _EXCLUSIVE and exclusive is not None else target
        shown = _shown_default(name)
        default = f"default: {shown}; " if shown is not None else ""
        help_text = f"{field.description or name} ({default}env TERRARIUM_{name.upper()})"
        kind = _option_type(field.annotation)
        if kind is bool:
            action = argparse.BooleanOptionalAction if field.default is None else "store_true"
            where.add_argument(*flags, dest=name, action=action, default=None, help=help_text)
        else:
            where.add_argument(
                *flags, dest=name, type=kind, default=None, metavar=name.upper(), help=help_text
            )


def _add_store(parser: argparse.ArgumentParser, *, site: bool = False) -> None:
    """--db, and --site-url where `site` (the commands that link to or serve the site)."""
    _add_settings(parser, "store", also=frozenset({"site_url"}) if site else frozenset())


def _add_corpus(parser: argparse.ArgumentParser) -> None:
    _add_settings(parser, "corpus")


def _add_agent(parser: argparse.ArgumentParser) -> None:
    _add_settings(parser, "agent")


def _add_snapshot_commands(subparsers: Any) -> None:
    """Add `snapshots` and `why` to the `terrarium` subparsers."""
    snapshots = _command(
        subparsers, "snapshots", help="list the context snapshots (checkpoints) of a store"
    )
    _add_store(snapshots)
    snapshots.add_argument("--thread", type=int, help="only this thread's snapshots (thread id)")
    snapshots.add_argument("--json", action="store_true", help="print JSON instead of text")

    why = _command(
        subparsers, "why", help="ask the past context that wrote an entry why it wrote it"
    )
    why.add_argument("entry", nargs="?", help="entry id (E12), term or alias")
    why.add_argument("--revision", type=int, help="ask about this revision instead")
    why.add_argument("--question", help='default: "Why did you write <term> (<definition>)?"')
    why.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_corpus(why)
    _add_store(why, site=True)
    _add_agent(why)


DESCRIPTION = (
    "Build a glossary of a long serialized story (a forum quest, or a novel turned into a corpus "
    "by `import`) with an LLM agent served by vLLM, or the offline backend (--offline): `run` "
    "annotates the story thread by thread, the other commands read, export and correct the "
    "glossary; `dev` opens the Dagster UI."
)
EPILOG = (
    "A first try: terrarium import BOOK.txt --out book.db; terrarium run --offline --corpus "
    "book.db --db book-glossary.db; terrarium export --db book-glossary.db --format site --out "
    "site. `terrarium COMMAND --help` shows a command's options. Exit codes: 0 done, 1 failed, "
    "2 bad input or refused (nothing written), 130 interrupted (the same command resumes)."
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="terrarium", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug logging (before the command)"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND"
    )

    run = _command(
        commands,
        "run",
        help="annotate the threads in story order, curating each; the same command resumes",
        description="On a terminal one line shows the progress: threads and scenes done, "
        "entries new and updated, completion tokens per second, model requests in flight "
        "(not offline: the offline backend answers at once) and the time left.",
    )
    _add_corpus(run)
    _add_store(run, site=True)
    _add_agent(run)
    run.add_argument("--threads", help="FIRST..LAST (thread ids or keys; either side may be empty)")
    run.add_argument(
        "--max-scenes",
        type=int,
        help="stop after this many scenes, at the end of a block of --concurrency scenes "
        "(resume later)",
    )
    run.add_argument("--rewind", action="store_true", help="redo the first thread and later ones")
    run.add_argument(
        "--from-snapshot",
        type=int,
        metavar="ID",
        help="roll the glossary and context back to snapshot ID, then resume from there",
    )

    edition = _command(
        commands, "edition", help="write the reader's edition up to a thread (each entry rewritten)"
    )
    _add_corpus(edition)
    _add_store(edition)
    _add_agent(edition)
    edition.add_argument(
        "--as-of-thread", required=True, help="thread id or key: the edition up to its end"
    )

    status = _command(commands, "status", help="show a store's threads, entries and tokens")
    _add_store(status)
    status.add_argument("--json", action="store_true", help="print JSON instead of text")

    export = _command(
        commands,
        "export",
        help="write the glossary as JSON, YAML, a SillyTavern lorebook, a wiki or the reader's "
        "site",
        description="Write the glossary (now, or as of a thread) in one format. --out is the "
        "file for json, yaml and lorebook (FILE.json, FILE.yaml, FILE.json; written again, it "
        "is replaced) and the folder for wiki (pages in FOLDER/wiki/, HTML in FOLDER/wiki/html/) "
        "and site (the reader's site).",
    )
    _add_corpus(export)
    _add_store(export, site=True)
    export.add_argument(
        "--format",
        choices=("json", "yaml", "wiki", "lorebook", "site"),
        required=True,
        help="json, yaml, lorebook: one file; wiki, site: a folder",
    )
    export.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the file (json, yaml, lorebook) or folder (wiki, site) to write",
    )
    export.add_argument("--as-of-thread", help="thread id or key: the glossary as it stood then")

    lineage = _command(
        commands, "lineage", help="trace an entry to its revisions, source posts and threads"
    )
    lineage.add_argument("term")
    _add_corpus(lineage)
    _add_store(lineage, site=True)
    lineage.add_argument("--json", action="store_true", help="print JSON instead of text")

    importer = _command(
        commands,
        "import",
        help="turn a book (.txt, .md, .epub) into a corpus: chapters become threads",
    )
    importer.add_argument("book", type=Path, help="plain text, Markdown or EPUB file")
    importer.add_argument("--out", type=Path, required=True, help="corpus SQLite file to write")
    importer.add_argument(
        "--replace", action="store_true", help="write over --out when it exists (else refused)"
    )
    importer.add_argument(
        "--dry-run", action="store_true", help="show the chapters found and what was left out"
    )

    score = _command(
        commands,
        "score",
        help="measure a store against a gold list: recall, junk share, split entries",
    )
    _add_store(score)
    score.add_argument("--gold", type=Path, required=True, help="YAML `terms:` list")
    score.add_argument("--json", action="store_true", help="print JSON instead of text")

    serve = _command(
        commands,
        "serve",
        help="serve the reader's site, the exports and the source posts on loopback",
    )
    _add_store(serve, site=True)
    _add_corpus(serve)
    serve.add_argument(
        "--exports-dir", type=Path, help="exports folder; default: `exports/` beside the store"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, help="port (default: site_url's, 8765 unless set; 0: any free)"
    )

    dev = _command(
        commands,
        "dev",
        help="start the Dagster UI and `terrarium serve` together (one Ctrl-C stops both)",
    )
    _add_corpus(dev)
    _add_store(dev, site=True)
    _add_agent(dev)
    dev.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    dev.add_argument("--port", type=int, default=3000, help="the Dagster UI's port (default 3000)")

    undo = _command(
        commands,
        "undo",
        help="undo a curator decision or a revision (a compensating revision; nothing erased)",
    )
    which = undo.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--decision", type=int, metavar="ID", help="curator decision id (shown by `lineage`)"
    )
    which.add_argument("--revision", type=int, metavar="ID", help="revision id (`lineage`: #ID)")
    undo.add_argument("--reason", help="why (recorded with the undo; default: undone by the user)")
    undo.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_corpus(undo)
    _add_store(undo)

    recover = _command(
        commands,
        "recover",
        help="copy what is readable of a damaged store into a new one (the damaged one is kept)",
    )
    _add_store(recover)
    recover.add_argument("--out", type=Path, required=True, help="the new store (must not exist)")

    _add_snapshot_commands(commands)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    fields = set(Settings.model_fields)
    given = {key: value for key, value in vars(args).items() if key in fields}
    return load_settings(**given)


# -- progress ---------------------------------------------------------------------------------


class Progress:
    """What a run is doing, for whoever watches it.

    On a terminal: one live line for the whole range — a bar of threads done, scenes, entries
    new and updated, tokens per second, model requests in flight (for a served model: the
    offline backend answers in-process, one at a time), and the time left at the recent pace.
    Otherwise (a log, a pipe): one line per finished thread, so a days-long run leaves a
    readable record. `interrupted` ends the live line before the run says it stopped.
    """

    BAR = 20

    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.clock = clock
        self.started = clock()
        self.threads_total = 0
        self.unit = "thread"  # what the corpus's threads are ("chapter": an imported book)
        self.scenes_total = 0
        self.in_flight: Callable[[], int] | None = None
        self.figures: dict[str, Any] = {
            "threads": 0,
            "scenes": 0,
            "created": 0,
            "updated": 0,
            "prompt": 0,
            "cached": 0,
            "completion": 0,
        }
        self._thread_started = clock()
        self._thread_scenes = 0
        self._ended = False
        self.lock = threading.RLock()  # a signal handler may log while the bar is drawn

    def plan(self, threads: int, scenes: int, in_flight: Callable[[], int] | None) -> None:
        """The range the run covers (threads and scenes still to do) and how to read the number
        of requests in flight (None: not shown)."""
        self.threads_total, self.scenes_total, self.in_flight = threads, scenes, in_flight
        self.started = self._thread_started = self.clock()

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        with self.lock:
            f = self.figures
            if event == "scene" and data.get("scene_ended", True):  # a part is not a scene
                f["scenes"] += 1
                self._thread_scenes += 1
            if event == "scene":
                for key in ("created", "updated"):
                    f[key] += int(data.get(key, 0))
                for key in ("prompt", "cached", "completion"):  # run totals
                    f[key] = int(data.get(key, 0))
            elif event == "thread":
                f["threads"] += 1
            if self.live:
                self.stream.write("\r\x1b[2K" + self._bar())
                self._ended = event == "thread" and f["threads"] >= self.threads_total
                if self._ended:
                    self.stream.write("\n")
            elif event == "thread":
                self.stream.write(self._thread_line(str(data.get("thread_key", ""))) + "\n")
                self._thread_scenes = 0
                self._thread_started = self.clock()
            else:
                return
            self.stream.flush()

    def _rate(self) -> float:
        """Completion tokens per second since the run's first scene."""
        spent = self.clock() - self.started
        return self.figures["completion"] / spent if spent > 0 else 0.0

    def _eta(self) -> str:
        done, total = self.figures["scenes"], self.scenes_total
        if not done or total <= done:
            return "—"
        left = (self.clock() - self.started) / done * (total - done)
        hours, rest = divmod(int(left), 3600)
        return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"

    def _bar(self) -> str:
        f = self.figures
        total = max(1, self.threads_total)
        filled = min(self.BAR, int(self.BAR * f["threads"] / total))
        scenes = f"{f['scenes']}/{self.scenes_total}" if self.scenes_total else str(f["scenes"])
        flight = f" · {self.in_flight()} in flight" if self.in_flight is not None else ""
        return (
            f"[{'#' * filled}{'.' * (self.BAR - filled)}] {self.unit}s {f['threads']}/"
            f"{self.threads_total} · scenes {scenes} · entries {self._entries()}"
            f" · {self._rate():.0f} tok/s{flight} · ETA {self._eta()}"
        )

    def _entries(self) -> str:
        return f"{self.figures['created']} new, {self.figures['updated']} updated"

    def _thread_line(self, key: str) -> str:
        f = self.figures
        spent = self.clock() - self._thread_started
        rate = f["cached"] / f["prompt"] if f["prompt"] else 0.0
        return (
            f"{self.unit} {key} done ({f['threads']}/{self.threads_total}): "
            f"{_count(self._thread_scenes, 'scene', 'scenes')} in {spent:.1f}s · scenes "
            f"{f['scenes']}/{self.scenes_total} · entries {self._entries()} · tokens "
            f"{f['prompt']}/{f['completion']} (cache {rate:.0%}) · {self._rate():.0f} tok/s · "
            f"ETA {self._eta()}"
        )

    def note(self, line: str) -> None:
        """Print a line (a log record) above the live bar, never glued to it."""
        with self.lock:
            if self.live and not self._ended:
                self.stream.write(f"\r\x1b[2K{line}\n{self._bar()}")
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def finish(self) -> None:
        with self.lock:
            if self.live and not self._ended:
                self.stream.write("\n")
                self.stream.flush()
            self._ended = True


# -- commands ---------------------------------------------------------------------------------


def _thread_range(engine: Any, spec: str | None) -> list[Any]:
    threads = engine.threads
    if not spec:
        return threads
    if ".." not in spec:
        first = last = spec
    else:
        first, last = spec.split("..", 1)

    def locate(text: str, default: int) -> int:
        if not text:
            return default
        for thread in threads:
            if text in (str(thread.id), thread.key):
                return thread.position
        raise InputError(f"--threads: no thread {text!r} in the corpus (give an id or a key)")

    start, stop = locate(first, 0), locate(last, len(threads) - 1)
    if start > stop:
        raise InputError(f"--threads: {first} comes after {last} in story order")
    return threads[start : stop + 1]


def cmd_run(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.engine import Engine

    settings = _settings(args)
    if args.max_scenes is not None and args.max_scenes < 1:
        raise InputError(f"--max-scenes must be at least 1, not {args.max_scenes}")
    stop = threading.Event()

    running: list[Any] = []  # the engine, once open

    def request_stop(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        stop.set()
        if running and running[0].calling:  # abandon the request in flight: the scene rolls back
            log.debug("%s received: abandoning the model call in flight", name)
            raise Interrupted(f"{name} during a model call")
        log.debug("%s received: stopping after the current step", name)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    progress = Progress(sys.stderr)
    started = time.monotonic()
    root = logging.getLogger()
    handlers = root.handlers[:]
    if progress.live:  # log records go above the live line, not into it
        root.handlers = [_NoteHandler(progress, handlers)]
    try:
        with Engine.open(settings, stop=stop, progress=progress) as engine:
            running.append(engine)
            engine.max_scenes = args.max_scenes
            if args.from_snapshot is not None:
                engine.restore_snapshot(args.from_snapshot)
            selected = _thread_range(engine, args.threads)
            engine.check_sources()  # a living corpus: sources edited or deleted since cited
            in_flight = None if settings.offline else (lambda: engine.in_flight)
            progress.unit = "chapter" if is_book(engine.corpus) else "thread"
            progress.plan(*engine.work_left(selected), in_flight)
            for step in engine.run_threads(selected, rewind=bool(args.rewind)):
                for problem in step.curation.problems if step.curation else ():
                    log.warning("%s: curation could not apply: %s", step.thread.key, problem)
            totals = engine.store.runs.agent_call_totals(run_id=engine.run_id)
    finally:
        progress.finish()
        root.handlers = handlers
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stop.is_set():
        print("terrarium: interrupted: run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    elapsed = time.monotonic() - started
    print(
        f"run finished in {elapsed:.1f}s: {totals.calls} calls, {totals.prompt_tokens} prompt "
        f"tokens ({totals.cached_tokens} cached), {totals.completion_tokens} completion tokens"
    )
    return EXIT_OK


class _NoteHandler(logging.Handler):
    """Log records as lines above a live progress bar, formatted as the handlers it stands in
    for would have."""

    def __init__(self, progress: Progress, handlers: list[logging.Handler]) -> None:
        super().__init__(min((h.level for h in handlers), default=logging.NOTSET))
        self.progress = progress
        self.setFormatter(handlers[0].formatter if handlers else None)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.progress.note(self.format(record))
        except Exception:  # a logging failure must not stop the run
            self.handleError(record)


def _edition_progress(event: str, data: dict[str, object]) -> None:
    if event == "edition":
        print(
            f"{data['thread_key']}: edition written ({data['rewritten']} entries)", file=sys.stderr
        )


def cmd_edition(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import Engine

    settings = _settings(args)
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        log.warning(
            "%s received: stopping after the thread being written", signal.Signals(signum).name
        )
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    started = time.monotonic()
    try:
        with Engine.open(settings, stop=stop, progress=_edition_progress) as engine:
            target = _resolve_thread(engine.corpus, args.as_of_thread)
            reports = engine.write_edition(target.id)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for report in reports:
        state = "already written" if report.already_done else f"{report.kept} kept"
        print(
            f"{report.thread_key}: {report.rewritten} entries rewritten ({state}), "
            f"{report.requests} requests, {report.tokens} tokens"
        )
    print(f"edition as of {target.key} written in {time.monotonic() - started:.1f}s")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from terrarium_dagster.status import store_status

    settings = _settings(args)
    report = store_status(settings.db)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        from terrarium_dagster.status import render_status

        print(render_status(report))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.engine import open_corpus, open_store
    from terrarium_dagster.exports import build_export
    from terrarium_dagster.exports.site import build_site

    settings = _settings(args)
    _check_export_out(args.format, args.out)
    with open_store(settings, read_only=True) as store, open_corpus(settings, store) as corpus:
        if args.format == "site":
            if args.as_of_thread:
                raise InputError("--as-of-thread: the site holds every thread (the reader picks)")
            site = build_site(store, corpus, args.out)
            unit = "chapter" if is_book(corpus) else "thread"
            print(
                f"wrote the reader's site ({_count(site.threads, unit, unit + 's')}, "
                f"{_count(site.entries, 'entry', 'entries')} across them) to {site.out_dir}"
            )
            return EXIT_OK
        as_of = None
        if args.as_of_thread:
            as_of = _resolve_thread(corpus, args.as_of_thread).id
        report = build_export(store, corpus, args.out, formats=(args.format,), as_of_thread=as_of)
    print(_export_line(args.format, args.out, report))
    return EXIT_OK


def _export_line(format_name: str, out: Path, report: Any) -> str:
    """What the export wrote, counting what the file holds."""
    if format_name == "wiki":
        return f"wrote the wiki ({report.entries} entries) to {out / 'wiki'}"
    if format_name == "lorebook":
        left = f"; {report.left_out} without a key that can fire left out" * bool(report.left_out)
        return f"wrote {_count(report.held, 'lorebook entry', 'lorebook entries')} to {out}{left}"
    besides = [
        f"{count} {what}"
        for count, what in ((report.rejected, "rejected"), (report.merged, "merged away"))
        if count
    ]
    kept = f" ({report.entries} in the glossary, {', '.join(besides)})" if besides else ""
    return f"exported {_count(report.held, 'entry', 'entries')}{kept} to {out}"


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


# What `export --out` is: a file for the formats that write one file, else a folder.
_EXPORT_FILE_SUFFIXES = {"json": (".json",), "yaml": (".yaml", ".yml"), "lorebook": (".json",)}
_FILE_LIKE_SUFFIXES = (".json", ".yaml", ".yml", ".md", ".html", ".htm", ".txt", ".zip")


def _check_export_out(format_name: str, out: Path) -> None:
    """`--out` is the file for json, yaml and lorebook (with the format's extension) and the
    folder for wiki and site: checked before anything is read or written."""
    suffixes = _EXPORT_FILE_SUFFIXES.get(format_name)
    if suffixes is not None:
        if out.is_dir():
            raise InputError(
                f"--out {out} is a folder; --format {format_name} writes one file: give its "
                f"path, e.g. {out / ('lorebook' if format_name == 'lorebook' else 'glossary')}"
                f"{suffixes[0]}"
            )
        if out.suffix.lower() not in suffixes:
            raise InputError(
                f"--out {out}: --format {format_name} writes one {' or '.join(suffixes)} file; "
                f"give a path ending in {suffixes[0]}"
            )
        _check_out(out, folder=False)
        return
    if out.suffix.lower() in _FILE_LIKE_SUFFIXES and not out.exists():
        raise InputError(
            f"--out {out}: --format {format_name} writes a folder of pages; give a folder name "
            f"(e.g. {out.with_suffix('')})"
        )
    _check_out(out, folder=True)


def _check_out(out: Path, *, folder: bool) -> None:
    """`--out` must be a place that can be written: checked before anything is read or made."""
    from terrarium_dagster.paths import unwritable_reason

    reason = unwritable_reason(out, folder=folder)
    if reason is not None:
        raise InputError(f"--out {out}: cannot write there: {reason}")


def _resolve_thread(corpus: Any, text: str) -> Any:
    for thread in corpus.threads():
        if text in (str(thread.id), thread.key):
            return thread
    raise InputError(f"no thread {text!r} in the corpus (give an id or a key)")


def cmd_lineage(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_corpus, open_store
    from terrarium_dagster.exports.lineage import lineage, render_lineage_text

    settings = _settings(args)
    with open_store(settings, read_only=True) as store, open_corpus(settings, store) as corpus:
        trail = lineage(store, corpus, args.term)
    if args.json:
        print(trail.model_dump_json(indent=2))
    else:
        print(render_lineage_text(trail))
    return EXIT_OK


def cmd_undo(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import Engine

    settings = _settings(args)
    with Engine.open(settings, model=False) as engine:
        result = engine.undo(
            decision_id=args.decision, revision_id=args.revision, reason=args.reason
        )
    if args.json:
        print(result.model_dump_json(indent=2))
        return EXIT_OK
    revisions = ", ".join(f"#{rid}" for rid in result.revision_ids)
    entries = ", ".join(f"E{eid}" for eid in result.entry_ids)
    print(
        f"undid {result.what}: revision{'s' if len(result.revision_ids) > 1 else ''} "
        f"{revisions} on {entries}"
    )
    for line in result.kept:
        print(f"  kept the later change: {line}")
    if result.thread_key:
        print(f"  the glossary as of {result.thread_key} includes it (re-export that thread)")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.importers import import_book, read_book

    if args.dry_run:
        book = read_book(args.book)
        print(f"{book.title or args.book.name}: {len(book.chapters)} chapters (nothing written)")
        for number, chapter in enumerate(book.chapters, start=1):
            print(f"  {number:3d}. {chapter.title} ({chapter.words} words)")
        for name in book.dropped:
            print(f"  left out: {name}")
        for section in book.reference:
            print(f"  reference, not story: {section.title} ({section.words} words)")
        return EXIT_OK
    _check_out(args.out, folder=False)
    report = import_book(args.book, args.out, replace=args.replace)
    print(
        f"imported {report.chapters} chapters, {report.paragraphs} paragraphs "
        f"({report.words} words) of {report.title} into {report.path}"
    )
    if report.reference:
        print(f"back matter (glossary, appendices) kept for reference in {report.reference}")
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_store
    from terrarium_dagster.exports.score import load_gold, render_score, score

    settings = _settings(args)
    gold = load_gold(args.gold)
    with open_store(settings, read_only=True) as store:
        report = score(store, gold)
    print(report.model_dump_json(indent=2) if args.json else render_score(report))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from terrarium_dagster.exports.serve import make_server

    settings = _settings(args)
    root = args.exports_dir or Path(settings.db).expanduser().resolve().parent / "exports"
    port = args.port if args.port is not None else (urlsplit(settings.site_url).port or 80)
    if not 0 <= port <= 65535:
        raise InputError(f"--port must be 0..65535, not {port}")
    site = SiteRefresher(settings, root)
    with site.corpus() as corpus:
        try:
            server = make_server(root, args.host, port, corpus=corpus, refresh=site.refresh)
        except OSError as exc:
            raise InputError(f"cannot serve on {args.host}:{port}: {exc.strerror}") from None
        site.refresh()  # the reader's site, fresh from the store (again when the store changes)
        host, bound = server.server_address[:2]
        print(f"serving {root} at http://{host}:{bound}/ (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    return EXIT_OK


def cmd_dev(args: argparse.Namespace) -> int:
    """`dagster dev` (the UI, the daemon, the code location) as a child in its own process group,
    and the site server (`terrarium serve`: the reader's site, the exports, the post pages) in
    this process, on `site_url`'s port. Ctrl-C (or SIGTERM) stops both: the child's whole group
    gets SIGINT (Dagster's own orderly shutdown), then SIGKILL if it is still there after 30 s."""
    import subprocess

    from terrarium_dagster.exports.serve import make_server

    settings = _settings(args)
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be 0..65535, not {args.port}")
    env = dict(os.environ)
    for name in Settings.model_fields:  # the child's code location reads the same settings
        value = getattr(args, name, None)
        if value is not None:
            env[f"TERRARIUM_{name.upper()}"] = str(int(value) if isinstance(value, bool) else value)
    # `dagster dev` is what `dg dev` runs; we start it ourselves (any folder, no dg project
    # needed) and so are told it is superseded: that one warning is not for our users.
    env["PYTHONWARNINGS"] = ",".join(
        filter(None, (env.get("PYTHONWARNINGS"), f"ignore:{_SUPERSEDED}::"))
    )
    if "DAGSTER_HOME" not in env and Path("dagster.yaml").is_file():
        env["DAGSTER_HOME"] = str(Path.cwd())  # a checkout: run history persists in it
    root = Path(settings.db).expanduser().resolve().parent / "exports"
    site_port = urlsplit(settings.site_url).port or 80
    site = SiteRefresher(settings, root)
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    with site.corpus() as corpus:
        try:
            server = make_server(root, args.host, site_port, corpus=corpus, refresh=site.refresh)
        except OSError as exc:
            raise InputError(f"cannot serve on {args.host}:{site_port}: {exc.strerror}") from None
        serving = threading.Thread(target=server.serve_forever, name="site", daemon=True)
        serving.start()
        site.refresh()
        workspace = _dev_workspace()
        command = [sys.executable, "-m", "dagster", "dev", "-w", str(workspace)]
        command += ["-h", args.host, "-p", str(args.port)]
        previous = {
            sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        child = subprocess.Popen(command, env=env, start_new_session=True)
        print(
            f"Dagster UI: http://{args.host}:{args.port}/ · the reader's site, the exports and "
            f"the source posts: {settings.site_url}/ (Ctrl-C stops both)",
            flush=True,
        )
        try:
            while child.poll() is None and not stop.wait(0.5):
                pass
        finally:
            _stop_group(child)
            server.shutdown()
            server.server_close()
            shutil.rmtree(workspace.parent, ignore_errors=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if stop.is_set():
        return EXIT_OK
    print(f"terrarium: dagster dev exited with code {child.returncode}", file=sys.stderr)
    return EXIT_FAILURE


_SUPERSEDED = "Function `dev_command` is superseded"  # dagster's SupersessionWarning
# The code location as the project names it ([tool.dg.project] code_location_name): loaded by
# module name alone, Dagster would name it after the module and warn, on every load, that the
# names differ.
_DEV_WORKSPACE = """load_from:
  - python_module:
      module_name: terrarium_dagster.definitions
      location_name: terrarium_dagster
"""


def _dev_workspace() -> Path:
    """A workspace file for `dagster dev` (in a private temporary folder the caller removes)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="terrarium-dev-"))
    workspace = folder / "workspace.yaml"
    workspace.write_text(_DEV_WORKSPACE, encoding="utf-8")
    return workspace


def _stop_group(child: Any, grace_s: float = 30.0) -> None:
    """SIGINT to the child's process group, then SIGKILL to whatever is left after `grace_s`."""
    import subprocess

    group = child.pid  # start_new_session: the group's id is the child's pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=grace_s)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    if child.poll() is None:
        child.wait(timeout=10)


class SiteRefresher:
    """Keeps the reader's site (`<exports>/site/`) as fresh as the store: rebuilt when a run
    has written since the last build (checked at most every `every_s` seconds, on a request)."""

    def __init__(self, settings: Settings, root: Path, every_s: float = 2.0) -> None:
        self.settings = settings
        self.root = root
        self.every_s = every_s
        self._lock = threading.Lock()
        self._checked = -math.inf
        self._built: tuple[object, ...] | None = None
        self._warned = False
        self._said = ""  # the last line printed about a build

    def corpus(self) -> Corpus:
        """The corpus the post pages come from: the one the store was built with, if any."""
        from terrarium_dagster.engine import open_corpus, open_store

        if Path(self.settings.db).expanduser().is_file():
            try:
                with open_store(self.settings, read_only=True) as store:
                    return open_corpus(self.settings, store)
            except TerrariumError:  # an unreadable store: its warning is refresh()'s
                pass
        return open_corpus(self.settings)

    def refresh(self) -> None:
        from terrarium_dagster.engine import open_corpus, open_store
        from terrarium_dagster.exports.site import SITE_DIR, build_site

        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.every_s:
                return
            self._checked = now
            if not Path(self.settings.db).expanduser().is_file():
                return
            try:
                with open_store(self.settings, read_only=True) as store:
                    states = store.progress.thread_states()
                    stamp = (
                        store.history.last_revision_id(),
                        tuple((state.thread_key, state.status) for state in states),
                    )
                    if stamp == self._built:
                        return
                    with open_corpus(self.settings, store) as corpus:
                        site = build_site(store, corpus, self.root / SITE_DIR)
                self._built = stamp
                said = f"built the reader's site: {site.entries} entries, {site.threads} threads"
                if said != self._said:  # a rebuild that changed no count is not news
                    print(said, flush=True)
                    self._said = said
            except TerrariumError as exc:  # still serve the exports and the posts
                if not self._warned:
                    print(f"terrarium: warning: no reader's site ({exc})", file=sys.stderr)
                    self._warned = True


def cmd_snapshots(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_store
    from terrarium_dagster.summon.why import render_snapshots, snapshots_report

    settings = _settings(args)
    with open_store(settings, read_only=True) as store:
        rows = snapshots_report(store, thread_id=getattr(args, "thread", None))
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        print(render_snapshots(rows))
    return EXIT_OK


def cmd_why(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_client, open_corpus, open_store
    from terrarium_dagster.model import sampling
    from terrarium_dagster.summon.why import render_why, why

    if args.entry is None and args.revision is None:
        raise InputError("why: give an entry (E12, a term or an alias) or --revision N")
    settings = _settings(args)
    with open_store(settings, must_exist=True) as store, open_corpus(settings, store) as corpus:
        client = open_client(settings)
        try:
            answer = why(
                store,
                corpus,
                client,
                args.entry,
                revision=args.revision,
                question=args.question,
                budget=settings.context_budget,
                max_tokens=settings.max_tokens,
                request_options=lambda purpose: sampling.request_options(
                    settings, client.model_name(), purpose
                ),
            )
        finally:
            client.close()
    if args.json:
        print(answer.model_dump_json(indent=2))
    else:
        print(render_why(answer))
    return EXIT_OK


def cmd_recover(args: argparse.Namespace) -> int:
    from terrarium_dagster.store.recover import recover

    settings = _settings(args)
    report = recover(Path(settings.db), args.out)
    damaged = ", ".join(report.damaged_tables) or "none"
    print(f"recovered {report.copied} rows into {report.out} (tables with damage: {damaged})")
    for table in report.tables:
        if table.lost_all:
            print(f"  {table.table}: unreadable, nothing recovered")
        elif table.unreadable:
            print(f"  {table.table}: {table.copied} rows; {table.unreadable} damaged stretch(es)")
    if report.dangling:
        print(f"  {report.dangling} rows point at rows that were lost")
    print(
        f"the damaged store {report.source} is unchanged; check the new one with "
        f"`terrarium status --db {report.out}`, then run with `--db {report.out}` "
        "(`--rewind` or `--from-snapshot` redo a thread whose rows were lost)"
    )
    return EXIT_OK


COMMANDS = {
    "dev": cmd_dev,
    "recover": cmd_recover,
    "serve": cmd_serve,
    "score": cmd_score,
    "import": cmd_import,
    "run": cmd_run,
    "status": cmd_status,
    "edition": cmd_edition,
    "export": cmd_export,
    "lineage": cmd_lineage,
    "snapshots": cmd_snapshots,
    "why": cmd_why,
    "undo": cmd_undo,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(f"terrarium: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("httpx").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:  # `terrarium status --json | head`: the reader left, not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return EXIT_OK
    except (InputError, EntryNotFoundError) as exc:  # an unknown entry name is the user's input
        hint = f" (--{exc.setting.replace('_', '-')})" if exc.setting else ""
        print(f"terrarium: error: {exc}{hint}", file=sys.stderr)
        return EXIT_INPUT
    except TerrariumError as exc:
        if exc.exit_code == EXIT_INTERRUPTED:
            print(f"terrarium: interrupted: {exc}; run the same command to resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(f"terrarium: failed: {exc}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
