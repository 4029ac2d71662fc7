"""The benchmark model that forgets like a real one (`testing.forgetful`): what it decides comes
from what the request shows it, and only from that.

Requests are built with the engine's own message builders (`context.prompts.scene_message`, the
known-entry lines of `agent.relevant.entry_line`'s form) and answered through the backend's
HTTP entry point, as the loopback servers answer them; one run goes through a real loopback
server over the generated recurring quest.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.context import prompts
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.exports.score import GoldList, GoldTerm
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ProvenanceIn
from terrarium_dagster.testing.batching import BatchingServer
from terrarium_dagster.testing.forgetful import FORGETFUL_MODEL, ForgetfulBackend
from terrarium_dagster.testing.quality import gold_of_quest, quality
from terrarium_dagster.testing.recurring import generate_recurring_quest
from tests.support.cli import run_args

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("glossary_search", "glossary_create", "glossary_update")
]


def scene(story: str, known: Sequence[str] = (), scene_id: str = "100#101") -> dict[str, Any]:
    text = prompts.scene_message(
        scene_id=scene_id,
        thread_id=100,
        title="A quest",
        scene_number=2,
        scene_count=9,
        first_post_id=101,
        last_post_id=101,
        known_entries=list(known),
        story=f"[post 101]\n{story}",
    )
    return {"role": "user", "content": text}


def ask(messages: list[dict[str, Any]], backend: ForgetfulBackend | None = None) -> dict[str, Any]:
    """The model's reply message, through the backend's HTTP entry point."""
    body = {"model": FORGETFUL_MODEL, "messages": messages, "tools": TOOLS}
    request = httpx.Request("POST", "http://model/v1/chat/completions", json=body)
    response = (backend or ForgetfulBackend()).handle_request(request)
    assert response.status_code == 200, response.read()
    return json.loads(response.read())["choices"][0]["message"]


def calls(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for call in message.get("tool_calls") or []
    ]


def answered(
    messages: list[dict[str, Any]], reply: dict[str, Any], results: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The conversation with the reply and a tool result for each of its calls."""
    turn = [*messages, {k: v for k, v in reply.items() if k != "reasoning_content"}]
    for call, result in zip(reply["tool_calls"], results, strict=True):
        content = json.dumps(result)
        turn.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return turn


MISSING = {"ok": True, "hits": [], "note": "no entry matches"}
FIVE_NEW = (
    "Avrel Dunmoth keeps a bronze lantern. Old Kethmere guards a silver bridge. "
    "Sorin Vaxhal fears a northern river. Upper Brivwick sells a quiet ledger. "
    "Tamsa Orrin owns a hollow bell."
)


def test_it_looks_up_three_unseen_names_a_scene_in_the_scenes_order_and_creates_those_missing() -> (
    None
):
    messages = [scene(FIVE_NEW)]
    first = ask(messages)
    searches = calls(first)
    assert [name for name, _ in searches] == ["glossary_search"] * 3
    assert [args["query"] for _, args in searches] == [
        "Avrel Dunmoth",
        "Old Kethmere",
        "Sorin Vaxhal",
    ]
    assert "SCENE DONE" not in (first.get("content") or "")  # it needs the results
    second = ask(answered(messages, first, [MISSING] * 3))
    assert second["content"] == prompts.SCENE_DONE
    creates = calls(second)
    assert [(name, args["term"]) for name, args in creates] == [
        ("glossary_create", "Avrel Dunmoth"),
        ("glossary_create", "Old Kethmere"),
        ("glossary_create", "Sorin Vaxhal"),
    ]
    assert creates[0][1]["definition"] == "Keeps a bronze lantern."
    assert creates[0][1]["post_ids"] == [101]


def test_a_name_it_sees_as_an_entry_costs_no_lookup_so_the_lookups_reach_further() -> None:
    known = [
        "- [E1] Avrel Dunmoth [tentative]: Keeps a bronze lantern.",
        "- [E2] Old Kethmere (aliases: Kethmere) [confirmed]: Guards a silver bridge.",
    ]
    messages = [scene(FIVE_NEW, known)]
    first = ask(messages)
    assert [args["query"] for _, args in calls(first)] == [
        "Sorin Vaxhal",
        "Upper Brivwick",
        "Tamsa Orrin",
    ]
    second = calls(ask(answered(messages, first, [MISSING] * 3)))
    assert [name for name, _ in second] == ["glossary_update"] * 2 + ["glossary_create"] * 3
    # what it already saw is not written again: only the posts
    assert second[0][1] == {"entry_id": "E1", "post_ids": [101]}


