"""The `terrarium` command's entry point (`[project.scripts]`).

Loading the command's modules (Dagster, pydantic, the store) takes a second or more; a Ctrl-C
meanwhile would print Python's traceback of whatever was being imported. Here it is the same one
line, and the same exit code, as a Ctrl-C once the command runs (`cli.app.main`). Once the
command has ended, and said how, a Ctrl-C while Python tears itself down (some 40 ms after an
import) changes nothing: Python's own handler is gone by then, and a SIGINT killed the process,
exit 130 with nothing said, after "imported ... into book.db"."""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130  # as cli.common's, which cannot be imported before the command loads


def main() -> int:
    try:
        from terrarium_dagster.cli.app import main as run_command
    except KeyboardInterrupt:
        print("terrarium: interrupted by SIGINT", file=sys.stderr)
        return EXIT_INTERRUPTED
    code = run_command()
    # ignored, not handled: Python sets a handler of its own back to the default (SIGINT
    # kills) as it tears down; SIGTERM and SIGKILL still end a teardown that hangs
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code
