"""Incremental exports: the same bytes as a fresh export, at the cost of what changed.

A store annotated offline over a generated quest (a large invented vocabulary, so entries are
created, updated, merged and rejected from thread to thread). One `Exporter` exports the glossary
as of each thread into its own folder, each with the previous thread's folder as its base, as a
Dagster backfill does; every folder must equal, file for file and byte for byte (manifest
included), what a fresh `build_export` (`terrarium export --as-of-thread`) writes.
"""

from __future__ import annotations

import filecmp
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.engine import Engine
from terrarium_dagster.exports import Exporter, build_export
from terrarium_dagster.exports.data import (
    json_document_text,
    json_fragment,
    json_text,
    yaml_document_text,
    yaml_fragment,
    yaml_text,
)
from terrarium_dagster.exports.entry_records import glossary_document
from terrarium_dagster.exports.files import MANIFEST_FILE, read_manifest, staged_directory
from terrarium_dagster.exports.lorebook import (
    lorebook,
    lorebook_entries,
    lorebook_fragment,
    lorebook_text,
)
from terrarium_dagster.testing.synthetic import generate_corpus


def files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def assert_same_export(folder: Path, fresh: Path) -> None:
    names = files(folder)
    assert names == files(fresh)
    _match, mismatch, errors = filecmp.cmpfiles(folder, fresh, names, shallow=False)
    assert not mismatch and not errors, (mismatch[:5], errors[:5])


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = tmp_path_factory.mktemp("incremental")
    corpus = generate_corpus(
        root / "quest.db", threads=8, posts_per_thread=40, seed=3, vocabulary_scale=3
    )
    settings = load_settings(offline=True, corpus=corpus, db=str(root / "store.db"))
    with Engine.open(settings) as opened:
        for thread in opened.threads:
            opened.annotate_thread(thread.id)
            opened.curate_thread(thread.id)
        yield opened


def export_in_sequence(engine: Engine, root: Path, threads: list[Thread]) -> Exporter:
    """As the Dagster step does: one exporter, each thread's folder based on the previous one."""
    exporter = Exporter(engine.store, engine.corpus)
    for thread in threads:
        out_dir = root / thread.key
        previous = root / engine.threads[thread.position - 1].key
        base = previous if thread.position and previous.is_dir() else out_dir
        with staged_directory(out_dir) as staging:
            exporter.export(staging, as_of_thread=thread.id, base=base, final_dir=out_dir)
    return exporter


def test_every_thread_of_a_sequence_equals_a_fresh_export(engine: Engine, tmp_path: Path) -> None:
    export_in_sequence(engine, tmp_path / "exports", engine.threads)
    entries = [len(engine.store.history.glossary_as_of_thread(t.id)) for t in engine.threads]
    assert entries[-1] > entries[0] > 0
    for thread in engine.threads:
        fresh = tmp_path / "fresh" / thread.key
        build_export(engine.store, engine.corpus, fresh, as_of_thread=thread.id)
        assert_same_export(tmp_path / "exports" / thread.key, fresh)


def test_unchanged_files_are_linked_from_the_previous_thread(
    engine: Engine, tmp_path: Path
) -> None:
    root = tmp_path / "exports"
    export_in_sequence(engine, root, engine.threads[-2:])
    before, after = (root / thread.key for thread in engine.threads[-2:])
    shared = [
        name
        for name in files(after)
        if name.startswith("wiki/")
        and (before / name).is_file()
        and filecmp.cmp(before / name, after / name, shallow=False)
    ]
    assert shared, "some wiki page must be the same two threads apart"
    assert all(os.path.samefile(before / name, after / name) for name in shared)
    changed = [name for name in files(after) if name not in shared]
    assert "glossary.json" in changed and "wiki/index.md" in changed
    # The manifest names every file with its hash and size.
    manifest = read_manifest(after)
    assert manifest is not None
    assert set(manifest) == set(files(after)) - {MANIFEST_FILE}
    assert all(size == (after / name).stat().st_size for name, (_, size) in manifest.items())


def test_a_base_file_that_was_changed_is_not_reused(engine: Engine, tmp_path: Path) -> None:
    last, before = engine.threads[-1], engine.threads[-2]
    base = tmp_path / before.key
    build_export(engine.store, engine.corpus, base, as_of_thread=before.id)
    page = next(path for path in sorted((base / "wiki").glob("*.md")) if path.stem != "index")
    page.write_text("edited by hand\n", encoding="utf-8")
    out_dir = tmp_path / last.key
    Exporter(engine.store, engine.corpus).export(out_dir, as_of_thread=last.id, base=base)
    fresh = tmp_path / "fresh"
    build_export(engine.store, engine.corpus, fresh, as_of_thread=last.id)
    assert_same_export(out_dir, fresh)


def test_exporting_again_into_the_same_folder_rewrites_only_what_changed(
    engine: Engine, tmp_path: Path
) -> None:
    first, last = engine.threads[-3], engine.threads[-1]
    out_dir = tmp_path / "export"
    build_export(engine.store, engine.corpus, out_dir, as_of_thread=first.id)
    inodes = {name: (out_dir / name).stat().st_ino for name in files(out_dir)}
    build_export(engine.store, engine.corpus, out_dir, as_of_thread=last.id)
    fresh = tmp_path / "fresh"
    build_export(engine.store, engine.corpus, fresh, as_of_thread=last.id)
    assert_same_export(out_dir, fresh)
    kept = [n for n in files(out_dir) if inodes.get(n) == (out_dir / n).stat().st_ino]
    assert any(name.startswith("wiki/") for name in kept)


def test_the_changes_between_two_threads_rebuild_the_later_glossary(engine: Engine) -> None:
    history = engine.store.history
    states = [engine.store.progress.thread_state(t.id) for t in engine.threads]
    ends = [state.end_revision_id for state in states if state and state.end_revision_id]
    early, late = ends[1], ends[-1]
    for start, end in ((early, late), (late, early)):
        views = {view.id: view for view in history.glossary_as_of(start)}
        changed, gone = history.changes_between(start, end)
        for view in changed:
            if view.deleted:
                views.pop(view.id, None)
            else:
                views[view.id] = view
        for entry_id in gone:
            views.pop(entry_id, None)
        expected = {view.id: view for view in history.glossary_as_of(end)}
        assert views == expected


def test_documents_from_fragments_equal_whole_dumps(engine: Engine) -> None:
    entries = engine.store.history.glossary_as_of_thread(engine.threads[-1].id)
    document = glossary_document(entries, meta={"corpus": "q.db", "revision": 3})
    for records in (document["entries"], document["entries"][:1], []):
        whole = {"meta": document["meta"], "entries": records}
        json_fragments = [json_fragment(record) for record in records]
        assert json_document_text(document["meta"], json_fragments) == json_text(whole)
        assert json.loads(json_text(whole)) == whole
        yaml_fragments = [yaml_fragment(record) for record in records]
        assert yaml_document_text(document["meta"], yaml_fragments) == yaml_text(whole)
        assert yaml.safe_load(yaml_text(whole)) == whole
    for chosen in (entries, entries[:1], []):
        fragments = [lorebook_fragment(uid, e) for uid, e in enumerate(lorebook_entries(chosen))]
        book = lorebook(chosen, name="q", description="d")
        assert json.loads(lorebook_text("q", "d", fragments)) == book
        assert lorebook_text("q", "d", fragments) == (
            json.dumps(book, ensure_ascii=False, indent=2) + "\n"
        )
