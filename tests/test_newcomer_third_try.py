"""What a newcomer trying every command twice from a fresh folder tripped on the third time: a
corpus given as the store, a side file named by TERRARIUM_DB, an export folder named like a
store's side file.

`terrarium` (its `main` in-process: tests/support/newcomer.py) on the bundled sample.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import digest, store_copy
from tests.support.newcomer import (
    SIDE_FILES,
    command_options,
    db_commands,
    folder_digests,
    misaddressed,
    one_line_refusal,
    run_terrarium,
)


def _store_commands(out: Path) -> dict[str, list[str]]:
    """Every command that reads or writes a store (recover aside: it says a corpus needs no
    recovering), with what else it needs to get that far."""
    return {name: extra for name, extra in db_commands(out).items() if name != "recover"}


def test_a_corpus_given_as_the_store_is_named_a_corpus_and_how_to_give_it(
    sample_db: Path, tmp_path: Path
) -> None:
    """`terrarium status --db corpus.db` (the bundled sample, or what `terrarium import` made)
    said it was a corpus, then "give --db the store's file (... a new --db name makes a new
    store)": no help to a reader, for which a new name makes nothing, and nothing on how to
    give the corpus. Every command says in one line that it is a corpus, not an annotator
    store, and how to give it: as --corpus where the command takes it, else through the run
    that makes its store; each naming only options of the command it quotes, nothing written,
    the second time as the first; TERRARIUM_DB set to it is named as such."""
    corpus = tmp_path / "corpus.db"
    shutil.copyfile(sample_db, corpus)
    before = digest(corpus)
    options = command_options()
    for _ in range(2):
        for command, extra in _store_commands(tmp_path).items():
            line = one_line_refusal(
                run_terrarium(command, "--db", str(corpus), *extra, cwd=tmp_path),
                f"{corpus} is a corpus, not an annotator store; nothing was written",
            )
            assert misaddressed(line, command, options) == [], line
            if "--corpus" in options[command]:
                assert f"give it as --corpus {corpus}, and --db " in line, line
            else:
                assert f"give --db the store `terrarium run --corpus {corpus}` made" in line
            assert "a new file for its store" in line or command not in ("run", "dev"), line
            assert sorted(path.name for path in tmp_path.iterdir()) == [corpus.name], command
            assert digest(corpus) == before, command
        env = {"TERRARIUM_DB": str(corpus)}
        for command in ("status", "run"):
            line = one_line_refusal(
                run_terrarium(command, *_store_commands(tmp_path)[command], env=env, cwd=tmp_path),
                f"{corpus} is a corpus, not an annotator store",
                "set TERRARIUM_DB to ",
            )
            assert "--db" not in line, line
        assert sorted(path.name for path in tmp_path.iterdir()) == [corpus.name]


def test_terrarium_db_naming_a_side_file_is_named_as_the_variable(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`TERRARIUM_DB=store.db-wal terrarium status` said "--db store.db-wal names the write-ahead
    log beside store.db ...; give --db store.db": no --db was given. Every command says the
    variable (or the configuration file) that named the side file, and to set it to the store,
    in one line, nothing written, the second time as the first."""
    store = store_copy(offline_bundled_store, tmp_path)
    before = folder_digests(tmp_path)
    for _ in range(2):
        for suffix, kind in SIDE_FILES.items():
            side = f"{store}{suffix}"
            for command, extra in _store_commands(tmp_path).items():
                line = one_line_refusal(
                    run_terrarium(command, *extra, env={"TERRARIUM_DB": side}, cwd=tmp_path),
                    f"TERRARIUM_DB ({side}) names the {kind} beside {store}",
                    f"nothing was written; set TERRARIUM_DB to {store}",
                )
                assert "--db" not in line, (command, line)
                assert folder_digests(tmp_path) == before, (command, suffix)
    config = tmp_path / "terrarium.yaml"
    config.write_text(f"db: {store}-calls\n", encoding="utf-8")
    one_line_refusal(
        run_terrarium("status", cwd=tmp_path),
        f"{config}'s db ({store}-calls) names the call ledger beside {store}",
        f"set {config}'s db to {store}",
    )
    line = one_line_refusal(
        run_terrarium("status", "--db", f"{store}-calls", cwd=tmp_path),
        f"--db {store}-calls names the call ledger",
    )
    assert line.endswith(f"give --db {store}"), line


