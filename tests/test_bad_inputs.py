"""Bad input gets one line naming the problem and exit 2, nothing written (`terrarium`'s main
in-process; a closed pipe and a full disk on the real process)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.support.cli import TERRARIUM, run_args, said, terrarium_main

_terrarium = partial(terrarium_main, clean=True)


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if said(line)]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--agent-url", "http://", ("agent_url", "no host")),
        ("--max-scenes", "-1", ("--max-scenes",)),
        ("--db", "", ("db: names no file",)),
    ],
)
def test_bad_run_options_are_one_line_errors(
    tmp_path: Path, option: str, value: str, words: tuple[str, ...]
) -> None:
    args = [*run_args(tmp_path / "s.db"), option, value]
    if option == "--agent-url":
        args.remove("--offline")
    _one_line(_terrarium(*args, cwd=tmp_path), *words)
    assert not (tmp_path / "s.db").exists() or option == "--db"


def test_a_directory_as_the_store_is_a_one_line_error(tmp_path: Path) -> None:
    _one_line(_terrarium(*run_args(tmp_path)), "is a folder")


def test_a_non_finite_timeout_is_refused(tmp_path: Path) -> None:
    done = _terrarium(*run_args(tmp_path / "s.db"), env={"TERRARIUM_TIMEOUT_S": "inf"})
    _one_line(done, "timeout_s", "finite")
    assert not (tmp_path / "s.db").exists()


def test_a_yaml_list_as_configuration_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "terrarium.yaml").write_text("- corpus: x.db\n- db: y.db\n")
    done = _terrarium(*run_args(tmp_path / "s.db"), cwd=tmp_path)
    _one_line(done, "terrarium.yaml", "mapping")


def test_no_backend_chosen_is_a_one_line_error(tmp_path: Path) -> None:
    done = _terrarium(*run_args(tmp_path / "s.db", offline=False))
    _one_line(done, "TERRARIUM_AGENT_URL", "--offline")
    assert not (tmp_path / "s.db").exists(), "a store created for nothing is not kept"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_no_room_to_create_the_store_is_one_line_naming_disk_space_and_leaves_nothing(
    sample_db: Path, tmp_path: Path
) -> None:
    """A file size limit (`ulimit -f`, RLIMIT_FSIZE: what a full disk does to a write, for any
    user) stops the run while it creates the store: in the schema's commit, in the first
    bookkeeping writes, in the first scene. Each time: exit 2, one line naming disk space, and no
    file left behind (a store being created is not kept half made)."""
    import resource

    messages = []
    for limit in (4096, 16384, 65536, 131072, 196608, 262144):
        folder = tmp_path / f"limit-{limit}"
        folder.mkdir()

        def limited(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        done = subprocess.run(
            [TERRARIUM, *run_args("s.db", sample_db)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=folder,
            preexec_fn=limited,
        )
        _one_line(done, "not enough disk space", f"file size limit of {limit} bytes")
        assert "nothing was created" in done.stderr
        assert list(folder.iterdir()) == [], (limit, done.stderr)
        messages.append(done.stderr)
    assert any("cannot create annotator store" in message for message in messages)
    assert any("commit failed" in message for message in messages), "a later write failed too"


def test_status_into_a_closed_pipe_ends_quietly(
    offline_sample_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from terrarium_dagster.cli import main

    db = tmp_path / "s.db"
    shutil.copyfile(offline_sample_store, db)
    read_end, write_end = os.pipe()
    os.close(read_end)  # what `| head -1` does once it has its line
    saved = os.dup(1)
    try:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(os.fdopen(write_end, "wb")))
        assert main(["status", "--json", "--db", str(db)]) == 0
    finally:
        os.dup2(saved, 1)
        os.close(saved)
