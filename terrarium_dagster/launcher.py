"""The `terrarium` command's entry point (`[project.scripts]`).

Loading the command's modules (Dagster, pydantic, the store) takes a second or more; a Ctrl-C
meanwhile would print Python's traceback of whatever was being imported. Here it is the same one
line, and the same exit code, as a Ctrl-C once the command runs (`cli.app.main`).

A command that a shell without job control starts in the background (`terrarium serve &` in a
script, `kill -INT $!` its Ctrl-C) inherits SIGINT ignored, and Python then never raises
KeyboardInterrupt: `serve` went on serving after `kill -INT`, while `run`, `edition` and `dev`,
which set handlers of their own, stopped. SIGINT stops every command alike."""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130  # as cli.common's, which cannot be imported before the command loads


def restore_sigint() -> None:
    """SIGINT raises KeyboardInterrupt again where the process inherited it ignored."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> int:
    restore_sigint()
    try:
        from terrarium_dagster.cli.app import main as run_command
    except KeyboardInterrupt:
        print("terrarium: interrupted by SIGINT", file=sys.stderr)
        return EXIT_INTERRUPTED
    return run_command()