def test_a_search_that_finds_the_entry_is_an_update_not_a_create() -> None:
    messages = [scene("Sorin Vaxhal fears a northern river.")]
    first = ask(messages)
    hit = {
        "ok": True,
        "hits": [
            {
                "id": "E7",
                "term": "Sorin Vaxhal",
                "status": "tentative",
                "definition": "Mends a map.",
            }
        ],
    }
    second = calls(ask(answered(messages, first, [hit])))
    assert second == [
        (
            "glossary_update",
            {
                "entry_id": "E7",
                "definition": "Mends a map. Fears a northern river.",
                "post_ids": [101],
            },
        )
    ]


def test_it_names_a_thing_by_the_form_the_scene_uses_when_it_sees_no_fuller_entry() -> None:
    messages = [scene("The road was cold. Vorn fears a silver bell.")]
    first = ask(messages)
    assert calls(first) == [("glossary_search", {"query": "Vorn", "limit": 3})]
    second = calls(ask(answered(messages, first, [MISSING])))
    assert second[0][0] == "glossary_create"
    assert second[0][1]["term"] == "Vorn"  # a split, had an entry "Vorn Tarkesh" existed unseen


def test_shown_the_fuller_entry_it_adds_the_short_form_as_an_alias_of_it() -> None:
    known = ["- [E3] Vorn Tarkesh [tentative]: Keeps a bronze lantern."]
    reply = ask([scene("The road was cold. Vorn fears a silver bell.", known)])
    assert calls(reply) == [
        (
            "glossary_update",
            {
                "entry_id": "E3",
                "add_aliases": ["Vorn"],
                "definition": "Keeps a bronze lantern. Fears a silver bell.",
                "post_ids": [101],
            },
        )
    ]
    assert reply["content"] == prompts.SCENE_DONE


def test_a_search_hit_under_the_fuller_name_also_takes_the_short_form() -> None:
    messages = [scene("Vorn fears a silver bell.")]
    first = ask(messages)
    hit = {
        "ok": True,
        "hits": [{"id": "E3", "term": "Vorn Tarkesh", "status": "tentative", "definition": "X."}],
    }
    second = calls(ask(answered(messages, first, [hit])))
    assert [(name, args.get("add_aliases")) for name, args in second] == [
        ("glossary_update", ["Vorn"])
    ]


def test_an_update_rewrites_the_definition_from_what_it_was_shown_so_a_stale_view_loses_facts() -> (
    None
):
    story = "Vorn Tarkesh fears a silver bell."
    fresh = ["- [E3] Vorn Tarkesh [tentative]: Keeps a bronze lantern. Owns a scarlet map."]
    stale = ["- [E3] Vorn Tarkesh [tentative]: Keeps a bronze lantern."]
    assert calls(ask([scene(story, fresh)]))[0][1]["definition"] == (
        "Keeps a bronze lantern. Owns a scarlet map. Fears a silver bell."
    )
    # shown an older line, it writes back the older definition: "Owns a scarlet map" is gone
    assert calls(ask([scene(story, stale)]))[0][1]["definition"] == (
        "Keeps a bronze lantern. Fears a silver bell."
    )


def test_a_definition_it_was_not_shown_whole_gets_the_fact_appended_not_replaced() -> None:
    story = "Vorn Tarkesh fears a silver bell."
    reply = calls(ask([scene(story, ["- [E3] Vorn Tarkesh [tentative]: …"])]))
    assert reply[0][1]["add_fact"] == "Fears a silver bell."
    assert "definition" not in reply[0][1]


def test_an_entry_line_shown_earlier_in_the_conversation_is_still_seen() -> None:
    earlier = scene("Vorn Tarkesh keeps a bronze lantern.", ["- [E3] Vorn Tarkesh [x]: Mends."])
    earlier["content"] = earlier["content"].replace("[x]", "[tentative]")
    history = [earlier, {"role": "assistant", "content": "Scene 100#99 done: nothing new."}]
    reply = calls(ask([*history, scene("Vorn fears a silver bell.", [], "100#105")]))
    assert [name for name, _ in reply] == ["glossary_update"]
    assert reply[0][1]["definition"] == "Mends. Fears a silver bell."


def test_a_refused_create_becomes_an_update_of_the_entry_the_error_names() -> None:
    messages = [scene("Vorn fears a silver bell.")]
    first = ask(messages)
    second = ask(answered(messages, first, [MISSING]))
    refused = {
        "ok": False,
        "error": "'Vorn' already exists as E9 (Vorn) [tentative]; use glossary_update",
    }
    third = calls(ask(answered(answered(messages, first, [MISSING]), second, [refused])))
    assert third == [("glossary_update", {"entry_id": "E9", "post_ids": [101]})]


