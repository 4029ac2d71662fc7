"""Lineage: entry -> revisions -> posts (with URLs) -> threads, as text and as JSON."""

from __future__ import annotations

import json

import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import EntryNotFoundError
from terrarium_dagster.exports.lineage import Lineage, lineage, render_lineage_text
from terrarium_dagster.store.annotator import GlossaryStore

pytest_plugins = ["tests.support.glossary_fixtures"]


def test_lineage_follows_entry_to_revisions_posts_and_threads(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    trail = lineage(store, corpus, "ember tithe")
    assert trail.entry.id == ids["tithe"]
    assert trail.entry.merged_from == [ids["embers"]]
    actions = [(r.entry_id, r.action) for r in trail.revisions]
    assert actions == [
        (ids["tithe"], "create"),
        (ids["embers"], "create"),
        (ids["embers"], "merged_into"),
        (ids["tithe"], "merge"),
        (ids["tithe"], "update"),
    ]
    update = trail.revisions[-1]
    assert (update.actor, update.thread_id, update.thread_key, update.run_id) == (
        "agent",
        200,
        corpus.thread(200).key,
        "run-x",
    )
    assert "definition: …Explained by [[Keth'ra|the guide]]. -> …Doubled in the ash fields." in (
        update.changes
    )
    merge = trail.revisions[2]
    assert (merge.actor, merge.reason) == ("curator", "same toll")
    assert "status: tentative -> merged" in merge.changes
    refs = [(s.ref, s.url, s.quote) for s in trail.sources]
    assert refs[0] == ("100#102", "https://quest.example/test/100#102", "The Ember Tithe is due")
    assert [s.ref for s in trail.sources] == ["100#102", "100#103", "100#104", "200#200"]
    assert trail.sources[0].thread_title == "The Ember Road"
    assert [(t.thread_id, t.title, t.sources) for t in trail.threads] == [
        (100, "The Ember Road", 3),
        (200, "Ashfall", 1),
    ]


def test_lineage_finds_entry_by_merged_alias_or_id(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    assert lineage(store, corpus, "Tithe of Embers").entry.id == ids["tithe"]
    assert lineage(store, corpus, f"E{ids['embers']}").entry.id == ids["tithe"]
    assert lineage(store, corpus, str(ids["guard"])).entry.term == "Ashen Guard"


def test_unknown_term_suggests_close_names(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    with pytest.raises(EntryNotFoundError, match=r"did you mean: .*Ashen Guard"):
        lineage(store, corpus, "Ashen Gaurd")


def test_lineage_text_names_revisions_posts_and_threads(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    text = render_lineage_text(lineage(store, corpus, "Tithe of Embers"))
    lines = text.splitlines()
    assert lines[0] == f"E{ids['tithe']} Ember Tithe [tentative]"
    assert "  found by: Tithe of Embers" in lines
    assert "Revisions (5):" in lines
    assert any(
        line.startswith("  #") and f"[E{ids['embers']}] merged_into (by curator" in line
        for line in lines
    )
    assert f"      merged_into: none -> E{ids['tithe']}" in lines
    assert "      why: same toll" in lines
    assert "  >>102 (100#102)  https://quest.example/test/100#102" in lines
    assert "      “The Ember Tithe is due”" in lines
    assert f"  {corpus.thread(100).key} “The Ember Road”: 3 sources, 4 revisions" in lines


def test_lineage_json_round_trips(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    trail = lineage(store, corpus, "Keth'ra")
    data = json.loads(trail.model_dump_json())
    assert data["entry"]["term"] == "Keth'ra"
    assert data["sources"][0]["url"] == "https://quest.example/test/100#104"
    assert Lineage.model_validate(data) == trail


def test_a_quotation_is_put_in_quotes_once() -> None:
    """A Study in Scarlet: a source quoting a line of speech showed ““Gregson…” in `lineage`
    and the wiki; the quoted words' own marks are kept, none added beside them."""
    from terrarium_dagster.corpus.story import in_quotes

    assert in_quotes("Gregson rubbed his hands.") == "“Gregson rubbed his hands.”"
    assert (
        in_quotes("“Gregson, before you permitted this.”")
        == "“Gregson, before you permitted this.”"
    )
    assert in_quotes("“Gregson and Lestrade") == "“Gregson and Lestrade”"
    assert in_quotes('"My dress is blue," said Dorothy') == '“"My dress is blue," said Dorothy”'
