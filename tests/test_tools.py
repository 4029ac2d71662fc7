"""The agent's tools against a real annotator store and a real (small) banished.db corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from terrarium_dagster.agent.relevant import entry_line
from terrarium_dagster.agent.tools import (
    GLOSSARY_TOOLS,
    HandlerResult,
    Tool,
    ToolAccess,
    ToolArgs,
    ToolRegistry,
    default_registry,
    dispatch,
)
from terrarium_dagster.context.prompts import KINDS
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Scene
from terrarium_dagster.errors import InputError
from terrarium_dagster.model.protocol import FunctionCall, ToolCall
from terrarium_dagster.store.annotator import Actor, GlossaryStore, parse_entry_id
from tests.support.corpus_builder import PostRow, write_corpus

# thread 100 (earlier) and thread 200 (later); times increase with ids.
POSTS: list[tuple[int, int, bool, bool, str]] = [
    # (thread, post, qm, tally, body)
    (
        100,
        100,
        True,
        False,
        "The wind off the Greywater bit at your cloak.<br>You reach the Lantern Court at dusk.",
    ),
    (
        100,
        101,
        True,
        False,
        "Keth&#039;ra waits by the gate. &quot;The ember-tithe is due,&quot; she says.",
    ),
    (100, 102, False, False, '<a class="quotelink">&gt;&gt;101</a><br>Pay the tithe!'),
    (100, 103, True, True, "Tally: pay 5, refuse 2"),
    (
        100,
        104,
        True,
        False,
        "You pay the ember-tithe. Lord Varen smiles from his chair of glimmerstone.",
    ),
    (100, 105, True, False, "The Order of the Ember gathers in the hall. Varen rises."),
    (100, 106, False, False, "Follow Varen!"),
    (200, 200, True, False, "Weeks later, the caravan reaches Ostrava. Varen is dead."),
    (200, 201, False, False, "No!"),
]


def build_corpus(path: Path) -> Path:
    rows = [
        PostRow(
            post_id,
            thread_id,
            1_600_000_000 + post_id,
            body,
            tuple(
                (["qm_post"] if qm else [])
                + (["vote_tally_post"] if tally else [])
                + (["op_post"] if post_id == thread_id else [])
            ),
            name="QM" if qm else "Anonymous",
            trip="!!qm" if qm else None,
        )
        for thread_id, post_id, qm, tally, body in POSTS
    ]
    threads = {100: "Ash and Lanterns", 200: "The Brine Gate"}
    return write_corpus(path, threads, rows, [(102, 101)])


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    with Corpus(build_corpus(tmp_path / "banished.db")) as opened:
        yield opened


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "glossary.db") as opened:
        yield opened


def make_ctx(
    store: GlossaryStore, corpus: Corpus, scene_index: int = 1, *, read_only: bool = False
) -> ToolAccess:
    scene: Scene = corpus.scenes(100)[scene_index]
    actor = Actor("agent", run_id="run-1", thread_id=100, scene_id=scene.id)
    return ToolAccess(store=store, corpus=corpus, actor=actor, scene=scene, read_only=read_only)


@pytest.fixture
def access(store: GlossaryStore, corpus: Corpus) -> ToolAccess:
    """The second scene of thread 100 (posts 104-105): posts up to 105 are visible."""
    return make_ctx(store, corpus)


def call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def run(access: ToolAccess, name: str, arguments: Any) -> dict[str, Any]:
    outcome = dispatch(default_registry(), access, call(name, arguments))
    result = json.loads(outcome.result_json)
    assert result["ok"] is outcome.ok
    return result


def error_of(access: ToolAccess, name: str, arguments: Any) -> str:
    outcome = dispatch(default_registry(), access, call(name, arguments))
    assert not outcome.ok
    assert outcome.effects == ()
    assert "\n" not in outcome.result_json
    result = json.loads(outcome.result_json)
    assert set(result) == {"ok", "error"}
    return result["error"]


def create(access: ToolAccess, term: str, **extra: Any) -> dict[str, Any]:
    result = run(access, "glossary_create", {"term": term, "definition": f"About {term}.", **extra})
    assert result["ok"], result
    return result


# -- schemas and registry --------------------------------------------------------------------


def test_registry_has_the_established_tool_names_in_order() -> None:
    registry = default_registry()
    assert list(registry) == [
        "glossary_search",
        "glossary_create",
        "glossary_update",
        "glossary_delete",
        "read_post",
        "read_thread_range",
    ]
    # read_thread_range runs when called (read_post's description names it), unadvertised
    assert [s["function"]["name"] for s in registry.schemas()] == list(registry)[:-1]


def test_schemas_are_deterministic_sorted_and_compact() -> None:
    first = default_registry().schemas_json()
    assert first == default_registry().schemas_json()
    schemas = default_registry().schemas()
    assert json.dumps(schemas) == json.dumps(schemas, sort_keys=True)  # keys already sorted
    assert '"title":' not in first and "null" not in first
    assert "additionalProperties" not in first  # validation still refuses unknown fields
    assert len(first) < 2200  # every call pays for them
    for schema in schemas:
        function = schema["function"]
        assert schema["type"] == "function"
        assert len(function["description"]) <= 110


def test_create_schema_lists_required_and_optional_fields() -> None:
    schema = default_registry()["glossary_create"].schema()["function"]["parameters"]
    assert schema["required"] == ["term", "definition"]
    assert set(schema["properties"]) == {
        "term",
        "definition",
        "aliases",
        "kind",
        "post_ids",
        "quote",
    }
    update = default_registry()["glossary_update"].schema()["function"]["parameters"]
    assert update["properties"]["entry_id"]["type"] == "string"


class ListSnapshotsArgs(ToolArgs):
    title: str | None = None  # a property may be called "title": the schema keeps it
    limit: int = Field(default=5, ge=1, le=20)


def _list_snapshots(access: ToolAccess, args: ListSnapshotsArgs) -> HandlerResult:
    return HandlerResult({"snapshots": [], "limit": args.limit})


def test_registering_a_tool_twice_is_refused_and_new_tools_can_be_added(
    access: ToolAccess,
) -> None:
    registry = ToolRegistry(GLOSSARY_TOOLS)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(GLOSSARY_TOOLS[0])
    registry.register(Tool("list_snapshots", "List snapshots.", ListSnapshotsArgs, _list_snapshots))
    assert list(registry)[-1] == "list_snapshots"
    parameters = registry["list_snapshots"].schema()["function"]["parameters"]
    assert parameters["properties"]["title"] == {"type": "string"}
    outcome = dispatch(registry, access, call("list_snapshots", {"limit": 3}))
    assert outcome.result_json == '{"limit":3,"ok":true,"snapshots":[]}'
    assert "glossary_create" not in registry.read_only()
    assert list(registry.only(["read_post", "nope"])) == ["read_post"]


@pytest.mark.parametrize("value", [12, "12", "E12", "e12", " [E12] "])
def test_entry_ids_accept_numbers_and_e_prefixed_strings(value: object) -> None:
    assert parse_entry_id(value) == 12


@pytest.mark.parametrize("value", [0, "0", -3, True, "X12", "E", 1.5, None])
def test_entry_ids_refuse_anything_else(value: object) -> None:
    with pytest.raises(InputError, match="is not an entry id"):
        parse_entry_id(value)


# -- dispatch error paths ---------------------------------------------------------------------


def test_bad_json_arguments_give_an_error_result(access: ToolAccess) -> None:
    error = error_of(access, "glossary_search", '{"query": "Varen"')
    assert "not valid JSON" in error


def test_arguments_that_are_not_an_object_give_an_error_result(access: ToolAccess) -> None:
    assert "must be a JSON object" in error_of(access, "glossary_search", '["Varen"]')


def test_unknown_tool_lists_the_available_ones(access: ToolAccess) -> None:
    error = error_of(access, "glossary_frobnicate", {})
    assert "unknown tool 'glossary_frobnicate'" in error
    assert "glossary_search" in error


def test_missing_field_is_named_with_the_fields_the_tool_takes(access: ToolAccess) -> None:
    error = error_of(access, "glossary_create", {"term": "Varen"})
    assert "missing field 'definition'" in error
    assert "(fields: term, kind?, definition, aliases?, post_ids?, quote?)" in error


def test_extra_field_is_refused(access: ToolAccess) -> None:
    error = error_of(access, "glossary_search", {"query": "Varen", "fuzzy": True})
    assert "unknown field 'fuzzy'" in error


def test_wrong_type_is_refused(access: ToolAccess) -> None:
    assert "'limit'" in error_of(access, "glossary_search", {"query": "Varen", "limit": "many"})
    assert "'limit'" in error_of(access, "glossary_search", {"query": "Varen", "limit": 500})
    assert "'count'" in error_of(access, "read_thread_range", {"start_post_id": 100, "count": 21})
    error = error_of(access, "glossary_delete", {"entry_id": "X1", "reason": "r"})
    assert "'entry_id': 'X1' is not an entry id" in error


def test_empty_arguments_are_treated_as_an_empty_object(access: ToolAccess) -> None:
    assert "missing field 'query'" in error_of(access, "glossary_search", "")


def test_unknown_entry_is_an_error_result(access: ToolAccess) -> None:
    error = error_of(access, "glossary_update", {"entry_id": "E999", "definition": "x"})
    assert "E999" in error and "glossary_search" in error
    assert "E999" in error_of(access, "glossary_delete", {"entry_id": 999, "reason": "wrong"})


def test_duplicate_term_names_the_existing_entry(access: ToolAccess, store: GlossaryStore) -> None:
    created = create(access, "Lord Varen", aliases=["Varen"])
    entry_id = created["entry"]["id"]
    before = store.history.last_revision_id()
    for term in ("lord varen", "VAREN", "the Lord Varen"):
        error = error_of(access, "glossary_create", {"term": term, "definition": "again"})
        assert f"already exists as {entry_id} (Lord Varen)" in error
        assert f'glossary_update with entry_id "{entry_id}"' in error
    error = error_of(
        access,
        "glossary_create",
        {"term": "Varen's Chair", "definition": "x", "aliases": ["Varen"]},
    )
    assert entry_id in error
    assert store.history.last_revision_id() == before


def test_an_alias_taken_by_another_entry_is_refused_on_update(access: ToolAccess) -> None:
    varen = create(access, "Lord Varen")["entry"]["id"]
    order = create(access, "Order of the Ember")["entry"]["id"]
    error = error_of(access, "glossary_update", {"entry_id": order, "add_aliases": ["lord varen"]})
    assert f"already exists as {varen}" in error


def test_read_only_context_refuses_writes_and_allows_reads(
    store: GlossaryStore, corpus: Corpus
) -> None:
    access = make_ctx(store, corpus, read_only=True)
    for name, args in (
        ("glossary_create", {"term": "Varen", "definition": "A lord."}),
        ("glossary_update", {"entry_id": "E1", "definition": "x"}),
        ("glossary_delete", {"entry_id": "E1", "reason": "x"}),
    ):
        assert "read-only" in error_of(access, name, args)
    assert store.glossary.entries() == []
    assert run(access, "glossary_search", {"query": "Varen"})["ok"]
    assert run(access, "read_post", {"post_id": 104})["ok"]


def test_future_posts_are_refused_as_sources_and_for_reading(access: ToolAccess) -> None:
    for post_id in (106, 200):
        error = error_of(
            access, "glossary_create", {"term": "Varen", "definition": "x", "post_ids": [post_id]}
        )
        assert f"post {post_id} is after the current scene" in error
        assert "ends at post 105" in error
        assert f"post {post_id} is after" in error_of(access, "read_post", {"post_id": post_id})


def test_posts_not_in_the_corpus_are_refused(access: ToolAccess) -> None:
    error = error_of(
        access, "glossary_create", {"term": "Varen", "definition": "x", "post_ids": [104, 999]}
    )
    assert "post 999 is not in the corpus" in error
    assert "not in the corpus" in error_of(access, "read_post", {"post_id": 999})
    assert "not in the corpus" in error_of(access, "read_thread_range", {"start_post_id": 999})


def test_a_name_without_letters_is_refused_by_the_store(access: ToolAccess) -> None:
    assert "letters" in error_of(access, "glossary_create", {"term": "!!!", "definition": "x"})


@pytest.mark.parametrize(
    "query", ["Keth'ra", "a-b", "x:y", '"', "NOT", "AND OR", "*", "^near(", "ember-tithe NOT"]
)
def test_hostile_search_strings_are_safe(access: ToolAccess, query: str) -> None:
    create(access, "Keth'ra", post_ids=[101])
    result = run(access, "glossary_search", {"query": query})
    assert result["ok"] is True
    assert isinstance(result["hits"], list)


def test_failed_calls_change_nothing(access: ToolAccess, store: GlossaryStore) -> None:
    create(access, "Lord Varen")
    before = (store.history.last_revision_id(), store.glossary.entries())
    error_of(access, "glossary_create", {"term": "Varen", "definition": "x", "post_ids": [106]})
    error_of(access, "glossary_update", {"entry_id": "E1", "add_aliases": ["x"], "post_ids": [200]})
    assert (store.history.last_revision_id(), store.glossary.entries()) == before


# -- results -----------------------------------------------------------------------------------


def test_search_renders_entries_compactly(access: ToolAccess) -> None:
    long_definition = "A lord of the Lantern Court. " * 13  # 377 characters: shown whole
    run(
        access,
        "glossary_create",
        {"term": "Lord Varen", "definition": long_definition, "aliases": ["Varen"]},
    )
    outcome = dispatch(default_registry(), access, call("glossary_search", {"query": "varen"}))
    assert outcome.result_json.startswith('{"hits":[{"aliases":["Varen"],"definition":"A lord')
    hit = json.loads(outcome.result_json)["hits"][0]
    assert hit["id"] == "E1" and hit["term"] == "Lord Varen" and hit["status"] == "tentative"
    assert hit["definition"] == long_definition.strip()
    assert run(access, "glossary_search", {"query": "zzz"}) == {
        "hits": [],
        "note": "no entry matches",
        "ok": True,
    }


def test_results_are_deterministic_compact_json(tmp_path: Path, corpus: Corpus) -> None:
    outputs = []
    for name in ("a.db", "b.db"):
        with GlossaryStore(tmp_path / name) as store:
            access = make_ctx(store, corpus)
            calls = [
                call("glossary_create", {"term": "Keth'ra", "definition": "A gatekeeper."}),
                call("glossary_update", {"entry_id": "E1", "add_aliases": ["Kethra"]}),
                call("glossary_search", {"query": "Keth'ra"}),
                call("read_post", {"post_id": 101}),
            ]
            outputs.append([dispatch(default_registry(), access, c).result_json for c in calls])
    assert outputs[0] == outputs[1]
    for text in outputs[0]:
        assert json.loads(text) is not None
        assert text == json.dumps(
            json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )


def test_outcome_is_a_tool_message_and_reports_effects(access: ToolAccess) -> None:
    outcome = dispatch(
        default_registry(),
        access,
        call("glossary_create", {"term": "Varen", "definition": "A lord."}, "call_7"),
    )
    assert outcome.ok and outcome.name == "glossary_create"
    assert outcome.message() == {
        "role": "tool",
        "tool_call_id": "call_7",
        "content": outcome.result_json,
    }
    (effect,) = outcome.effects
    assert (effect.action, effect.entry_id, effect.term, effect.post_ids) == (
        "create",
        1,
        "Varen",
        (104, 105),
    )


def test_dispatch_accepts_a_protocol_tool_call(access: ToolAccess) -> None:
    tool_call = ToolCall(
        id="c1", function=FunctionCall(name="read_post", arguments='{"post_id": 100}')
    )
    outcome = dispatch(default_registry(), access, tool_call)
    assert outcome.ok and outcome.tool_call_id == "c1"


# -- provenance --------------------------------------------------------------------------------


def test_provenance_defaults_to_scene_posts_where_the_term_occurs(
    access: ToolAccess, store: GlossaryStore
) -> None:
    result = create(access, "Lord Varen", aliases=["Varen"])
    assert result["entry"] == {"id": "E1", "term": "Lord Varen"}
    rows = store.provenance.for_entry(1)
    assert [(p.post_id, p.thread_id) for p in rows] == [(104, 100), (105, 100)]
    assert rows[0].quote == "Lord Varen smiles from his chair of glimmerstone."
    assert rows[1].quote == "Varen rises."


def test_a_term_in_no_post_is_an_error_naming_it_and_nothing_is_written(
    access: ToolAccess, store: GlossaryStore
) -> None:
    error = error_of(access, "glossary_create", {"term": "Sablecoats", "definition": "Soldiers."})
    assert error.startswith("'Sablecoats' does not occur in the current scene (posts 104, 105)")
    assert "give post_ids of the earlier post(s) that name it" in error
    error = error_of(
        access,
        "glossary_create",
        {"term": "Sablecoats", "definition": "x", "aliases": ["Sable Guard"]},
    )
    assert "none of 'Sablecoats', 'Sable Guard' occurs in the current scene" in error
    assert store.glossary.entries() == [] and store.history.last_revision_id() == 0


def test_given_earlier_posts_are_accepted_with_their_sentence(
    access: ToolAccess, store: GlossaryStore
) -> None:
    create(access, "Keth'ra", post_ids=[101, 101])
    quotes = {p.post_id: p.quote for p in store.provenance.for_entry(1)}
    assert quotes == {101: "Keth'ra waits by the gate."}


def test_a_cited_post_that_does_not_name_the_term_is_an_error(
    access: ToolAccess, store: GlossaryStore
) -> None:
    error = error_of(
        access, "glossary_create", {"term": "Keth'ra", "definition": "x", "post_ids": [101, 104]}
    )
    assert error.startswith('"Keth\'ra" does not occur in post 104; cite only posts that name it')
    assert store.glossary.entries() == []
    create(access, "Lord Varen", post_ids=[104])
    error = error_of(
        access, "glossary_update", {"entry_id": "E1", "definition": "A lord.", "post_ids": [100]}
    )
    assert "'Lord Varen' does not occur in post 100" in error
    assert store.glossary.get_entry(1).definition == "About Lord Varen."


def test_a_verbatim_quote_is_kept_in_the_posts_spelling_and_an_invented_one_is_an_error(
    access: ToolAccess, store: GlossaryStore
) -> None:
    create(access, "glimmerstone", quote="chair of  GLIMMERSTONE")
    assert store.provenance.for_entry(1)[0].quote == "chair of glimmerstone"
    create(access, "Keth'ra", post_ids=[101], quote="“the ember–tithe is DUE”")
    assert store.provenance.for_entry(2)[0].quote == "The ember-tithe is due"
    error = error_of(
        access,
        "glossary_create",
        {"term": "Order of the Ember", "definition": "x", "quote": "The Order rules the world"},
    )
    assert error.startswith(
        "quote 'The Order rules the world' is not in the current scene (posts 104, 105)"
    )
    error = error_of(
        access,
        "glossary_update",
        {"entry_id": "E2", "post_ids": [101], "quote": "Keth'ra sleeps by the gate"},
    )
    assert 'quote "Keth\'ra sleeps by the gate" is not in post 101' in error
    assert store.glossary.find_by_term("Order of the Ember") is None
    assert [p.post_id for p in store.provenance.for_entry(2)] == [101]


def test_a_quote_names_its_post_even_where_the_term_is_a_pronoun(
    access: ToolAccess, store: GlossaryStore
) -> None:
    create(access, "Keth'ra", post_ids=[101])
    run(access, "glossary_update", {"entry_id": "E1", "definition": "A gatekeeper of the Court."})
    # Keth'ra is not named in the current scene, so a definition needs a source...
    assert store.glossary.get_entry(1).definition == "About Keth'ra."
    # ...which a quote from a cited post gives, even when that post says "she".
    result = run(
        access,
        "glossary_update",
        {
            "entry_id": "E1",
            "definition": "A gatekeeper of the Court.",
            "post_ids": [101],
            "quote": "she says",
        },
    )
    assert result["ok"] and store.glossary.get_entry(1).definition == "A gatekeeper of the Court."
    assert run(access, "glossary_update", {"entry_id": "E1", "tags": ["character"]})["ok"]
    assert store.glossary.get_entry(1).tags == ["character"]


def test_update_adds_aliases_and_new_provenance_once(
    access: ToolAccess, store: GlossaryStore
) -> None:
    create(access, "Lord Varen", post_ids=[104])
    result = run(
        access,
        "glossary_update",
        {"entry_id": "E1", "add_aliases": ["Varen"], "reason": "short name"},
    )
    assert store.glossary.get_entry(1).aliases == ["Varen"]
    assert result["entry"] == {"id": "E1", "term": "Lord Varen"}
    assert [p.post_id for p in store.provenance.for_entry(1)] == [104, 105]  # 104 recorded once
    revisions = store.history.revisions(1)
    assert revisions[-1].reason == "short name"
    again = run(access, "glossary_update", {"entry_id": 1, "post_ids": [104, 105]})
    assert again["note"] == "nothing new: already recorded"
    assert store.history.revisions(1) == revisions


def test_update_with_nothing_to_say_is_refused(access: ToolAccess) -> None:
    create(access, "Keth'ra", post_ids=[101])
    assert "nothing to update for E1" in error_of(access, "glossary_update", {"entry_id": "E1"})


def test_update_of_a_merged_entry_goes_to_its_target(
    access: ToolAccess, store: GlossaryStore
) -> None:
    create(access, "Lord Varen", post_ids=[104])
    create(access, "Varen", post_ids=[105])
    store.glossary.merge_entries(access.actor, 2, 1, "same person")
    result = run(
        access, "glossary_update", {"entry_id": "E2", "definition": "A lord of the Court."}
    )
    assert result["entry"]["id"] == "E1"
    assert result["note"] == "E2 was merged into E1; E1 was used"
    assert store.glossary.get_entry(1).definition == "A lord of the Court."


def test_delete_is_soft_and_a_deleted_entry_cannot_be_updated(
    access: ToolAccess, store: GlossaryStore
) -> None:
    create(access, "glimmerstone")
    outcome = dispatch(
        default_registry(),
        access,
        call("glossary_delete", {"entry_id": "E1", "reason": "not in the story"}),
    )
    assert json.loads(outcome.result_json) == {"deleted": "E1", "ok": True, "term": "glimmerstone"}
    assert outcome.effects[0].action == "delete"
    assert store.glossary.get_entry(1).deleted
    error = error_of(access, "glossary_update", {"entry_id": "E1", "definition": "x"})
    assert "E1 was deleted: not in the story" in error
    assert "already deleted" in error_of(
        access, "glossary_delete", {"entry_id": "E1", "reason": "again"}
    )


# -- reading -----------------------------------------------------------------------------------


def test_read_post_returns_clean_text_and_tags(access: ToolAccess) -> None:
    post = run(access, "read_post", {"post_id": 101})["post"]
    assert post == {
        "id": 101,
        "name": "QM",
        "qm": True,
        "text": 'Keth\'ra waits by the gate. "The ember-tithe is due," she says.',
        "thread_id": 100,
        "vote_tally": False,
    }
    tally = run(access, "read_post", {"post_id": 103})["post"]
    assert tally["vote_tally"] is True
    player = run(access, "read_post", {"post_id": 102})["post"]
    assert player["text"] == ">>101\nPay the tithe!" and player["qm"] is False


def test_read_thread_range_stops_at_the_current_scene(access: ToolAccess) -> None:
    result = run(access, "read_thread_range", {"start_post_id": 102, "count": 20})
    assert [p["id"] for p in result["posts"]] == [102, 103, 104, 105]
    assert result["stopped"] == "the story so far ends at post 105"
    assert result["thread_id"] == 100


def test_read_thread_range_checks_the_thread(access: ToolAccess) -> None:
    error = error_of(access, "read_thread_range", {"thread_id": 200, "start_post_id": 100})
    assert "post 100 is in thread 100, not 200" in error


def test_an_earlier_scene_sees_less(store: GlossaryStore, corpus: Corpus) -> None:
    access = make_ctx(store, corpus, scene_index=0)  # posts 100-101
    assert "ends at post 101" in error_of(access, "read_post", {"post_id": 102})
    result = run(access, "read_thread_range", {"start_post_id": 100, "count": 5})
    assert [p["id"] for p in result["posts"]] == [100, 101]


def test_a_later_thread_sees_the_earlier_one(store: GlossaryStore, corpus: Corpus) -> None:
    scene = corpus.scenes(200)[0]
    access = ToolAccess(store, corpus, Actor("agent", thread_id=200, scene_id=scene.id), scene)
    assert run(access, "read_post", {"post_id": 106})["ok"]
    create(access, "Varen", post_ids=[105, 200])
    assert {(p.post_id, p.thread_id) for p in store.provenance.for_entry(1)} == {
        (105, 100),
        (200, 200),
    }


# -- the brief: definitions kept whole, rejected names left alone, kinds ------------------------


CURATOR = Actor("curator", run_id="run-1", thread_id=100)


def test_an_update_of_a_long_definition_keeps_it_whole(access: ToolAccess) -> None:
    created = create(access, "Lord Varen")
    entry_id = int(created["entry"]["id"][1:])
    # a curator's revision may be longer than Known entries show whole
    long_definition = "Lord Varen is the master of the Lantern Court. " * 12
    access.store.glossary.update_entry(CURATOR, entry_id, definition=long_definition, reason="rev")
    assert run(access, "glossary_update", {"entry_id": f"E{entry_id}", "add_fact": "He smiles"})[
        "ok"
    ]
    after = access.store.glossary.get_entry(entry_id).definition
    assert after == f"{long_definition.strip()} He smiles."  # the whole text, and the fact
    error = error_of(
        access, "glossary_update", {"entry_id": f"E{entry_id}", "definition": "A lord."}
    )
    assert "longer than Known entries show" in error and "add_fact" in error
    assert access.store.glossary.get_entry(entry_id).definition == after
    # a definition shown whole may be replaced, and a too long one is refused before writing
    short = create(access, "Order of the Ember")["entry"]["id"]
    assert run(
        access, "glossary_update", {"entry_id": short, "definition": "An order of knights."}
    )["ok"]
    assert "400" in error_of(
        access, "glossary_create", {"term": "Varen's chair", "definition": "x" * 401}
    )


def test_a_rejected_name_is_not_revived_by_accident(access: ToolAccess) -> None:
    entry_id = int(create(access, "Lord Varen")["entry"]["id"][1:])
    access.store.glossary.update_entry(CURATOR, entry_id, status="rejected", reason="not a term")
    for name, arguments in (
        ("glossary_create", {"term": "Lord Varen", "definition": "A lord."}),
        ("glossary_update", {"entry_id": f"E{entry_id}", "add_fact": "He smiles."}),
    ):
        error = error_of(access, name, arguments)
        assert "rejected" in error and "glossary_update" not in error and "move on" in error
    assert access.store.glossary.get_entry(entry_id).status == "rejected"
    (hit,) = run(access, "glossary_search", {"query": "Varen"})["hits"]
    assert hit == {"id": f"E{entry_id}", "status": "rejected", "term": "Lord Varen"}
    line = entry_line(access.store.glossary.get_entry(entry_id))
    assert line == f"- [E{entry_id}] Lord Varen [rejected]"  # listed compactly


def test_the_kind_of_an_entry_is_one_of_the_kinds(access: ToolAccess) -> None:
    created = create(access, "Lord Varen", kind="character")
    assert access.store.glossary.get_entry(int(created["entry"]["id"][1:])).tags == ["character"]
    error = error_of(access, "glossary_create", {"term": "Varen", "definition": "A.", "kind": "x"})
    assert "'kind'" in error
    schema = default_registry()["glossary_create"].schema()["function"]["parameters"]
    assert schema["properties"]["kind"]["enum"] == list(KINDS)
