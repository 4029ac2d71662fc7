"""A Ctrl-C after a command has ended, and said how, changes nothing: the exit code is the
command's. Seen: `terrarium import` interrupted some 40 ms before its process ended (after
"imported 139 chapters ... into mi2.db", the corpus written) exited 130 with nothing said:
Python, tearing itself down, had set SIGINT back to its default, which kills the process.

The real `terrarium import` (the script's entry point, `launcher.main`, in a process of its
own), a SIGINT sent to that process right after the command returns, as Python ends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

BOOK = Path(__file__).parent / "data" / "lamplighters.txt"

_AFTER = textwrap.dedent(
    """
    import os, signal, sys, time
    from terrarium_dagster.launcher import main
    sys.argv = ["terrarium", *sys.argv[1:]]
    code = main()
    os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C while Python tears itself down
    time.sleep(0.3)
    sys.exit(code)
    """
)


def test_a_ctrl_c_after_the_command_keeps_its_exit_code(tmp_path: Path) -> None:
    for out, expected, said in (
        ("book.db", 0, "imported 2 chapters"),
        ("book.db", 0, "already holds this import"),  # the same command again
        ("q.txt", 2, "terrarium: error:"),  # a refusal keeps its code too
    ):
        done = subprocess.run(
            [sys.executable, "-c", _AFTER, "import", str(BOOK), "--out", out],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=dict(os.environ),
        )
        assert done.returncode == expected, (done.returncode, done.stdout, done.stderr)
        assert said in done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "interrupted" not in done.stderr
    assert (tmp_path / "book.db").is_file()
