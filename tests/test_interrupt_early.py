"""A Ctrl-C however early says "interrupted" in one line, never a traceback.

Seen: `terrarium dev` stopped by Ctrl-C in its first seconds printed a KeyboardInterrupt's
traceback: Python's, when the signal came while the command's own modules loaded (any command),
and Dagster's, when it came while `dagster dev` imported (its output went straight to the
terminal). Now the script's entry point (`terrarium_dagster.launcher`) turns the first into the
command's one line, and `dev` relays what `dagster dev` says only until a stop is asked."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from importlib.abc import MetaPathFinder
from pathlib import Path

import pytest

from terrarium_dagster import launcher
from terrarium_dagster.cli.common import EXIT_INTERRUPTED

TERRARIUM = str(Path(sys.executable).with_name("terrarium"))
REPO = Path(__file__).resolve().parents[1]
STOPPED = "stopped the Dagster UI and the reader's site (SIGINT)"
INTERRUPTED = "terrarium: interrupted by SIGINT"


class _StoppedWhileLoading(MetaPathFinder):
    """Raises KeyboardInterrupt at the import of the command's modules, as a Ctrl-C does."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == "terrarium_dagster.cli.app":
            raise KeyboardInterrupt


def test_a_stop_while_the_command_loads_is_the_commands_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m.startswith("terrarium_dagster.cli")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_StoppedWhileLoading(), *sys.meta_path])
    assert launcher.main() == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", INTERRUPTED + "\n")


#: A `sitecustomize` for the `terrarium` process: when the launcher imports the command's
#: modules, it says so (a marker file) and waits there, so the test's SIGINT lands while the
#: command loads however fast the machine (a fixed delay raced the loading: seen once).
_HELD_WHILE_LOADING = """
import sys
import time
from pathlib import Path


class _Held:
    def find_spec(self, fullname, path, target=None):
        if fullname == "terrarium_dagster.cli.app":
            sys.meta_path.remove(self)
            Path({marker!r}).touch()
            time.sleep(30)
        return None


sys.meta_path.insert(0, _Held())
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _group_gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("when", ["while terrarium loads", "while dagster dev imports"])
def test_dev_stopped_early_by_ctrl_c_says_one_line(when: str, tmp_path: Path) -> None:
    """A real `terrarium dev` in its own process group, stopped by SIGINT to the group (what a
    terminal's Ctrl-C sends) while it loads, and once it has started `dagster dev`, which is
    then still importing: one line, no traceback, nothing left running."""
    home = tmp_path / "dagster"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    command = [
        *(TERRARIUM, "dev", "--offline", "--db", str(tmp_path / "store.db")),
        *("--port", str(_free_port()), "--site-url", f"http://127.0.0.1:{_free_port()}"),
    ]
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    loading = tmp_path / "loading"
    if when == "while terrarium loads":  # held inside the command's import until the signal
        hook = tmp_path / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(_HELD_WHILE_LOADING.format(marker=str(loading)))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        if when == "while terrarium loads":
            deadline = time.monotonic() + 30
            while not loading.exists() and process.poll() is None:
                assert time.monotonic() < deadline, "terrarium never began loading its command"
                time.sleep(0.02)
        else:
            line = "-"
            while line and not line.startswith("Dagster UI: http://127.0.0.1:"):
                line = process.stdout.readline()  # said once `dagster dev` was started
            assert line, "dev ended before it started dagster dev"
        asked = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
        took = time.monotonic() - asked
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    said = out + err
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said
    if when == "while terrarium loads":
        assert (process.returncode, err.strip()) == (EXIT_INTERRUPTED, INTERRUPTED), said
    else:
        assert process.returncode == 0, said
        assert out.splitlines()[-1] == STOPPED, said
    assert _group_gone(process.pid), "a process of the group is still running"
    # a SIGINT `dagster dev` lost while it set up the new instance is sent again (5 s), never
    # waited out for the whole grace (30 s) and then killed
    assert took < 25, took


def test_a_lost_sigint_is_sent_again_not_waited_out() -> None:
    """`_stop_group` on a child that, as `dagster dev` setting up a new instance's storage, lets
    the first SIGINT go: the second one, five seconds later, stops it (its own exit, not the
    SIGKILL at the end of the grace)."""
    from terrarium_dagster.cli.dev_command import _stop_group

    script = (
        "import signal, sys, time\n"
        "seen = []\n"
        "def got(signum, frame):\n"
        "    seen.append(signum)\n"
        "    if len(seen) == 2: sys.exit(0)\n"
        "signal.signal(signal.SIGINT, got)\n"
        "print('ready', flush=True)\n"
        "while True: time.sleep(0.05)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        started = time.monotonic()
        _stop_group(child, grace_s=30.0, again_s=1.0)
        took = time.monotonic() - started
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 0, child.returncode  # its own exit, at the second SIGINT
    assert 0.9 < took < 10, took
    assert _group_gone(child.pid, timeout_s=1.0)
