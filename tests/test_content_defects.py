"""What a reader reads is right: each defect of issue 19's item 6, fixed where it is made.

- A definition never repeats its term (the offline describer writes `Lead; fact; company.`; the
  wiki's index line was "Ambrose Quill — Ambrose Quill — a character").
- An entry never lists one of its own names as company ("appears with Rook" on the entry that
  Rook was merged into): a merge drops the merged names from the target's links, and the
  describer never lists the entry's term or aliases.
- A curator's "Recorded from N posts (…)" lists as many posts as it counts, or says how many
  more (the count was of posts, the list of three).
- A merge never gives its target the same post twice among its sources.
- Every report of an export counts the entries the wiki lists (Dagster said 27, the wiki 26).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.exports import build_export
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ProvenanceIn
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.wiki_links import without_links_to
from tests.support.cli import store_copy

LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]")
COMPANY = re.compile(r"appears with ([^;.]*)")


@pytest.fixture(scope="module")
def store(offline_bundled_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample annotated offline (`terrarium run --offline`: the session's, copied)."""
    return store_copy(offline_bundled_store, tmp_path_factory.mktemp("content"))


def _export(store: Path, out: Path, key: str) -> list[str]:
    """The wiki as of thread `key`: its index's lines."""
    command = ["export", "--format", "wiki", "--db", str(store), "--out", str(out)]
    assert main([*command, "--as-of-thread", key]) == 0
    return (out / "wiki" / "index.md").read_text(encoding="utf-8").splitlines()


def test_no_definition_repeats_its_term_in_any_line_a_reader_reads(
    store: Path, tmp_path: Path, sample_db: Path
) -> None:
    with Corpus(sample_db) as corpus:
        keys = [thread.key for thread in corpus.threads()]
    lines = _export(store, tmp_path / "first", keys[0])
    items = [re.match(r"- \[([^\]]+)\]\([^)]+\)(?: \*\([^)]*\)\*)? — (.*)", line) for line in lines]
    items = [match for match in items if match]
    assert items, "the index lists entries with their definitions"
    for match in items:
        term, rest = match.groups()
        assert not rest.startswith(f"{term} — "), match.group(0)
    with GlossaryStore(store, read_only=True) as glossary:
        for entry in glossary.glossary.entries():
            assert not entry.definition.startswith(f"{entry.term} — "), entry.definition


def test_no_entry_lists_its_own_names_as_company(store: Path, sample_db: Path) -> None:
    with GlossaryStore(store, read_only=True) as glossary:
        history = glossary.history
        for entry in glossary.glossary.entries():
            if entry.deleted or entry.status in ("merged", "rejected"):
                continue
            own = {normalize_term(name) for name in (entry.term, *entry.aliases)}
            company = COMPANY.search(entry.definition)
            listed = LINK.findall(company.group(1)) if company else []
            assert not own & {normalize_term(name) for name in listed}, (
                entry.term,
                entry.aliases,
                entry.definition,
            )
        assert history.last_revision_id() > 0


def test_a_merge_drops_the_merged_names_from_the_targets_links_and_cites_a_post_once(
    tmp_path: Path,
) -> None:
    assert without_links_to("A captain; appears with [[Rook]].", ["Rook"]) == "A captain."
    assert (
        without_links_to("A captain; appears with [[Quill]], [[Rook]], [[Hask]].", ["rook"])
        == "A captain; appears with [[Quill]], [[Hask]]."
    )
    assert without_links_to("Rides with [[Rook]] at dawn.", ["Rook"]) == "Rides with Rook at dawn."
    actor = Actor(kind="agent", run_id="r1", thread_id=100)
    with GlossaryStore(tmp_path / "store.db") as glossary:
        target = glossary.glossary.create_entry(
            actor,
            "Captain Rook",
            "A captain; appears with [[Rook]], [[Quill]].",
            provenance=[ProvenanceIn(post_id=101, thread_id=100, quote="Captain Rook waits.")],
        )
        source = glossary.glossary.create_entry(
            actor,
            "Rook",
            "A name in the story.",
            provenance=[
                ProvenanceIn(post_id=101, thread_id=100, quote="Rook draws."),
                ProvenanceIn(post_id=102, thread_id=100, quote="Rook nods."),
            ],
        )
        curator = Actor(kind="curator", run_id="r1", thread_id=100)
        merged = glossary.glossary.merge_entries(curator, source.id, target.id, "short name")
        assert merged.definition == "A captain; appears with [[Quill]]."
        posts = [item.post_id for item in glossary.provenance.for_entry(target.id)]
        assert sorted(posts) == [101, 102], "each post once"
        merge = glossary.history.revisions(target.id)[-1]
        assert merge.old_value and "[[Rook]]" in merge.old_value["definition"], "kept in history"


def test_curator_reasoning_counts_what_it_lists(store: Path) -> None:
    with GlossaryStore(store, read_only=True) as glossary:
        reasons = [
            decision["reasoning"]
            for decision in glossary.curation.curator_decisions()
            if (decision["reasoning"] or "").startswith("Recorded from ")
        ]
    assert reasons, "the sample's curation confirms entries from their sources"
    for reason in reasons:
        match = re.match(r"Recorded from (\d+) posts \((.*?)(?: and (\d+) more)?\)\.$", reason)
        assert match, reason
        listed = len(re.findall(r">>\d+", match.group(2)))
        assert listed + int(match.group(3) or 0) == int(match.group(1)), reason


def test_every_export_report_counts_the_entries_the_wiki_lists(
    store: Path, tmp_path: Path, sample_db: Path
) -> None:
    with (
        Corpus(sample_db) as corpus,
        GlossaryStore(store, read_only=True) as glossary,
    ):
        for thread in corpus.threads():
            out = tmp_path / thread.key
            report = build_export(glossary, corpus, out, as_of_thread=thread.id)
            index = (out / "wiki" / "index.md").read_text(encoding="utf-8")
            said = re.search(r"^(\d+) entr(?:y|ies)\.$", index, re.MULTILINE)
            assert said and int(said.group(1)) == report.entries, (thread.key, report.entries)
