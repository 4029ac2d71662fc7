"""The code location loads, and the thread partitions and scene batches work in Dagster."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.definitions import defs
from terrarium_dagster.defs.assets import scene_batches, thread_annotations, thread_glossary
from terrarium_dagster.defs.partitions import (
    PartitionOrderError,
    foreign_keys,
    new_thread_keys,
    threads_partitions,
)
from terrarium_dagster.defs.resources import AgentResource, CorpusResource, StoreResource
from terrarium_dagster.defs.sensors import thread_discovery_sensor


def test_definitions_load_with_assets_sensor_and_resources() -> None:
    loaded = defs()
    repo = loaded.get_repository_def()
    keys = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert "scene_batches" in keys
    assert repo.get_sensor_def("thread_discovery_sensor") is not None
    assert {"corpus", "store"} <= set(loaded.resources or {})


def test_new_thread_keys_appends_only_unknown_keys_in_order() -> None:
    assert new_thread_keys([], ["t00000-1", "t00001-5"]) == ["t00000-1", "t00001-5"]
    assert new_thread_keys(["t00000-1"], ["t00000-1", "t00001-5"]) == ["t00001-5"]
    assert new_thread_keys(["t00000-1", "t00001-5"], ["t00000-1", "t00001-5"]) == []


def test_a_hand_added_partition_never_blocks_discovery() -> None:
    corpus = ["t00000-1", "t00001-5", "t00002-9"]
    assert foreign_keys(["t00000-1", "my-test", "t00001-5"], corpus) == ["my-test"]
    assert new_thread_keys(["t00000-1", "my-test"], corpus) == ["t00001-5", "t00002-9"]
    assert new_thread_keys(["t00007-777"], corpus) == corpus


def test_new_thread_keys_refuses_a_thread_inserted_before_known_ones() -> None:
    with pytest.raises(PartitionOrderError, match="t00001-5"):
        new_thread_keys(["t00000-1", "t00001-5"], ["t00000-1", "t00001-3", "t00002-5"])


def test_discovery_sensor_adds_sample_threads_in_story_order(
    sample_db: Path, tmp_path: Path
) -> None:
    with Corpus(sample_db) as corpus:
        expected = [thread.key for thread in corpus.threads()]
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance,
            resources={
                "corpus": CorpusResource(path=str(sample_db)),
                "store": StoreResource(path=str(tmp_path / "store.db")),  # none yet
            },
        )
        result = thread_discovery_sensor(context)
        assert isinstance(result, dg.SensorResult)
        (request,) = result.dynamic_partitions_requests
        assert list(request.partition_keys) == expected
        instance.add_dynamic_partitions(threads_partitions.name, list(request.partition_keys))
        again = thread_discovery_sensor(context)
        assert isinstance(again, dg.SkipReason)
        assert instance.get_dynamic_partitions(threads_partitions.name) == expected
        assert expected == sorted(expected)


def test_discovery_sensor_skips_with_a_reason_on_a_broken_corpus(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_text("not a database")
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance,
            resources={
                "corpus": CorpusResource(path=str(broken)),
                "store": StoreResource(path=str(tmp_path / "store.db")),
            },
        )
        result = thread_discovery_sensor(context)
    assert isinstance(result, dg.SkipReason)
    assert "corpus unreadable" in (result.skip_message or "")


def _materialized_offline(
    corpus: Path, tmp_path: Path, key: str, selection: list[dg.AssetKey]
) -> list[dg.AssetMaterialization]:
    """`selection` of one thread partition, materialized offline into a store in `tmp_path`."""
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(threads_partitions.name, [key])
        result = dg.materialize(
            [thread_glossary],
            selection=selection,
            partition_key=key,
            instance=instance,
            resources={
                "corpus": CorpusResource(path=str(corpus)),
                "store": StoreResource(path=str(tmp_path / "store.db")),
                "agent": AgentResource(offline=True),
            },
        )
        assert result.success
        return list(result.asset_materializations_for_node("thread_glossary"))


def test_scene_batches_materializes_a_sample_thread_with_metadata(
    sample_db: Path, tmp_path: Path
) -> None:
    with Corpus(sample_db) as corpus:
        thread = corpus.threads()[0]
        scenes = corpus.scenes(thread.id)
    (materialization,) = _materialized_offline(sample_db, tmp_path, thread.key, [scene_batches])
    metadata = materialization.metadata
    assert metadata["scenes"].value == len(scenes) > 0
    assert metadata["thread_id"].value == thread.id
    assert metadata["story_characters"].value > 0
    assert metadata["approx_tokens"].value > 0
    preview = metadata["scene_preview"].value
    assert preview.records[0].data["scene"] == scenes[0].id


def test_a_books_chapter_reads_as_a_book_in_its_materializations(tmp_path: Path) -> None:
    """A novel's materializations counted "posts" and "story_posts", named its scenes "53#58"
    and its sources ">>58": a chapter now counts paragraphs, places each scene and source by
    chapter and paragraph, as the exports and the site do."""
    from terrarium_dagster.cli import main

    book = Path(__file__).parent / "data" / "books" / "princess-of-mars-ch1-10.txt"
    corpus_path = tmp_path / "mars.db"
    assert main(["import", str(book), "--out", str(corpus_path)]) == 0
    with Corpus(corpus_path) as corpus:
        thread = corpus.threads()[0]
    events = _materialized_offline(
        corpus_path, tmp_path, thread.key, [scene_batches, thread_annotations]
    )
    batches, annotations = (
        next(e.metadata for e in events if e.asset_key == key)
        for key in (scene_batches, thread_annotations)
    )
    assert {"chapter", "paragraphs", "story_paragraphs"} <= set(batches)
    assert not {"thread", "posts", "story_posts"} & set(batches)
    first = batches["scene_preview"].value.records[0].data
    assert first["scene"].startswith(f"“{thread.title}”, paragraph ") and first["paragraphs"] > 0
    assert "first_paragraph" in first and "first_post" not in first
    rows = [row.data for row in annotations["touched_entries"].value.records]
    assert rows and all(row["sources"] for row in rows)
    assert all(">>" not in row["sources"] and "paragraph " in row["sources"] for row in rows)
    lineage = annotations["lineage"].value
    assert ">>" not in lineage and ", paragraph " in lineage
