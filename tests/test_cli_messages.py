"""What the CLI says, read as a newcomer reads it: every `--help`, an error with nothing before
it, a progress line that explains itself, and Ctrl-C on a terminal that says "interrupted" on a
line of its own and nothing else.

Real commands (the installed `terrarium` script) on real books (trimmed Project Gutenberg texts),
the Ctrl-C case on a real pseudo-terminal.
"""

from __future__ import annotations

import io
import os
import pty
import re
import select
import signal
import subprocess
import time
from functools import partial
from pathlib import Path

import pytest

from terrarium_dagster.cli import Progress
from terrarium_dagster.testing.batching import BatchingServer
from tests.support.cli import TERRARIUM, run_args, terrarium, terrarium_main

BOOKS = Path(__file__).parent / "data" / "books"
MARS = BOOKS / "princess-of-mars-2008.txt"
MARS_SHORT = BOOKS / "princess-of-mars-ch1-10.txt"
COMMANDS = (
    "run",
    "status",
    "export",
    "lineage",
    "import",
    "score",
    "serve",
    "dev",
    "undo",
    "recover",
    "snapshots",
    "why",
    "edition",
)
_terrarium = partial(terrarium, timeout=120, clean=True)


def _text(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stdout.split())


def test_the_top_level_help_says_what_the_tool_does_and_lists_every_command() -> None:
    done = _terrarium("--help")
    assert done.returncode == 0
    text = _text(done)
    assert "Build a glossary of a long serialized story" in text
    for command in COMMANDS:
        assert re.search(rf"\n  +{command} +\S", done.stdout), command
    assert "The `terrarium` command" not in text
    version = _terrarium("--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"terrarium \d+\.\d+\.\d+\n", version.stdout), version.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_one_line_description_and_shows_defaults(command: str) -> None:
    done = _terrarium(command, "--help")
    assert done.returncode == 0, done.stderr
    description = done.stdout.split("\n\n")[1]
    assert description[0].isupper() and "." in description, description
    assert "(see Sampling)" not in done.stdout  # a README section that does not exist
    uses_site = command in ("run", "export", "lineage", "serve", "dev", "why", "edition")
    assert ("--site-url" in done.stdout) == uses_site, command
    if "--db" in done.stdout:
        shown = re.search(r"--db DB Annotator store: [^(]*\(default: (\S+);", _text(done))
        assert shown and shown.group(1).endswith("terrarium.db"), done.stdout


def test_a_default_path_with_hyphens_is_shown_whole_in_help(tmp_path: Path) -> None:
    """In a folder named with a hyphen (a checkout in /work/wt-sweep), `--help` showed the
    default store as "(default: /work/wt-" and "sweep/data/terrarium.db" on the next line: a
    path is never cut, at a hyphen or anywhere, even one longer than a line."""
    for home in (tmp_path / "my-books", tmp_path / "a-very-long-folder-name" / "of-my-books"):
        home.mkdir(parents=True)
        for command in ("status", "export", "run"):
            done = _terrarium(command, "--help", env={"TERRARIUM_HOME": str(home)})
            assert str(home / "terrarium.db") in done.stdout, done.stdout


def test_defaults_and_the_progress_legend_are_in_run_help() -> None:
    text = _text(_terrarium("run", "--help"))
    for default in ("default: 32768", "default: 1024", "default: 16", "default: 180.0"):
        assert default in text, default
    assert "entries new and updated" in text and "in flight" in text
    export = _text(_terrarium("--help"))
    assert "JSON, YAML, a SillyTavern lorebook, a wiki or the reader's site" in export


def test_an_error_is_one_line_with_no_log_line_before_it(tmp_path: Path) -> None:
    corpus = tmp_path / "book.db"
    assert _terrarium("import", str(MARS_SHORT), "--out", str(corpus)).returncode == 0
    done = _terrarium(*run_args(tmp_path / "s.db", corpus, threads="nowhere"), cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("terrarium: error: --threads: no thread 'nowhere' in the corpus: ")
    assert "in story order as ch3 (the first is 1, t00000-1 or ch1; the last ch10)" in line, line
    # a run that works prints each log line once (its thread lines, off a terminal)
    ran = _terrarium(*run_args(tmp_path / "s.db", corpus, max_scenes=6), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert lines and len(lines) == len(set(lines)), ran.stderr
    assert "INFO" not in ran.stderr and "in flight" not in ran.stderr
    assert not re.search(r"\b1 scenes\b", ran.stderr)


def test_progress_counts_in_words_and_shows_in_flight_only_for_a_served_model() -> None:
    stream = io.StringIO()
    progress = Progress(stream, clock=lambda: 1.0)
    progress.live = True
    progress.plan(2, 3, None)  # offline: nothing is ever in flight
    progress("scene", {"created": 2, "updated": 1})
    assert "entries 2 new, 1 updated" in stream.getvalue()
    assert "in flight" not in stream.getvalue()
    progress.plan(2, 3, lambda: 4)
    progress("scene", {"created": 0, "updated": 0})
    assert "4 in flight" in stream.getvalue()
    progress.note("a log line")  # above the bar, never glued to it
    assert "\r\x1b[2Ka log line\n[" in stream.getvalue()

    lines = io.StringIO()
    quiet = Progress(lines, clock=lambda: 1.0)
    quiet.plan(1, 1, None)
    quiet("scene", {"created": 1, "updated": 0})
    quiet("thread", {"thread_key": "t00000-1"})
    assert "done (1/1): 1 scene in" in lines.getvalue()


def _read(fd: int, until: float, stop: re.Pattern[str] | None = None) -> str:
    seen = b""
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        if stop is not None and stop.search(seen.decode(errors="replace")):
            break
    return seen.decode(errors="replace")


def test_ctrl_c_on_a_terminal_says_interrupted_on_its_own_line_and_nothing_else(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "book.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERRARIUM_")}
    process = subprocess.Popen(
        [TERRARIUM, *run_args(tmp_path / "s.db", corpus)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=tmp_path,
    )
    os.close(follower)
    try:
        # the live line, after the first scenes: then Ctrl-C
        before = _read(leader, time.monotonic() + 90, re.compile(r"scenes [1-9]\d*/"))
        assert "chapters" in before, before  # an imported book: its threads are chapters
        process.send_signal(signal.SIGINT)
        after = _read(leader, time.monotonic() + 60)
        assert process.wait(timeout=60) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    output = before + after
    assert "run finished" not in output
    assert "received" not in output  # no log line for the signal itself
    lines = [line.rsplit("\r\x1b[2K", 1)[-1] for line in output.replace("\r\n", "\n").split("\n")]
    said = [line for line in lines if "interrupted" in line]
    assert len(said) == 1 and said[0].startswith("terrarium: interrupted"), output[-500:]
    assert "resume" in said[0]
    bars = [line for line in lines if line.startswith("[")]
    assert bars and all("in flight" not in bar for bar in bars)  # offline
    assert all("entries" in bar and " new, " in bar for bar in bars)


def _served_run(tmp_path: Path, **options: object) -> subprocess.CompletedProcess[str]:
    """`terrarium run` of the short Mars book through a loopback server (BatchingServer)."""
    corpus = tmp_path / "book.db"
    assert _terrarium("import", str(MARS_SHORT), "--out", str(corpus)).returncode == 0
    with BatchingServer() as server:
        args = run_args(tmp_path / "s.db", corpus, agent_url=server.url, **options)
        return _terrarium(*args, cwd=tmp_path)


def test_a_run_on_a_served_model_says_once_what_the_server_is(tmp_path: Path) -> None:
    done = _served_run(tmp_path, max_scenes=2)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("terrarium: server:")]
    assert len(said) == 1 and "window" in said[0], done.stderr
    assert "INFO" not in done.stderr


def test_a_window_refused_at_start_is_the_only_line_said(tmp_path: Path) -> None:
    """The server's one line is said once the run has begun: a refusal at start stands alone."""
    refused = _served_run(tmp_path, context_budget=3000)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "smallest this run works in" in lines[0], refused.stderr
    assert not (tmp_path / "s.db").exists(), "nothing written"


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_command_stopped_by_a_signal_says_so_in_one_line_never_a_traceback(
    stop: signal.Signals, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM killed any command but `run`, `edition` and `dev` on the spot (exit 143: nothing
    closed, a reader's WAL files left beside the store), and Ctrl-C before a command set its
    own handler was a traceback. Either, at any point of a command, is one line and exit 130,
    and SIGTERM's handler is the caller's again afterwards."""
    from terrarium_dagster.cli import app

    def stopped(args: object) -> int:
        os.kill(os.getpid(), stop)  # the real signal, delivered to this process
        time.sleep(5)  # (the handler raises before this ends)
        raise AssertionError("the signal did not stop the command")

    monkeypatch.setitem(app.COMMANDS, "status", stopped)
    before = signal.getsignal(signal.SIGTERM)
    done = terrarium_main("status")
    assert (done.returncode, done.stdout) == (130, "")
    assert done.stderr.splitlines() == [f"terrarium: interrupted by {stop.name}"]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_run_stopped_between_model_calls_says_the_documented_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C that found the run between two model calls ended it with the engine's own words,
    'terrarium: interrupted: stopped during scene 606#617; run ...' (an id no command takes):
    it is the line docs/cli.md gives, 'terrarium: interrupted: run the same command to resume'."""
    from terrarium_dagster.agent import calls

    corpus = tmp_path / "book.db"
    assert terrarium_main("import", str(MARS_SHORT), "--out", str(corpus)).returncode == 0
    run_tools = calls.SceneCalls.run_tools

    def ctrl_c_between_calls(self: calls.SceneCalls, result: object) -> object:
        os.kill(os.getpid(), signal.SIGINT)  # the real signal, no model call in flight
        return run_tools(self, result)  # type: ignore[arg-type]

    monkeypatch.setattr(calls.SceneCalls, "run_tools", ctrl_c_between_calls)
    done = terrarium_main(*run_args(tmp_path / "s.db", corpus))
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines()[-1] == "terrarium: interrupted: run the same command to resume"
