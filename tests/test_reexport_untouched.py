"""An export written again with nothing changed leaves every file and folder as it was.

A newcomer tries every command twice, `terrarium serve` reads the exports while they are written
again, rsync and backups compare mtimes: `terrarium export` run twice, or a thread's
`glossary_export` materialized again in Dagster, must leave each file the same file (its inode and
its mtime), not a new file with the same bytes. Re-materializing a thread once rewrote nearly
every file of its folder: it linked the previous thread's unchanged files and wrote the others
again, never keeping its own.

The sample quest's first three threads, annotated offline once for the module.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.defs.assets import glossary_export, thread_glossary
from terrarium_dagster.defs.partitions import range_tags
from tests.support.cli import run_args

pytest_plugins = ["tests.support.dagster_fixtures"]

Identities = dict[str, tuple[int, int | None]]
"""Every path under a folder (the folder itself as "."), or a file: its inode and, for a file,
its mtime in ns (a folder's mtime moves when a staging folder is made and removed in it)."""


@pytest.fixture(scope="module")
def sample_store(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample quest's first three threads annotated and curated with the offline backend."""
    db = tmp_path_factory.mktemp("reexport") / "store.db"
    assert main(run_args(db, sample_db, threads="..ch3")) == 0
    return db


def identities(root: Path) -> Identities:
    paths = [root, *root.rglob("*")] if root.is_dir() else [root]
    found: Identities = {}
    for path in paths:
        info = path.stat()
        mtime = None if path.is_dir() else info.st_mtime_ns
        found[os.path.relpath(path, root)] = (info.st_ino, mtime)
    return found


def touched(before: Identities, after: Identities) -> list[str]:
    """The paths written again, made or removed between ``before`` and ``after``."""
    return sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )


@pytest.mark.parametrize(
    ("fmt", "out"),
    [
        ("json", "exports"),
        ("yaml", "exports"),
        ("lorebook", "exports"),
        ("wiki", "exports"),
        ("site", "site"),
        ("json", "g.json"),
        ("yaml", "g.yaml"),
    ],
)
def test_exporting_again_with_the_cli_rewrites_no_file(
    sample_store: Path, tmp_path: Path, fmt: str, out: str
) -> None:
    target = tmp_path / out
    command = ["export", "--db", str(sample_store), "--format", fmt, "--out", str(target)]
    assert main(command) == 0
    before = identities(target)
    assert len(before) > 1 or target.is_file()
    assert main(command) == 0
    assert touched(before, identities(target)) == []


def _export(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: Sequence[str]
) -> dg.ExecuteInProcessResult:
    """`glossary_export` over ``keys`` as a re-materialization (or a backfill) launches it."""
    return dg.materialize(
        [thread_glossary],
        selection=[glossary_export],
        instance=instance,
        resources=resources,
        partition_key=keys[0] if len(keys) == 1 else None,
        tags=range_tags(keys[0], keys[-1]) if len(keys) > 1 else None,
    )


def test_materializing_the_export_again_in_dagster_rewrites_no_file(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    store_path: Path,
    sample_store: Path,
) -> None:
    store_path.parent.mkdir(parents=True)
    shutil.copy(sample_store, store_path)
    root = resources["store"].export_root()
    assert _export(instance, resources, keys[:3]).success
    before = identities(root)
    assert sum(name.endswith(".md") for name in before) > 100
    # a thread whose previous thread's folder is there, then the whole range again
    for chosen in (keys[1:2], keys[2:3], keys[:3]):
        assert _export(instance, resources, chosen).success
        assert touched(before, identities(root)) == [], chosen
