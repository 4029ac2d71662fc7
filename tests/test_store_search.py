"""Annotator store: term normalization, FTS5 query sanitizing, search ranking and FTS sync."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.store import (
    Actor,
    GlossaryStore,
    fts_query,
    normalize_term,
    normalize_text,
    term_variants,
)

AGENT = Actor("agent", run_id="run-1", thread_id=100, scene_id="100#101")

HOSTILE = [
    "Keth'ra",
    "Keth’ra",
    "ember-tithe",
    "a:b",
    "col:term",
    "term:ember",
    '"unbalanced',
    'say "hi',
    "AND",
    "OR NOT NEAR",
    "NEAR(ember tithe, 2)",
    "*",
    "ember*",
    "^foo",
    "(",
    ")",
    "((ember OR",
    "🔥🔥",
    "🔥 ember 🔥",
    "'; DROP TABLE entry; --",
    "x' OR '1'='1",
    "Robert'); DELETE FROM revision; --",
    "\x00\x01\x02",
    "   ",
    "",
    "-ember +tithe",
    "ember AND -",
    "{term definition}: ember",
    "NOT",
    "Ember–Tithe",
    "Ｋｅｔｈ",
    "ключ",
    "火の税",
    "x" * 5000,
    "".join(chr(c) for c in range(32, 127)) * 110,  # ~10 KB of every ASCII symbol
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "terrarium.db") as opened:
        yield opened


@pytest.fixture
def glossary(store: GlossaryStore) -> GlossaryStore:
    store.glossary.create_entry(
        AGENT, "Keth'ra", "A witch of the red hill who collects the [[Ember-Tithe]]."
    )
    store.glossary.create_entry(AGENT, "Ember-Tithe", "A tax paid in embers.", aliases=["ash tax"])
    store.glossary.create_entry(
        AGENT, "Vorn", "A river town where the ember tithe is paid, ember by ember."
    )
    store.glossary.create_entry(AGENT, "Red Hill", "A hill. Nobody knows why it is red.")
    return store


def assert_fts_in_sync(store: GlossaryStore) -> None:
    """Every entry has exactly one FTS row holding its current term, aliases and definition."""
    indexed = {
        row[0]: (row[1], row[2], row[3])
        for row in store.conn.execute("SELECT rowid, term, aliases, definition FROM entry_fts")
    }
    expected = {
        entry.id: (entry.term, " ; ".join(entry.aliases), entry.definition)
        for entry in store.glossary.entries(include_deleted=True)
    }
    assert indexed == expected
    store.conn.execute("INSERT INTO entry_fts (entry_fts) VALUES ('integrity-check')")


# ----------------------------------------------------------------------------- normalization
@pytest.mark.parametrize(
    "variant",
    [
        "ember-tithe",
        "ember tithe",
        "Ember–Tithe",
        "EMBER—TITHE",
        "“The Ember-Tithe”",
        " ember\ttithe! ",
    ],
)
def test_spelling_variants_normalize_equal(variant: str):
    assert normalize_term(variant) == "ember tithe"


def test_apostrophes_are_unified_and_kept_inside_names():
    assert normalize_term("Keth’ra") == normalize_term("Keth'ra") == "keth'ra"
    assert normalize_term("'Keth'ra'") == "keth'ra"


def test_normalize_keeps_meaningful_symbols_and_lone_the():
    assert normalize_term("C#") == "c#"
    assert normalize_term("C++") == "c++"
    assert normalize_term("The") == "the"
    assert normalize_term("Theodric") == "theodric"
    assert normalize_term("?!...") == ""
    assert normalize_term("Ｋｅｔｈ") == "keth"


def test_normalize_text_and_variants_for_mention_matching():
    assert normalize_text("Keth’ra's coven — the Ember-Tithe!") == "keth'ra coven the ember tithe"
    assert term_variants("The Ember-Tithe") == [
        "The Ember-Tithe",
        "The Ember Tithe",
        "The-Ember-Tithe",
        "Ember-Tithe",
        "Ember Tithe",
    ]


# ------------------------------------------------------------------------------- fts_query
def test_fts_query_quotes_every_word_and_joins_with_or():
    assert fts_query("Keth'ra") == '"Keth\'ra"'
    assert fts_query("ember-tithe tax") == '"ember-tithe" OR "tax"'
    assert fts_query("a:b") == '"a" OR "b"'
    assert fts_query("OR NOT NEAR") == '"OR" OR "NOT" OR "NEAR"'
    assert fts_query("Emb", prefix_last=True) == '"Emb" *'
    assert fts_query("ember ember EMBER") == '"ember"'


@pytest.mark.parametrize("text", ["", "   ", "*", "(", "^", '"', "🔥🔥", "-- ; '"])
def test_fts_query_is_none_when_nothing_searchable_remains(text: str):
    assert fts_query(text) is None


def test_fts_query_caps_the_number_of_words():
    words = " ".join(f"w{number}" for number in range(500))
    assert fts_query(words).count(" OR ") == 31  # type: ignore[union-attr]


@pytest.mark.parametrize("text", HOSTILE)
def test_fts_query_output_is_valid_fts5_syntax(text: str):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (a, b)")
    conn.execute("INSERT INTO t VALUES ('ember tithe', 'keth ra')")
    expression = fts_query(text, prefix_last=True)
    if expression is not None:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    conn.close()


# ----------------------------------------------------------------------------------- search
@pytest.mark.parametrize("text", HOSTILE)
def test_search_accepts_any_string(glossary: GlossaryStore, text: str):
    hits = glossary.glossary.search(text)
    assert isinstance(hits, list)
    assert len(glossary.glossary.entries()) == 4
    assert glossary.conn.execute("SELECT COUNT(*) FROM revision").fetchone()[0] == 4


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Keth'ra", "Keth'ra"),
        ("Keth’ra", "Keth'ra"),
        ("keth", "Keth'ra"),
        ("ember-tithe", "Ember-Tithe"),
        ("Ember–Tithe", "Ember-Tithe"),
        ("the ember tithe", "Ember-Tithe"),
        ("ASH TAX", "Ember-Tithe"),
        ("vorn:", "Vorn"),
        ('"Red Hill', "Red Hill"),
        ("Emb", "Ember-Tithe"),
    ],
)
def test_search_puts_the_sensible_entry_first(glossary: GlossaryStore, query: str, expected: str):
    hits = glossary.glossary.search(query)
    assert hits and hits[0].entry.term == expected


def test_exact_term_beats_entries_that_repeat_the_word(store: GlossaryStore):
    for number in range(5):
        store.glossary.create_entry(AGENT, f"Place {number}", "ember " * 20 + "tithe " * 20)
    store.glossary.create_entry(AGENT, "Ember-Tithe", "A tax.")
    hits = store.glossary.search("ember tithe")
    assert hits[0].entry.term == "Ember-Tithe"
    assert hits[0].exact and not any(hit.exact for hit in hits[1:])
    assert len(hits) == 6
    scores = [hit.score for hit in hits[1:]]
    assert scores == sorted(scores, reverse=True)


def test_search_respects_limit(glossary: GlossaryStore):
    assert len(glossary.glossary.search("ember", limit=2)) == 2
    assert glossary.glossary.search("ember", limit=0) == []


def test_search_excludes_deleted_and_merged_unless_asked(glossary: GlossaryStore):
    vorn = glossary.glossary.find_by_term("Vorn")
    hill = glossary.glossary.find_by_term("Red Hill")
    witch = glossary.glossary.find_by_term("Keth'ra")
    assert vorn and hill and witch
    glossary.glossary.delete_entry(AGENT, vorn.id, "not a term")
    glossary.glossary.merge_entries(AGENT, hill.id, witch.id, "the hill is the witch")
    assert [h.entry.term for h in glossary.glossary.search("Vorn")] == []
    assert [h.entry.term for h in glossary.glossary.search("red hill")] == ["Keth'ra"]
    everything = {
        h.entry.term for h in glossary.glossary.search("Vorn red hill", include_deleted=True)
    }
    assert {"Vorn", "Red Hill", "Keth'ra"} <= everything


def test_fts_follows_updates_aliases_deletes_merges_and_rollbacks(glossary: GlossaryStore):
    tithe = glossary.glossary.find_by_term("ember tithe")
    vorn = glossary.glossary.find_by_term("vorn")
    assert tithe and vorn
    boundary = glossary.history.last_revision_id()
    glossary.glossary.update_entry(
        AGENT, tithe.id, term="Cinder Levy", definition="A levy of cinders."
    )
    assert glossary.glossary.search("cinder")[0].entry.id == tithe.id
    assert all(hit.entry.id != tithe.id for hit in glossary.glossary.search("embers"))
    glossary.glossary.update_entry(
        AGENT, tithe.id, add_aliases=["coal due"], remove_aliases=["ash tax"]
    )
    assert glossary.glossary.search("coal")[0].entry.id == tithe.id
    assert glossary.glossary.search("ash tax") == []
    glossary.glossary.merge_entries(AGENT, vorn.id, tithe.id, "test")
    assert glossary.glossary.search("vorn")[0].entry.id == tithe.id
    assert_fts_in_sync(glossary)
    glossary.rollback.rollback_to_revision(Actor("rollback"), boundary, "undo the test")
    assert glossary.glossary.search("ash tax")[0].entry.id == tithe.id
    assert glossary.glossary.search("cinder") == []
    assert glossary.glossary.search("vorn")[0].entry.id == vorn.id
    assert_fts_in_sync(glossary)
    glossary.glossary.delete_entry(AGENT, vorn.id, "noise")
    assert_fts_in_sync(glossary)


def test_fts_stays_in_sync_when_a_transaction_fails(glossary: GlossaryStore):
    tithe = glossary.glossary.find_by_term("ember tithe")
    assert tithe
    with pytest.raises(RuntimeError), glossary.transaction():
        glossary.glossary.update_entry(AGENT, tithe.id, term="Cinder Levy")
        raise RuntimeError("boom")
    assert glossary.glossary.search("cinder") == []
    assert_fts_in_sync(glossary)


def test_a_change_that_leaves_the_names_and_definition_leaves_the_index_alone(
    glossary: GlossaryStore,
):
    """The full-text row holds the names and the definition: a change of status or tags is
    written without rewriting it (a drafted scene's replays made two of every three index
    writes), and a change of the definition still is."""
    tithe = glossary.glossary.find_by_term("ember tithe")
    assert tithe

    def index_writes() -> int:
        return glossary.conn.execute("SELECT count(*) FROM entry_fts_data").fetchone()[0]

    before = index_writes()
    glossary.glossary.update_entry(AGENT, tithe.id, status="confirmed", tags=["custom"])
    assert index_writes() == before
    assert glossary.glossary.search("ash tax")[0].entry.id == tithe.id
    assert_fts_in_sync(glossary)
    glossary.glossary.update_entry(AGENT, tithe.id, definition="A levy of cinders.")
    assert index_writes() != before
    assert glossary.glossary.search("cinders")[0].entry.id == tithe.id
    assert_fts_in_sync(glossary)
