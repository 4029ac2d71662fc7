"""The `terrarium` command as tests call it: the one builder of a run's arguments, and the
installed script beside this interpreter (tests run the real thing, in-process or as a process)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

TERRARIUM = str(Path(sys.executable).with_name("terrarium"))


def run_args(
    db: Path | str | None = None,
    corpus: Path | str | None = None,
    *,
    agent_url: str | None = None,
    offline: bool | None = None,
    **options: object,
) -> list[str]:
    """`terrarium run` arguments: offline unless an agent URL is given (``offline=False`` gives
    neither), then `--corpus` and `--db` when given, then every option by its setting's name
    (``context_budget=100`` -> ``--context-budget 100``; ``True`` -> the flag alone)."""
    args = ["run"]
    if agent_url is not None:
        args += ["--agent-url", agent_url]
    if offline if offline is not None else agent_url is None:
        args.append("--offline")
    if corpus is not None:
        args += ["--corpus", str(corpus)]
    if db is not None:
        args += ["--db", str(db)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


def terrarium(
    *args: str,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    clean: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `terrarium` script to its end, capturing its output. ``clean`` leaves the
    developer's TERRARIUM_* settings out of its environment; ``env`` adds variables."""
    environment = None
    if clean or env:
        environment = {
            key: value
            for key, value in os.environ.items()
            if not (clean and key.startswith("TERRARIUM_"))
        }
        environment.update(env or {})
    return subprocess.run(
        [TERRARIUM, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        cwd=cwd,
    )


def terrarium_main(
    *args: str,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    clean: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`terrarium ARGS` as the script runs it, `main(ARGS)`, but in this process: its stdout and
    stderr captured apart (its log lines too, as the script's `logging.basicConfig` puts them on
    stderr), its exit code what the script exits with, ``env``, ``clean`` and ``cwd`` as for
    `terrarium` (set for the call, then restored). A process costs about 0.4 s of CPU to start
    and import the CLI; a test about what a command says and leaves behind proves the same
    here, while the tests about the process itself (its exit on a signal, the installed script,
    its help) start the real one. ``timeout`` is accepted for a like signature (pytest-timeout
    guards the call)."""
    from terrarium_dagster.cli import main

    del timeout
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    httpx_level = logging.getLogger("httpx").level
    try:
        if clean:
            for key in [key for key in os.environ if key.startswith("TERRARIUM_")]:
                del os.environ[key]
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        root.handlers = []  # pytest's own: the script's basicConfig would add none beside them
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # --help, --version
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        for handler in root.handlers:
            if handler not in saved_handlers:
                handler.close()
        root.handlers, root.level = saved_handlers, saved_level
        logging.getLogger("httpx").setLevel(httpx_level)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["terrarium", *args], code, _text(out), _text(err))


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    # as `subprocess.run(text=True)` reads a process's output: universal newlines
    return buffer.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def said(line: str) -> bool:
    """A line the command says to the user: `terrarium: ...`, the served model's one line at
    the start of a run (`terrarium: server: ...`) aside."""
    return line.startswith("terrarium:") and not line.startswith("terrarium: server:")


def interrupt(process: subprocess.Popen[str]) -> int:
    """Stop a process a test started as Ctrl-C would (SIGINT), killing it if it has not ended
    within 10 s (then `subprocess.TimeoutExpired` is raised); returns its exit code."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def digest(path: Path) -> str:
    """The SHA-256 of a file's bytes: that a command left a file exactly as it was."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def store_copy(built: Path, tmp_path: Path) -> Path:
    """A copy of a built store at `tmp_path/store/terrarium.db`, a folder of its own (a test's
    writes, its exports, its WAL files beside it and nothing else)."""
    store = tmp_path / "store" / "terrarium.db"
    store.parent.mkdir()
    shutil.copyfile(built, store)
    return store
