"""`terrarium export --out`: a file for json, yaml and lorebook, a folder for wiki and site; the
same command twice gives the same result, and the line it prints counts what the file holds.

A real book (a trimmed Project Gutenberg text) is imported and annotated offline by `terrarium`
(its main in-process), then exported as a newcomer would, each command twice.
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import partial
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run_args, terrarium_main

MARS = Path(__file__).parent / "data" / "books" / "princess-of-mars-ch1-10.txt"

_terrarium = partial(terrarium_main, clean=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export")
    corpus, db = folder / "corpus.db", folder / "store.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    done = _terrarium(*run_args(db, corpus, max_scenes=25))
    assert done.returncode == 0, done.stderr
    return db


def _export(store: Path, fmt: str, out: Path) -> subprocess.CompletedProcess[str]:
    return _terrarium("export", "--db", str(store), "--format", fmt, "--out", str(out))


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(("fmt", "name"), [("json", "g.json"), ("yaml", "g.yaml")])
def test_json_and_yaml_write_the_file_again_and_again_counting_what_it_holds(
    store: Path, tmp_path: Path, fmt: str, name: str
) -> None:
    out = tmp_path / name
    lines, contents = [], []
    for _ in range(2):
        done = _export(store, fmt, out)
        assert done.returncode == 0, done.stderr
        lines.append(done.stdout.strip())
        contents.append(out.read_bytes())
    assert lines[0] == lines[1] and contents[0] == contents[1]
    assert [path.name for path in tmp_path.iterdir()] == [name]  # the file, and nothing else
    text = out.read_text(encoding="utf-8")
    document = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    held = document["entries"]
    match = re.fullmatch(
        r"exported (\d+) entries(?: \((\d+) in the glossary, (.*)\))? to (.+)", lines[0]
    )
    assert match, lines[0]
    assert int(match.group(1)) == len(held) == document["meta"]["entry_count"]
    assert match.group(4) == str(out)
    live = [e for e in held if e["status"] not in ("rejected", "merged")]
    if match.group(2):  # the line says how many of them are rejected or merged away
        assert int(match.group(2)) == len(live)
        others = dict(
            (what, int(count))
            for count, what in re.findall(r"(\d+) (rejected|merged away)", match.group(3))
        )
        assert sum(others.values()) == len(held) - len(live)
    else:
        assert len(live) == len(held)


def test_the_lorebook_is_the_file_named(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "lore.json"
    for _ in range(2):
        done = _export(store, "lorebook", out)
        assert done.returncode == 0, done.stderr
    assert out.is_file() and [path.name for path in tmp_path.iterdir()] == ["lore.json"]
    book = json.loads(out.read_text(encoding="utf-8"))
    count = int(re.match(r"wrote (\d+) lorebook entr", done.stdout).group(1))
    assert count == len(book["entries"]) > 0


@pytest.mark.parametrize("fmt", ["wiki", "site"])
def test_wiki_and_site_are_folders_written_again(store: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / fmt
    for _ in range(2):
        done = _export(store, fmt, out)
        assert done.returncode == 0, done.stderr
    assert out.is_dir()
    pages = list(out.rglob("*.md" if fmt == "wiki" else "*.html"))
    assert pages
    _one_line(_export(store, fmt, tmp_path / f"{fmt}.md"), "writes a folder")
    assert not (tmp_path / f"{fmt}.md").exists()


def test_an_out_without_the_formats_extension_is_a_folder_and_its_file_goes_in_it(
    store: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    for _ in range(2):  # and again: replaced
        for fmt in ("json", "yaml"):
            done = _export(store, fmt, folder)
            assert done.returncode == 0, done.stderr
            name = f"glossary.{fmt}"
            assert done.stdout.strip().endswith(str(folder / name)), done.stdout
        assert _export(store, "lorebook", folder).returncode == 0
    assert sorted(path.suffix for path in folder.iterdir()) == [".json", ".json", ".yaml"]


def test_an_out_with_another_formats_extension_is_one_line(store: Path, tmp_path: Path) -> None:
    _one_line(_export(store, "yaml", tmp_path / "g.json"), "give a path ending in .yaml")
    _one_line(_export(store, "lorebook", tmp_path / "lore.yaml"), "give a path ending in .json")
    named = tmp_path / "odd.json"
    named.mkdir()
    _one_line(_export(store, "json", named), "is a folder")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["odd.json"]
    assert not any(named.iterdir())


def test_as_of_a_chapter_not_finished_names_the_chapter_and_what_to_do(tmp_path: Path) -> None:
    """`export --as-of-thread ch2` of a book whose second chapter was still being annotated said
    'thread t00001-35 has not finished annotation (annotating); there is no glossary as of its
    end to export': the chapter by its number, as `status` lists it, and how to go on."""
    corpus, db = tmp_path / "corpus.db", tmp_path / "store.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    assert _terrarium(*run_args(db, corpus, max_scenes=1)).returncode == 0
    status = json.loads(_terrarium("status", "--db", str(db), "--json").stdout)
    first = status["threads"][0]
    assert first["status"] != "curated", first
    out = tmp_path / "out"
    out.mkdir()  # --out's folder must exist (the folder --out names is made)
    for fmt, name in (("json", "g.json"), ("wiki", "wiki"), ("json", "g.json")):
        done = _terrarium(
            "export", "--db", str(db), "--format", fmt, "--out", str(out / name),
            "--as-of-thread", "ch1",
        )  # fmt: skip
        _one_line(
            done,
            f"chapter 1 ({first['key']}) has not finished annotation",
            "finish it with `terrarium run`, or give an earlier --as-of-thread",
        )
    assert list(out.iterdir()) == []


def test_export_help_says_what_out_is() -> None:
    done = _terrarium("export", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for words in ("the format's extension is that file", "anything else is a folder", "site"):
        assert words in text, words