def test_an_export_folder_named_like_a_side_file_of_a_store_is_refused(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`terrarium export --format wiki --out store.db-lease` (json or yaml into a folder too;
    site) wrote its folder there, named like the store's writer's lease, and the next `run` of
    that store failed with "disk I/O error". Refused in one line by the one rule of the side
    files, nothing written, the second time as the first."""
    store = store_copy(offline_bundled_store, tmp_path)
    other = tmp_path / "other.db"  # a file beside, not the store exported: its side files too
    other.write_bytes(store.read_bytes())
    before = folder_digests(tmp_path)
    for _ in range(2):
        for stem in (store, other):
            for suffix, kind in SIDE_FILES.items():
                for format_name in ("wiki", "site", "json", "yaml", "lorebook"):
                    out = f"{stem}{suffix}"
                    one_line_refusal(
                        run_terrarium(
                            "export", "--db", str(store), "--format", format_name, "--out", out
                        ),
                        f"--out {out} names the {kind} beside {stem}",
                        "nothing was written; give --out another name",
                    )
                    assert folder_digests(tmp_path) == before, (format_name, out)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_dev_stopped_by_a_signal_says_so_in_one_line(
    stop: signal.Signals, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`terrarium dev` stopped by Ctrl-C or SIGTERM exited 0 with nothing said (`serve` says
    "stopped serving (SIGTERM)"). It says one line naming the signal, after `dagster dev` and
    the site server have stopped, exit 0. `dagster dev` itself is a sleeping child here (a real
    one takes 17 s to start on two busy cores and prints its own traceback when stopped while
    it imports): the signal arrives once dev waits on it, as a user's Ctrl-C does."""
    real_popen = subprocess.Popen

    def sleeping_dagster(command: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        assert command[1:4] == ["-m", "dagster", "dev"], command
        sleeper = (
            "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(60)"
        )
        child = real_popen([sys.executable, "-c", sleeper], **kwargs)  # type: ignore[call-overload]
        os.kill(os.getpid(), stop)  # handled by dev's handler, in this (the main) thread
        return child

    monkeypatch.setattr(subprocess, "Popen", sleeping_dagster)
    home = tmp_path / "dagster"
    home.mkdir()
    shutil.copyfile(Path(__file__).parents[1] / "dagster.yaml", home / "dagster.yaml")
    site = f"http://127.0.0.1:{_free_port()}"
    store = tmp_path / "store.db"
    before = signal.getsignal(stop)
    done = run_terrarium(
        "dev", "--offline", "--db", str(store), "--port", "0", "--site-url", site,
        env={"DAGSTER_HOME": str(home)},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done
    assert done.stdout.splitlines()[-1] == (
        f"stopped the Dagster UI and the reader's site ({stop.name})"
    )
    assert signal.getsignal(stop) is before


def test_serve_exports_dir_named_like_a_side_file_of_a_store_is_refused(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`terrarium serve --db store.db --exports-dir store.db-lease` served, and left a folder
    named like the store's writer's lease, in the way of the next run. Refused in one line by
    the one rule of the side files, nothing made, the second time as the first."""
    store = store_copy(offline_bundled_store, tmp_path)
    before = folder_digests(tmp_path)
    for _ in range(2):
        for suffix, kind in SIDE_FILES.items():
            exports = f"{store}{suffix}"
            one_line_refusal(
                run_terrarium("serve", "--db", str(store), "--exports-dir", exports, "--port", "0"),
                f"--exports-dir {exports} names the {kind} beside {store}",
                "nothing was written; give --exports-dir another name",
            )
            assert folder_digests(tmp_path) == before, suffix


def test_a_store_given_as_the_corpus_is_refused_leaving_no_wal_file(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`terrarium run --offline --corpus store.db --db new.db` (the store given as the corpus)
    was refused in one line, and left `store.db-wal` and `store.db-shm` beside the store: the
    corpus reader's read-only opening of a file in WAL mode made them and could not remove
    them. Every command given it as --corpus leaves the folder as it was, twice."""
    store = store_copy(offline_bundled_store, tmp_path)
    before = folder_digests(tmp_path)
    new = tmp_path / "new.db"
    commands = [
        ["run", "--offline", "--db", str(new)],
        ["edition", "--offline", "--db", str(store), "--as-of-thread", "ch1"],
        ["why", "E1", "--offline", "--db", str(store)],
        ["export", "--db", str(store), "--format", "json", "--out", str(tmp_path / "g.json")],
        ["lineage", "E1", "--db", str(store)],
    ]
    for _ in range(2):
        for command in commands:
            one_line_refusal(
                run_terrarium(*command, "--corpus", str(store), cwd=tmp_path),
                f"{store} is an annotator store, not a corpus",
            )
            assert folder_digests(tmp_path) == before, command


def test_export_to_a_dash_is_refused_not_a_folder_named_dash(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`terrarium export --format json --out -` (standard output, as other tools take it) wrote
    a folder named "-" holding glossary.json, exit 0. Every format refuses it in one line with
    a path to give instead, nothing written."""
    store = store_copy(offline_bundled_store, tmp_path)
    before = folder_digests(tmp_path)
    examples = {"json": "glossary.json", "yaml": "glossary.yaml", "lorebook": "world.json"}
    for _ in range(2):
        for format_name in ("json", "yaml", "lorebook", "wiki", "site"):
            one_line_refusal(
                run_terrarium(
                    "export", "--db", str(store), "--format", format_name, "--out", "-",
                    cwd=tmp_path,
                ),
                "--out -: export writes a file or a folder, not standard output",
                f"(e.g. --out {examples.get(format_name, format_name)})",
            )  # fmt: skip
            assert folder_digests(tmp_path) == before, format_name
