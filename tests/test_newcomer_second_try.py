"""What a newcomer trying every command twice trips on with a store built from a real book
(Dubliners, a trimmed 1990s Project Gutenberg text, imported and annotated offline once for the
module): a folder that is not there, a damaged copy looked at, a setting the command never
reads, an export made again.

`terrarium` (its `main` in-process: tests/support/newcomer.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.cli import run_args
from tests.support.newcomer import (
    OPTION,
    QUOTED,
    command_options,
    misaddressed,
    one_line_refusal,
    run_terrarium,
)

pytest_plugins = ["tests.support.newcomer"]

DUBLINERS = Path(__file__).parent / "data" / "books" / "dubliners-1990s.txt"
GOLD = Path(__file__).parent / "data" / "books" / "princess-of-mars-gold.yaml"
PACKAGE = Path(__file__).parents[1] / "terrarium_dagster"


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


def test_a_store_in_a_folder_that_is_not_there_is_refused_and_nothing_is_made(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium run --db nope/dir/g.db` made the missing folders (and `dev` an exports folder
    in them): a mistyped folder is one line naming it, exit 2, nothing made, as `--out` is. The
    default store's folder (`$TERRARIUM_HOME`) and a `TERRARIUM_DB`'s are made on first use."""
    corpus, _ = built
    missing = tmp_path / "nope" / "dir"
    db = str(missing / "g.db")
    commands = [
        run_args(db, corpus),
        [*run_args(db, corpus), "--max-scenes", "1"],
        ["edition", "--offline", "--corpus", str(corpus), "--db", db, "--as-of-thread", "ch1"],
        ["dev", "--offline", "--corpus", str(corpus), "--db", db, "--port", "0"],
    ]
    for command in commands * 2:
        one_line_refusal(run_terrarium(*command), f"--db {db}: no folder {missing}; nothing")
        assert list(tmp_path.iterdir()) == []
    home = tmp_path / "home"
    for _ in range(2):
        done = run_terrarium(
            *run_args(None, corpus), "--max-scenes", "1", env={"TERRARIUM_HOME": str(home)}
        )
        assert done.returncode == 0, done.stderr
        assert (home / "terrarium.db").is_file()
    # a deployment's TERRARIUM_DB (a code location's, `terrarium dev`'s) gets its folder made
    deployed = tmp_path / "deployed" / "stores" / "g.db"
    done = run_terrarium(
        *run_args(None, corpus), "--max-scenes", "1", env={"TERRARIUM_DB": str(deployed)}
    )
    assert done.returncode == 0, done.stderr
    assert deployed.is_file()


def test_a_run_with_no_backend_chosen_makes_nothing(tmp_path: Path) -> None:
    """`terrarium run` with neither --agent-url nor --offline was refused in one line, but only
    once the bundled sample had been built into `$TERRARIUM_HOME/sample`: refused first now."""
    home = tmp_path / "home"
    for command in (
        ["run"],
        ["run", "--db", str(tmp_path / "g.db")],
        ["edition", "--as-of-thread", "ch1"],
    ) * 2:
        one_line_refusal(
            run_terrarium(*command, env={"TERRARIUM_HOME": str(home)}),
            "no model server configured",
            "--offline",
        )
        assert list(tmp_path.iterdir()) == []