def test_the_same_request_gets_the_same_bytes_from_any_instance_and_other_tasks_are_offlines() -> (
    None
):
    body = {"model": FORGETFUL_MODEL, "messages": [scene(FIVE_NEW)], "tools": TOOLS}

    def raw(backend: ForgetfulBackend) -> bytes:
        request = httpx.Request("POST", "http://m/v1/chat/completions", json=body)
        return backend.handle_request(request).read()

    assert raw(ForgetfulBackend()) == raw(ForgetfulBackend()) == raw(ForgetfulBackend())
    flush = ask([{"role": "user", "content": prompts.FLUSH_HEADING + "\nanything left?"}])
    assert flush["content"].startswith("Nothing to record")
    # a model that looks nothing up creates nothing it does not see
    blind = ask([scene(FIVE_NEW)], ForgetfulBackend(lookups=0))
    assert not blind["tool_calls"] and blind["content"].startswith("Scene 100#101 done")


def test_the_recurring_quest_names_each_thing_first_in_full_then_also_by_its_short_form(
    tmp_path: Path,
) -> None:
    quest = generate_recurring_quest(tmp_path / "q.db", threads=2, scenes_per_thread=8, seed=5)
    again = generate_recurring_quest(tmp_path / "again.db", threads=2, scenes_per_thread=8, seed=5)
    assert quest.things == again.things and quest.scene_things == again.scene_things
    with closing(Corpus(quest.path)) as corpus:
        scenes = {s.id: s.text for t in corpus.threads() for s in corpus.scenes(t.id)}
    assert list(scenes) == list(quest.scene_things)  # one corpus scene per generated scene
    short_uses = 0
    for thing in quest.things:
        first_scene = scenes[thing.scenes[0]]
        assert f"{thing.full} {thing.told[0]}." in first_scene
        for scene_id in thing.scenes[1:]:
            short_uses += f"{thing.short} " in scenes[scene_id].replace(thing.full, "")
    assert short_uses >= 10, "later scenes use short forms"
    assert sum(len(thing.scenes) > 2 for thing in quest.things) >= len(quest.things) // 3
    assert "terms:" in quest.gold_yaml()


def test_a_serial_run_over_a_loopback_server_finds_every_thing_once(tmp_path: Path) -> None:
    quest = generate_recurring_quest(tmp_path / "q.db", threads=2, scenes_per_thread=10, seed=5)
    db = tmp_path / "serial.db"
    with BatchingServer(backend=ForgetfulBackend()) as server:
        assert main(run_args(db, quest.path, agent_url=server.url, concurrency=1)) == 0
    measured = quality(db, gold_of_quest(quest), quest)
    assert measured.recall >= 0.9, measured
    assert measured.splits_created == 0, measured.split_examples
    assert measured.facts_added > len(quest.things)
    assert measured.lost_facts <= measured.facts_added // 10, measured.lost_examples
    with closing(sqlite3.connect(db)) as conn:
        terms = {row[0] for row in conn.execute("SELECT term FROM entry")}
    assert terms <= {name for thing in quest.things for name in thing.names}


def test_the_quality_measures_count_a_rewrite_that_drops_a_fact_and_a_split_merged_away(
    tmp_path: Path,
) -> None:
    """`testing.quality.quality` on a store written by hand: a fact dropped by a later rewrite
    and the fact of a split entry that a merge leaves behind are lost; the split counts as
    created though a merge healed it."""
    db = tmp_path / "store.db"
    source = [ProvenanceIn(post_id=101, thread_id=100)]
    with GlossaryStore(db) as store:
        glossary = store.glossary
        full = glossary.create_entry(
            agent("100#101"), "Vorn Tarkesh", "Keeps a lantern.", provenance=source
        ).id
        glossary.update_entry(agent("100#102"), full, definition="Keeps a lantern. Fears a bell.")
        glossary.update_entry(agent("100#103"), full, definition="Keeps a lantern. Owns a map.")
        short = glossary.create_entry(
            agent("100#104"), "Vorn", "Mends a sail.", provenance=source
        ).id
        glossary.create_entry(agent("100#104"), "Brivwick", "Sells salt.", provenance=source)
        glossary.merge_entries(Actor("curator", thread_id=100), short, full, "one person")
    gold = GoldList(
        terms=[
            GoldTerm(term="Vorn Tarkesh", aliases=["Vorn"]),
            GoldTerm(term="Upper Brivwick", aliases=["Brivwick"]),
            GoldTerm(term="Old Kethmere", aliases=["Kethmere"]),
        ]
    )
    measured = quality(db, gold)
    assert measured.recall == pytest.approx(2 / 3, abs=1e-3)
    assert (measured.splits_created, measured.split_live) == (1, 0)
    assert (measured.facts_added, measured.lost_facts, measured.dropped_facts) == (5, 2, 1)
    assert sorted(measured.lost_examples) == [
        f"E{full}→E{full} Vorn Tarkesh: fears a bell",
        f"E{short}→E{full} Vorn Tarkesh: mends a sail",
    ]
    assert measured.redrafts == 0 and measured.fact_recall is None


def agent(scene_id: str) -> Actor:
    return Actor("agent", run_id="run", thread_id=100, scene_id=scene_id)
