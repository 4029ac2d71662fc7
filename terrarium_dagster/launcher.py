"""The `terrarium` command's entry point (`[project.scripts]`).

Loading the command's modules (Dagster, pydantic, the store) takes a second or more; a Ctrl-C
meanwhile would print Python's traceback of whatever was being imported. Here it is the same one
line, and the same exit code, as a Ctrl-C once the command runs (`cli.app.main`)."""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # as cli.common's, which cannot be imported before the command loads


def main() -> int:
    try:
        from terrarium_dagster.cli.app import main as run_command
    except KeyboardInterrupt:
        print("terrarium: interrupted by SIGINT", file=sys.stderr)
        return EXIT_INTERRUPTED
    return run_command()
