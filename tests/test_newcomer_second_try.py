"""What a newcomer trying every command twice trips on with a store built from a real book
(Dubliners, a trimmed 1990s Project Gutenberg text, imported and annotated offline once for the
module): a folder that is not there, a damaged copy looked at, a setting the command never
reads, an export made again.

`terrarium` (its `main` in-process: tests/support/newcomer.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_args
from tests.support.newcomer import one_line_refusal, run_terrarium

pytest_plugins = ["tests.support.newcomer"]

DUBLINERS = Path(__file__).parent / "data" / "books" / "dubliners-1990s.txt"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The book imported and annotated offline: (corpus, store), each in a folder of its own."""
    folder = tmp_path_factory.mktemp("dubliners")
    corpus, store = folder / "corpus" / "dubliners.db", folder / "store" / "glossary.db"
    corpus.parent.mkdir()
    store.parent.mkdir()
    imported = run_terrarium("import", str(DUBLINERS), "--out", str(corpus))
    assert imported.returncode == 0, imported.stderr
    done = run_terrarium(*run_args(store, corpus))
    assert done.returncode == 0, done.stderr
    return corpus, store


def _folder(path: Path) -> list[str]:
    return sorted(str(item.relative_to(path)) for item in path.rglob("*"))


def test_a_bad_setting_the_command_never_reads_does_not_stop_it(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`TERRARIUM_CONCURRENCY=lots terrarium status` was refused over a setting status never
    reads; `run`, which reads it, is still refused in one line."""
    corpus, store = built
    env = {"TERRARIUM_CONCURRENCY": "lots", "TERRARIUM_MAX_TOKENS": "30000"}
    plain = run_terrarium("status", "--db", str(store))
    assert plain.returncode == 0, plain.stderr
    for _ in range(2):
        status = run_terrarium("status", "--db", str(store), env=env)
        assert (status.returncode, status.stdout, status.stderr) == (0, plain.stdout, "")
    (tmp_path / "terrarium.yaml").write_text("concurrency: lots\n", encoding="utf-8")
    status = run_terrarium("status", "--db", str(store), cwd=tmp_path)
    assert (status.returncode, status.stdout) == (0, plain.stdout)
    before = _folder(store.parent)
    for _ in range(2):
        one_line_refusal(
            run_terrarium(*run_args(store, corpus), env=env),
            "concurrency (TERRARIUM_CONCURRENCY)",
            "max_tokens (TERRARIUM_MAX_TOKENS): must be under half the context budget (32768)",
        )
        one_line_refusal(
            run_terrarium(*run_args(store, corpus), cwd=tmp_path), "concurrency (in ", "'lots'"
        )
    assert _folder(store.parent) == before


def test_status_of_a_damaged_copy_leaves_its_folder_as_it_was(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium status` on a damaged copy refused it in one line but left `-wal` and `-shm`
    beside it: a read-only look leaves the folder as it was, whatever page is damaged."""
    _, store = built
    size = store.stat().st_size
    for offset in (100, 4096 * 2, size // 2, size - 4096):
        copy = tmp_path / str(offset) / "copy.db"
        copy.parent.mkdir()
        damaged = bytearray(store.read_bytes())
        damaged[offset : offset + 3000] = b"Z" * 3000
        copy.write_bytes(bytes(damaged))
        for command in (["status"], ["lineage", "E1"], ["snapshots"], ["status"]):
            one_line_refusal(
                run_terrarium(*command, "--db", str(copy)), f"annotator store {copy} is damaged"
            )
            assert _folder(copy.parent) == ["copy.db"], (offset, command)


def test_an_out_in_a_folder_that_is_not_there_is_refused_and_nothing_is_made(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium import book.txt --out /nonexistent/dir/x.db` made the missing folders: a
    mistyped folder is one line naming it, exit 2, nothing made (import, export, recover)."""
    _, store = built
    missing = tmp_path / "nonexistent" / "dir"
    commands = [
        ["import", str(DUBLINERS), "--out", str(missing / "x.db")],
        ["export", "--db", str(store), "--format", "json", "--out", str(missing / "g.json")],
        ["export", "--db", str(store), "--format", "site", "--out", str(missing / "site")],
        ["recover", "--db", str(store), "--out", str(missing / "r.db")],
    ]
    for command in commands * 2:
        one_line_refusal(run_terrarium(*command), f"no folder {missing}; nothing was written")
        assert list(tmp_path.iterdir()) == []
    # the folder --out names itself is made, in a folder that exists
    site = run_terrarium("export", "--db", str(store), "--format", "site", "--out", str(missing))
    assert site.returncode == 2 and list(tmp_path.iterdir()) == []
    made = run_terrarium("recover", "--db", str(store), "--out", f"{tmp_path / 'new'}/")
    assert made.returncode == 0, made.stderr
    assert _folder(tmp_path) == ["new", "new/glossary-recovered.db"]


def _stamps(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(path.relative_to(folder)): (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        for path in folder.rglob("*")
        if path.is_file() and (info := path.stat())
    }


def test_an_export_made_again_with_nothing_changed_touches_no_file(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium export` the same thing twice kept every file's inode and mtime, but the folder
    formats linked each file into a staging folder and threw it away: every file's ctime
    changed (a backup keyed on ctime copied the whole wiki again). Nothing is touched now."""
    _, store = built
    exports = [
        ("json", "glossary.json"),
        ("yaml", "glossary.yaml"),
        ("lorebook", "world.json"),
        ("json", "folder"),
        ("wiki", "wiki"),
        ("site", "site"),
    ]
    for fmt, out in exports:
        done = run_terrarium(
            "export", "--db", str(store), "--format", fmt, "--out", out, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
    first = _stamps(tmp_path)
    assert any(name.startswith("wiki/wiki/html/") for name in first)
    for _ in range(2):
        for fmt, out in exports:
            again = run_terrarium(
                "export", "--db", str(store), "--format", fmt, "--out", out, cwd=tmp_path
            )
            assert again.returncode == 0, again.stderr
        assert _stamps(tmp_path) == first