def _stamps(folder: Path) -> dict[str, tuple[int, ...]]:
    """Each file's inode, mtime and ctime; each folder's (`folder` too) inode and mtime."""
    stamps: dict[str, tuple[int, ...]] = {
        str(path.relative_to(folder)): (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        for path in folder.rglob("*")
        if path.is_file() and (info := path.stat())
    }
    for path in (folder, *folder.rglob("*")):
        if path.is_dir():
            info = path.stat()
            stamps[f"{path.relative_to(folder)}/"] = (info.st_ino, info.st_mtime_ns)
    return stamps


def test_an_export_made_again_with_nothing_changed_touches_no_file(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium export` the same thing twice kept every file's inode and mtime, but the folder
    formats linked each file into a staging folder and threw it away: every file's ctime
    changed (a backup keyed on ctime copied the whole wiki again). Nothing is touched now, nor
    any folder's mtime: the staging folder made and removed beside the site and the wiki's
    pages had changed their parent's (`make` saw the export folder as new each time)."""
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


def test_every_command_a_message_quotes_takes_the_options_it_names() -> None:
    """Every `terrarium CMD --option ...` the package says (its string constants, f-strings'
    text parts) names a command that takes those options."""
    options = command_options()
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(
                    part.value if isinstance(part, ast.Constant) else "X" for part in node.values
                )
            else:
                continue
            for named, rest in QUOTED.findall(text):
                assert named in options, (path, named)
                wrong += [
                    f"{path.name}: terrarium {named} {flag}"
                    for flag in OPTION.findall(rest)
                    if flag not in options[named]
                ]
    assert wrong == []


def test_a_message_names_only_options_its_command_takes(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium status --db CORPUS` said "give it as --corpus", and status on a store whose
    corpus moved "give --corpus where it is now": status takes no --corpus ("unrecognized").
    Each line now names options of the command it is said by, or quotes the one that takes them."""
    corpus, _ = built
    options = command_options()
    moved = tmp_path / "store.db"  # a store whose corpus is gone
    gone = tmp_path / "gone.db"
    gone.write_bytes(corpus.read_bytes())
    done = run_terrarium(*run_args(moved, gone), "--max-scenes", "1")
    assert done.returncode == 0, done.stderr
    gone.unlink()
    for _ in range(2):
        for command in ("status", "snapshots", "lineage", "score", "recover"):
            extra = {"lineage": ["E1"], "score": ["--gold", str(GOLD)]}.get(command, [])
            if command == "recover":
                extra = ["--out", str(tmp_path / "r.db")]
            line = one_line_refusal(
                run_terrarium(command, "--db", str(corpus), *extra), "is a corpus"
            )
            assert misaddressed(line, command, options) == [], line
        status = run_terrarium("status", "--db", str(moved))
        assert status.returncode == 0, status.stderr
        (said,) = [line for line in status.stdout.splitlines() if "not there any more" in line]
        assert "`terrarium run --corpus`" in said
        assert misaddressed(said, "status", options) == [], said
        for command in ("lineage", "export"):
            extra = ["E1"] if command == "lineage" else ["--format", "json", "--out", "g.json"]
            line = one_line_refusal(
                run_terrarium(command, "--db", str(moved), *extra, cwd=tmp_path),
                "not there any more",
            )
            assert misaddressed(line, command, options) == [], line
    assert not (tmp_path / "r.db").exists() and not (tmp_path / "g.json").exists()


def test_a_thread_the_corpus_lacks_is_named_with_the_option_that_gave_it(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`run --threads ch99` and `snapshots --thread ch99` named their option first, but
    `export` and `edition --as-of-thread ch99` said "no thread 'ch99'" alone."""
    corpus, store = built
    copy = tmp_path / "store" / store.name
    copy.parent.mkdir()
    for file in store.parent.iterdir():  # the store and its sidecars (-calls, -lease)
        if file.is_file() and not file.name.endswith(("-wal", "-shm")):
            (copy.parent / file.name).write_bytes(file.read_bytes())
    before = _folder(tmp_path)
    db = ["--db", str(copy)]
    commands = {
        "--threads": [*run_args(copy, corpus), "--threads", "ch99"],
        "--thread": ["snapshots", *db, "--thread", "ch99"],
        "--as-of-thread": [
            "export",
            *db,
            "--format",
            "json",
            "--out",
            "g.json",
            "--as-of-thread",
            "ch99",
        ],
    }
    commands["--as-of-thread "] = ["edition", "--offline", *db, "--as-of-thread", "ch99"]
    for _ in range(2):
        for option, command in commands.items():
            line = one_line_refusal(run_terrarium(*command, cwd=tmp_path), "'ch99'")
            assert line.startswith(f"terrarium: error: {option.strip()}: "), line
    assert _folder(tmp_path) == before


def test_recover_of_a_good_store_leaves_its_folder_as_it_was(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`terrarium recover` of a sound store copied it, but left `-wal` and `-shm` beside it (the
    store it reads is kept as it is); made again, the same `--out` is refused in one line."""
    _, store = built
    copy = tmp_path / "store" / "g.db"
    copy.parent.mkdir()
    copy.write_bytes(store.read_bytes())
    out = tmp_path / "new"
    out.mkdir()
    for attempt in range(2):
        done = run_terrarium("recover", "--db", str(copy), "--out", str(out / "r.db"))
        if attempt == 0:
            assert done.returncode == 0, done.stderr
            assert "showed no damage and is unchanged" in done.stdout
        else:
            one_line_refusal(done, "exists")
        assert _folder(copy.parent) == ["g.db"]
        assert _folder(out) == ["r.db"]
