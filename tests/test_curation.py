"""The curator: its message, its answer parser, and decisions applied to a real store."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.context.prompts import ENTRY_RULES
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.curation.curator import curate_thread, gather_items, undo_decision
from terrarium_dagster.curation.review_prompt import (
    CURATOR_SYSTEM_PROMPT,
    TASK_LINE,
    DecisionFormatError,
    build_curate_message,
    parse_answer,
    parse_decisions,
)
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ProvenanceIn
from tests.support.corpus_builder import EMBER_ROAD_URL, ember_road_quest

AGENT = Actor("agent", run_id="run-a", thread_id=100, scene_id="100#102")
CURATOR = Actor("curator", run_id="run-a", thread_id=100)


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    with Corpus(ember_road_quest(tmp_path / "quest.db"), url_template=EMBER_ROAD_URL) as reader:
        yield reader


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(tmp_path / "glossary.db") as opened:
        yield opened


def source(post_id: int, quote: str = "", thread_id: int = 100) -> ProvenanceIn:
    return ProvenanceIn(post_id=post_id, thread_id=thread_id, quote=quote)


@pytest.fixture
def entries(store: GlossaryStore) -> dict[str, int]:
    """Five tentative entries of thread 100, as the agent would have written them."""
    return five_entries(store)


def five_entries(store: GlossaryStore) -> dict[str, int]:
    made = {
        "tithe": store.glossary.create_entry(
            AGENT,
            "Ember Tithe",
            "A toll paid at the border fort by every traveller.",
            tags=["custom"],
            provenance=[source(102, "The Ember Tithe is due"), source(103)],
        ),
        "embers": store.glossary.create_entry(
            AGENT,
            "Tithe of Embers",
            "One coal per soul.",
            aliases=["Coal Toll"],
            provenance=[source(104, "the Tithe of Embers")],
        ),
        "kethra": store.glossary.create_entry(
            AGENT, "Keth'ra", "A guide.", tags=["character"], provenance=[source(104)]
        ),
        "door": store.glossary.create_entry(AGENT, "door", "A door.", provenance=[source(105)]),
        "guard": store.glossary.create_entry(
            AGENT, "Ashen Guard", "Soldiers.", tags=["faction"], provenance=[source(106)]
        ),
    }
    return {name: entry.id for name, entry in made.items()}


class ScriptedChat:
    """The engine's chat callable, replaced by fixed answers: records what it was sent."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, int]]:
        self.sent.append([dict(message) for message in messages])
        answer = self.answers.pop(0) if self.answers else '{"decisions": []}'
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 60}
        return answer, usage


def answer(*decisions: dict[str, Any]) -> str:
    return json.dumps({"decisions": list(decisions)})


def decide(entry_id: int, kind: str, reasoning: str = "per >>102", **extra: Any) -> dict[str, Any]:
    return {"entry_id": f"E{entry_id}", "decision": kind, "reasoning": reasoning, **extra}


PREFIX = [{"role": "system", "content": "You build a glossary."}]


def applied_decisions(store: GlossaryStore, **filters: Any) -> list[dict[str, Any]]:
    """curator_decision rows of decisions that changed something (not "left tentative")."""
    return [
        row for row in store.curation.curator_decisions(**filters) if row["decision"] != "TENTATIVE"
    ]


def run(store: GlossaryStore, corpus: Corpus, chat: ScriptedChat, **kwargs: Any) -> Any:
    return curate_thread(
        store,
        corpus,
        chat,
        thread=corpus.thread(100),
        actor=CURATOR,
        prefix_messages=PREFIX,
        **kwargs,
    )


# -- the answer parser ---------------------------------------------------------------------------


def test_parse_decisions_reads_json_inside_code_fence_and_prose() -> None:
    text = (
        "Here is my review.\n```json\n"
        '{"decisions": [{"entry_id": "E12", "decision": "confirm", "reasoning": "seen >>5"},'
        ' {"entry_id": 13, "decision": "MERGE", "target_entry_id": "E12", "reasoning": "same"}]}'
        "\n```\nThanks."
    )
    decisions = parse_decisions(text)
    assert [(d.entry_id, d.decision, d.target_entry_id) for d in decisions] == [
        (12, "CONFIRM", None),
        (13, "MERGE", 12),
    ]


def test_parse_decisions_reads_bare_array_after_think_block() -> None:
    text = (
        '<think>maybe {"decisions": "no"}</think>Sure: '
        '[{"id": "E3", "action": "REVISE", "definition": "A guide.", "reason": "ok"}] done'
    )
    (decision,) = parse_decisions(text)
    assert (decision.entry_id, decision.decision, decision.definition) == (3, "REVISE", "A guide.")


def test_parse_answer_keeps_valid_items_and_reports_invalid_ones() -> None:
    text = answer(
        decide(1, "CONFIRM"),
        decide(2, "MERGE"),  # no target
        decide(3, "REVISE"),  # no definition
        {"entry_id": "E4", "decision": "CONFIRM", "reasoning": "  "},  # a reason is optional
        decide(5, "PROMOTE"),
        {"entry_id": "X9", "decision": "REJECT", "reasoning": "bad id"},
    )
    parsed = parse_answer(text)
    assert [d.entry_id for d in parsed.decisions] == [1, 4]
    assert parsed.decisions[1].reasoning == "confirmed by the curator"
    assert len(parsed.problems) == 4
    assert "target_entry_id" in parsed.problems[0]
    assert "definition" in parsed.problems[1]
    with pytest.raises(DecisionFormatError) as caught:
        parse_decisions(text)
    assert [d.entry_id for d in caught.value.parsed.decisions] == [1, 4]


def test_parse_decisions_without_decisions_raises() -> None:
    with pytest.raises(DecisionFormatError, match="no decision lines"):
        parse_decisions("I confirm all of them.")


def test_parse_answer_reads_one_line_per_decision() -> None:
    text = (
        "<think>E1 REJECT maybe?</think>\n"
        "E1 CONFIRM\n"
        "- [E2] REJECT a real-world city in its usual sense\n"
        "**E3**: MERGE E1 the same knight, shorter name\n"
        "E4 MERGE into [E1]\n"
        "E5 revise Mira Vell is the ferrywoman of [[Cinder Ford]].\n"
        "These are my decisions.\n"
    )
    parsed = parse_answer(text)
    assert parsed.problems == []
    assert [(d.entry_id, d.decision, d.target_entry_id) for d in parsed.decisions] == [
        (1, "CONFIRM", None),
        (2, "REJECT", None),
        (3, "MERGE", 1),
        (4, "MERGE", 1),
        (5, "REVISE", None),
    ]
    assert parsed.decisions[1].reasoning == "a real-world city in its usual sense"
    assert parsed.decisions[2].reasoning == "the same knight, shorter name"
    assert parsed.decisions[4].definition == "Mira Vell is the ferrywoman of [[Cinder Ford]]."
    assert parsed.decided == [1, 2, 3, 4, 5]


def test_a_cut_answer_keeps_every_complete_line_and_names_what_it_decided() -> None:
    full = (
        "E1 CONFIRM\nE2 REJECT an ordinary word\n"
        "E3 REVISE Mira Vell is the ferrywoman of the ford.\n"
    )
    cut = full[: full.index("ferrywoman")]  # cut off inside the third line
    parsed = parse_answer(cut, cut=True)
    assert parsed.cut and parsed.problems == []
    assert parsed.decided == [1, 2]  # the half-written REVISE is not read as a decision
    # a cut answer that ends exactly at a line's end keeps that line too
    assert parse_answer(full, cut=True).decided == [1, 2, 3]


def test_none_decides_nothing_on_purpose_and_an_empty_answer_is_a_problem() -> None:
    parsed = parse_answer("NONE\n")
    assert parsed.found and parsed.decisions == [] and parsed.problems == []
    assert parse_answer("  ").problems == ["the answer was empty"]


def test_a_line_naming_an_entry_without_a_decision_is_reported() -> None:
    parsed = parse_answer("E1 CONFIRM\nE2 looks fine to me\n")
    assert parsed.decided == [1]
    assert len(parsed.problems) == 1 and "E2 looks fine" in parsed.problems[0]


# -- the message ---------------------------------------------------------------------------------


def test_curate_message_lists_entries_with_evidence_and_similar_entries(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    items, deferred, unchanged = gather_items(store, corpus, 100)
    assert deferred == unchanged == []
    message = build_curate_message(items)
    lines = message.splitlines()
    assert lines[0] == TASK_LINE
    assert [line for line in lines if line.startswith("- [E")] == [
        line for line in lines if line.startswith("- [E") and "[tentative]" in line
    ]
    assert sum(1 for line in lines if line.startswith("- [E")) == 5
    block = message.split(f"## Entry E{entries['tithe']}: Ember Tithe")[1].split("## Entry")[0]
    assert ">>102 (QM, first appearance): The Ember Tithe is due" in block
    assert ">>99" not in block and ">>105" in block and ">>106" not in block  # ±3 posts
    assert 'sources: >>102 "The Ember Tithe is due"; >>103' in block
    similar = block.split("### Similar entries")[1]
    assert f"- similar: [E{entries['embers']}] Tithe of Embers" in similar
    assert f"[E{entries['tithe']}]" not in similar
    # the rules and the answer format are the system prompt's, the same for every review
    # (a prefix the server caches once); the message names the answer in a line
    assert message.rstrip().endswith("NONE keeps them all tentative.")
    assert ENTRY_RULES not in message and "## Answer format" not in message
    answer_format = CURATOR_SYSTEM_PROMPT.split("## Answer format")[1]
    assert "E<n> CONFIRM" in answer_format and "no tool calls" in answer_format
    for entry_id in entries.values():  # the example names no entry under review
        assert f"E{entry_id} " not in answer_format
    assert ENTRY_RULES in CURATOR_SYSTEM_PROMPT  # the annotator's rules, word for word


def test_curate_message_cuts_evidence_before_exceeding_budget(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    items = gather_items(store, corpus, 100).items
    roomy = build_curate_message(items, token_budget=100_000)
    tight_budget = len(roomy) // 4 - 60
    tight = build_curate_message(items, token_budget=tight_budget)
    assert len(tight) // 4 + 1 <= tight_budget
    assert tight.count("### Similar entries") == 5  # entries kept, evidence shortened
    assert len(tight) < len(roomy)


def test_small_budget_splits_review_into_several_calls(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    chat = ScriptedChat()
    report = run(store, corpus, chat, max_tokens_message=500)
    assert len(chat.sent) > 1
    reviewed = [
        int(line.split("]")[0][4:])
        for messages in chat.sent
        for line in messages[-1]["content"].splitlines()
        if line.startswith("- [E")
    ]
    assert sorted(reviewed) == sorted(entries.values())
    assert report.calls == len(chat.sent)


def test_request_continues_the_cached_prefix(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    chat = ScriptedChat()
    run(store, corpus, chat)
    (messages,) = chat.sent
    assert messages[: len(PREFIX)] == PREFIX
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].startswith(TASK_LINE + "\n")


# -- decisions applied ---------------------------------------------------------------------------


def test_confirm_reject_revise_are_applied_as_revisions_with_reasoning(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    chat = ScriptedChat(
        answer(
            decide(entries["kethra"], "CONFIRM", "Named guide, >>104."),
            decide(entries["door"], "REJECT", "Ordinary word."),
            decide(
                entries["guard"],
                "REVISE",
                "Guards at the gate, >>106.",
                definition="The soldiers holding the border gate.",
            ),
        )
    )
    report = run(store, corpus, chat)
    assert report.confirmed == [entries["kethra"]]
    assert report.rejected == [entries["door"]]
    assert report.revised == [entries["guard"]]
    assert sorted(report.left_tentative) == sorted([entries["tithe"], entries["embers"]])
    assert (report.calls, report.prompt_tokens, report.cached_tokens) == (1, 100, 60)
    assert store.glossary.get_entry(entries["kethra"]).status == "confirmed"
    assert store.glossary.get_entry(entries["door"]).status == "rejected"
    assert not store.glossary.get_entry(entries["door"]).deleted
    guard = store.glossary.get_entry(entries["guard"])
    assert (guard.status, guard.definition) == (
        "confirmed",
        "The soldiers holding the border gate.",
    )
    last = store.history.revisions(entries["guard"])[-1]
    assert (last.actor_kind, last.reason, last.thread_id) == (
        "curator",
        "Guards at the gate, >>106.",
        100,
    )
    rows = applied_decisions(store, thread_id=100)
    assert {(row["entry_id"], row["decision"]) for row in rows} == {
        (entries["kethra"], "CONFIRM"),
        (entries["door"], "REJECT"),
        (entries["guard"], "REVISE"),
    }
    for row in rows:
        assert store.history.revision(row["revision_id"]).entry_id == row["entry_id"]
        assert row["reasoning"] == store.history.revision(row["revision_id"]).reason


def test_merge_moves_provenance_and_names_to_target(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    source_id, target_id = entries["embers"], entries["tithe"]
    chat = ScriptedChat(
        answer(decide(source_id, "MERGE", "Same toll, >>104.", target_entry_id=f"E{target_id}"))
    )
    report = run(store, corpus, chat)
    assert report.merged == [(source_id, target_id)]
    merged = store.glossary.get_entry(source_id)
    assert (merged.status, merged.merged_into) == ("merged", target_id)
    target = store.glossary.get_entry(target_id)
    assert {"Tithe of Embers", "Coal Toll"} <= set(target.aliases)
    assert target.status == "tentative"  # a merge says nothing about the target
    assert store.provenance.for_entry(source_id) == []
    assert 104 in {p.post_id for p in store.provenance.for_entry(target_id)}
    assert store.glossary.find_by_term("coal toll").id == target_id
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_a_merge_into_an_entry_merged_away_by_another_batch_goes_into_its_survivor(
    store: GlossaryStore, entries: dict[str, int]
) -> None:
    """Two batches of one curation: one merged E314 'Queen Balkis' into E292 'Balkis', the other
    E318 into E314. The second was refused ('curation could not apply: E318: MERGE refused:
    entry E314 'Queen Balkis' was merged into E292; use E292 instead', a WARNING at every
    offline run of Just So Stories); it now goes into E292, as the agent's tools do."""
    from terrarium_dagster.curation.curator import _apply_all
    from terrarium_dagster.curation.decisions import CurateDecision, CurationReport

    tithe, embers, door = entries["tithe"], entries["embers"], entries["door"]
    assert tithe < embers < door  # merges apply in entry order: embers first
    decisions = [
        CurateDecision(entry_id=door, decision="MERGE", target_entry_id=embers, reasoning="a"),
        CurateDecision(entry_id=embers, decision="MERGE", target_entry_id=tithe, reasoning="b"),
    ]
    report = CurationReport(thread_id=100)
    with store.transaction():
        applied = _apply_all(store, CURATOR, 100, decisions, report)
    assert report.problems == []
    assert applied == {door, embers}
    assert report.merged == [(embers, tithe), (door, tithe)]
    assert store.glossary.get_entry(door).merged_into == tithe
    logged = {row["entry_id"]: row["target_entry_id"] for row in applied_decisions(store)}
    assert logged == {embers: tithe, door: tithe}


def test_malformed_answer_is_retried_once_then_left_tentative(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    chat = ScriptedChat("I think they are all fine!", "Still no JSON, sorry.")
    report = run(store, corpus, chat)
    assert len(chat.sent) == 2
    retry = chat.sent[1]
    assert retry[-2] == {"role": "assistant", "content": "I think they are all fine!"}
    assert retry[-1]["content"].startswith(TASK_LINE)
    assert "entries only: E" in retry[-1]["content"]
    assert report.retries == 1
    assert report.confirmed == report.rejected == report.revised == []
    assert sorted(report.left_tentative) == sorted(entries.values())
    assert report.problems
    assert {e.status for e in store.glossary.entries()} == {"tentative"}
    assert store.curation.curator_decisions() == []  # malformed: no "left tentative" record either


def test_retry_answer_is_applied_when_valid(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    kethra, door = entries["kethra"], entries["door"]
    chat = ScriptedChat(
        answer(decide(kethra, "CONFIRM"), {"entry_id": f"E{door}", "decision": "MERGE"}),
        answer(decide(door, "REJECT", "Ordinary word.")),
    )
    report = run(store, corpus, chat)
    assert report.retries == 1
    assert f"E{door}" in chat.sent[1][-1]["content"].split("entries only:")[1]
    assert f"E{kethra}" not in chat.sent[1][-1]["content"].split("entries only:")[1]
    assert (report.confirmed, report.rejected) == ([kethra], [door])
    assert report.problems == []


class RetriedChat:
    """A curator that answers every first request with prose (malformed) and every retry with
    a CONFIRM of each entry it is asked about again, whatever order they come in; `together`
    records the requests each `chat_many` call was handed at once."""

    def __init__(self) -> None:
        self.together: list[list[list[dict[str, Any]]]] = []
        self.alone: list[list[dict[str, Any]]] = []

    def answer(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, int]]:
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 0}
        if messages[-2]["role"] != "assistant":
            return "They all look fine to me.", usage
        again = messages[-1]["content"].split("entries only:")[1].split("\n")[0]
        ids = [int(ref) for ref in re.findall(r"E(\d+)", again)]
        return answer(*(decide(entry_id, "CONFIRM") for entry_id in ids)), usage

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, int]]:
        self.alone.append(messages)
        return self.answer(messages)

    def many(self, requests: list[list[dict[str, Any]]]) -> list[tuple[str, dict[str, int]]]:
        self.together.append(requests)
        return [self.answer(messages) for messages in requests]


def test_the_retries_of_several_batches_are_asked_at_once_and_decide_as_one_by_one(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int], tmp_path: Path
) -> None:
    side_by_side = RetriedChat()
    report = run(store, corpus, side_by_side, max_tokens_message=500, chat_many=side_by_side.many)
    firsts, retries = side_by_side.together
    assert len(firsts) == len(retries) > 1, "every batch asked again, all at once"
    assert side_by_side.alone == []
    assert all("entries only:" in request[-1]["content"] for request in retries)
    assert report.retries == len(retries) and report.problems == []
    assert sorted(report.confirmed) == sorted(entries.values())

    # the same decisions as a curator asked one request at a time
    one_by_one = RetriedChat()
    with GlossaryStore(tmp_path / "one_by_one.db") as other:
        assert five_entries(other) == entries
        serial = run(other, corpus, one_by_one, max_tokens_message=500)
        assert len(one_by_one.alone) == 2 * len(firsts)
        assert sorted(serial.confirmed) == sorted(report.confirmed)
        assert (serial.retries, serial.problems) == (report.retries, report.problems)

        def decided(glossary: GlossaryStore) -> list[tuple[Any, ...]]:
            rows = glossary.curation.curator_decisions()
            return sorted((r["entry_id"], r["decision"], r["reasoning"]) for r in rows)

        assert decided(other) == decided(store)


@pytest.mark.parametrize(
    "target", ["self", "unknown", "rejected_in_same_answer", "rejected_later_in_same_answer"]
)
def test_bad_merge_target_leaves_entry_tentative(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int], target: str
) -> None:
    source_id = entries["embers"]
    bad = {
        "self": decide(source_id, "MERGE", target_entry_id=f"E{source_id}"),
        "unknown": decide(source_id, "MERGE", target_entry_id="E999"),
        "rejected_in_same_answer": decide(
            source_id, "MERGE", target_entry_id=f"E{entries['door']}"
        ),
        "rejected_later_in_same_answer": decide(
            source_id, "MERGE", target_entry_id=f"E{entries['door']}"
        ),
    }[target]
    first = [bad]
    if target == "rejected_in_same_answer":
        first.insert(0, decide(entries["door"], "REJECT"))
    if target == "rejected_later_in_same_answer":  # judged against the whole answer
        first.append(decide(entries["door"], "REJECT"))
    chat = ScriptedChat(answer(*first), answer(bad))
    report = run(store, corpus, chat)
    assert len(chat.sent) == 2
    assert source_id in report.left_tentative
    assert store.glossary.get_entry(source_id).status == "tentative"
    assert store.provenance.for_entry(source_id) != []
    assert any(f"E{source_id}" in problem for problem in report.problems)


def test_decision_for_entry_not_under_review_is_ignored(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    outsider = store.glossary.create_entry(AGENT, "Old Name", "Known.", status="confirmed")
    chat = ScriptedChat(answer(decide(outsider.id, "REJECT")))
    report = run(store, corpus, chat)
    assert store.glossary.get_entry(outsider.id).status == "confirmed"
    assert report.rejected == []
    assert any("not one of the entries under review" in p for p in report.problems)


def test_unmentioned_entries_stay_tentative_without_retry(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    chat = ScriptedChat(answer(decide(entries["kethra"], "CONFIRM")))
    report = run(store, corpus, chat)
    assert len(chat.sent) == 1
    assert report.confirmed == [entries["kethra"]]
    assert sorted(report.left_tentative) == sorted(
        entry_id for name, entry_id in entries.items() if name != "kethra"
    )


def test_undecided_entries_are_not_sent_again_until_a_thread_changes_them(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    run(store, corpus, ScriptedChat(answer(decide(entries["kethra"], "CONFIRM"))))
    kept = {
        row["entry_id"]
        for row in store.curation.curator_decisions()
        if row["decision"] == "TENTATIVE"
    }
    assert kept == {i for name, i in entries.items() if name != "kethra"}
    later = Actor("agent", run_id="run-a", thread_id=200, scene_id="200#200")
    store.glossary.add_provenance(later, entries["door"], [source(200, thread_id=200)])
    chat = ScriptedChat()
    report = curate_thread(
        store, corpus, chat, thread=corpus.thread(200), actor=Actor("curator", thread_id=200)
    )
    assert report.reviewed == [entries["door"]]  # touched in thread 200
    assert sorted(report.unchanged) == sorted(kept - {entries["door"]})
    (messages,) = chat.sent
    assert sum(line.startswith("- [E") for line in messages[-1]["content"].splitlines()) == 1


def test_entries_left_by_a_malformed_answer_come_up_again(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    run(store, corpus, ScriptedChat("no json", "still none"))
    assert store.curation.curator_decisions() == []
    report = curate_thread(
        store,
        corpus,
        ScriptedChat(),
        thread=corpus.thread(200),
        actor=Actor("curator", thread_id=200),
    )
    assert sorted(report.reviewed) == sorted(entries.values())


def test_entries_beyond_the_cap_are_deferred(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    chat = ScriptedChat()
    report = run(store, corpus, chat, max_entries=2)
    assert len(report.reviewed) == 2
    assert sorted(report.left_tentative) == sorted(entries.values())


def test_the_last_threads_curation_reviews_every_tentative_entry(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    """What the cap defers waits for the next thread's curation; the story's last thread has
    none, so it reviews them all."""
    last = max(corpus.threads(), key=lambda thread: thread.position)
    report = curate_thread(store, corpus, ScriptedChat(), thread=last, actor=CURATOR, max_entries=2)
    assert sorted(report.reviewed) == sorted(entries.values())


def test_a_book_told_in_one_chapter_leaves_no_entry_unreviewed(tmp_path: Path) -> None:
    """Daddy-Long-Legs is one chapter (letters under no heading): the offline run kept 191 of
    its 244 entries tentative, never shown to the curator, since a curation reviews at most 60
    and defers the rest to a next thread there was not. A one-chapter book of 120 names: every
    entry the run leaves tentative, the curator was asked about and left so."""
    names = [a + b for a in ("Zar", "Vel", "Quor", "Thal", "Mir", "Brek", "Ost", "Yl", "Dun",
             "Fey", "Gorm", "Hask") for b in ("ven", "dris", "kath", "mol", "ith", "une", "gar",
             "seph", "olt", "ax")]  # fmt: skip
    paragraphs = [
        f"{name} walked with {names[(i + 7) % len(names)]} along the river road at dusk, and "
        f"{name} said that the ferry would not wait for anyone who came late tonight."
        for i, name in enumerate(names)
    ]
    book, corpus_db, db = tmp_path / "one.txt", tmp_path / "one.corpus.db", tmp_path / "one.db"
    book.write_text("CHAPTER I\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
    assert main(["import", str(book), "--out", str(corpus_db)]) == 0
    assert main(["run", "--offline", "--corpus", str(corpus_db), "--db", str(db)]) == 0
    with GlossaryStore(db) as glossary:
        live = [e for e in glossary.glossary.entries() if not e.deleted]
        decided = {row["entry_id"] for row in glossary.curation.curator_decisions()}
        assert len(live) > 60
        assert {e.id for e in live if e.status == "tentative"} <= decided
        assert len(decided) == len(live)


def test_no_tentative_entries_makes_no_call(store: GlossaryStore, corpus: Corpus) -> None:
    chat = ScriptedChat()
    report = run(store, corpus, chat)
    assert chat.sent == [] and report.reviewed == [] and report.calls == 0


# -- undo ----------------------------------------------------------------------------------------


def test_undo_confirm_restores_tentative_as_a_revision(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    run(store, corpus, ScriptedChat(answer(decide(entries["kethra"], "CONFIRM"))))
    (row,) = applied_decisions(store)
    count = len(store.history.revisions(entries["kethra"]))
    result = undo_decision(store, Actor("user"), row["id"], "too early")
    assert store.glossary.get_entry(entries["kethra"]).status == "tentative"
    assert len(store.history.revisions(entries["kethra"])) == count + 1
    assert result.entry_ids == [entries["kethra"]]
    (row,) = applied_decisions(store)
    assert row["undone_revision_id"] == result.revision_ids[-1]
    with pytest.raises(InputError, match="already undone"):
        undo_decision(store, Actor("user"), row["id"], "again")


def test_undo_revise_restores_previous_definition(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    guard = entries["guard"]
    run(store, corpus, ScriptedChat(answer(decide(guard, "REVISE", definition="New text."))))
    (row,) = applied_decisions(store)
    undo_decision(store, Actor("user"), row["id"], "wrong")
    entry = store.glossary.get_entry(guard)
    assert (entry.definition, entry.status) == ("Soldiers.", "tentative")


def test_undo_merge_restores_source_names_and_provenance(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    source_id, target_id = entries["embers"], entries["tithe"]
    merge = decide(source_id, "MERGE", target_entry_id=f"E{target_id}")
    run(store, corpus, ScriptedChat(answer(merge)))
    (row,) = applied_decisions(store)
    result = undo_decision(store, Actor("user"), row["id"], "different things")
    assert sorted(result.entry_ids) == sorted([source_id, target_id])
    source_entry = store.glossary.get_entry(source_id)
    assert (source_entry.status, source_entry.merged_into) == ("tentative", None)
    assert [p.post_id for p in store.provenance.for_entry(source_id)] == [104]
    assert "Coal Toll" not in store.glossary.get_entry(target_id).aliases
    assert store.glossary.find_by_term("Coal Toll").id == source_id
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_undo_works_after_the_entry_changed_since(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    run(store, corpus, ScriptedChat(answer(decide(entries["kethra"], "CONFIRM"))))
    store.glossary.update_entry(AGENT, entries["kethra"], definition="A guide of the ash fields.")
    (row,) = applied_decisions(store)
    result = undo_decision(store, Actor("user"), row["id"], "late")
    entry = store.glossary.get_entry(entries["kethra"])
    assert (entry.status, entry.definition) == ("tentative", "A guide of the ash fields.")
    assert applied_decisions(store)[0]["undone_revision_id"] == result.revision_ids[-1]
    with pytest.raises(InputError, match="no curator decision 999"):
        undo_decision(store, Actor("user"), 999, "x")


# -- through the real client and the offline backend ---------------------------------------------


def test_offline_backend_through_chat_client_curates(
    store: GlossaryStore, corpus: Corpus, entries: dict[str, int]
) -> None:
    from terrarium_dagster.backends.offline import OfflineBackend
    from terrarium_dagster.context.prompts import SYSTEM_PROMPT
    from terrarium_dagster.model.client import ChatClient, ClientConfig

    client = ChatClient(
        ClientConfig(base_url="http://offline.invalid/v1", max_retries=0),
        transport=OfflineBackend(),
    )
    try:
        report = curate_thread(
            store,
            corpus,
            client.chat,
            thread=corpus.thread(100),
            actor=CURATOR,
            prefix_messages=[{"role": "system", "content": SYSTEM_PROMPT}],
        )
    finally:
        client.close()
    assert report.calls == 1 and report.prompt_tokens > 0
    assert report.problems == []
    assert entries["door"] in report.rejected  # a common word
    assert entries["tithe"] in report.confirmed  # two source posts
    decided = {row["entry_id"] for row in applied_decisions(store)}
    assert decided == set(report.confirmed) | set(report.rejected) | {s for s, _ in report.merged}
    for entry_id in report.left_tentative:
        assert store.glossary.get_entry(entry_id).status == "tentative"


def test_sample_quest_curation_stays_in_budget_and_keeps_checks_green(
    sample_db: Path, tmp_path: Path
) -> None:
    """The bundled quest's first thread: its gold terms (plus a duplicate spelling and a common
    word) curated by the offline backend with a tight message budget."""
    from terrarium_dagster.backends.offline import OfflineBackend
    from terrarium_dagster.corpus.sample import gold_terms
    from terrarium_dagster.curation.review_prompt import approx_tokens
    from terrarium_dagster.exports import build_export, run_checks
    from terrarium_dagster.model.client import ChatClient, ClientConfig

    budget = 1200
    with (
        Corpus(sample_db, url_template=EMBER_ROAD_URL) as quest,
        GlossaryStore(tmp_path / "sample.db") as glossary,
    ):
        first = quest.threads()[0]
        agent = Actor("agent", run_id="run-s", thread_id=first.id)
        gold = [term for term in gold_terms() if term.thread_id == first.id]
        for term in gold:
            glossary.glossary.create_entry(
                agent,
                term.term,
                term.note,
                aliases=term.aliases,
                provenance=[ProvenanceIn(post_id=term.first_post_id, thread_id=first.id)],
            )
        extra_post = gold[0].first_post_id
        duplicate = glossary.glossary.create_entry(
            agent,
            f"{gold[0].term} City",
            "The same place.",
            provenance=[ProvenanceIn(post_id=extra_post, thread_id=first.id)],
        )
        common = glossary.glossary.create_entry(
            agent,
            "window",
            "A window.",
            provenance=[ProvenanceIn(post_id=extra_post, thread_id=first.id)],
        )
        client = ChatClient(
            ClientConfig(base_url="http://offline.invalid/v1", max_retries=0),
            transport=OfflineBackend(),
        )
        sent: list[str] = []

        def chat(messages: list[dict[str, Any]]) -> Any:
            sent.append(messages[-1]["content"])
            return client.chat(messages)

        try:
            report = curate_thread(
                glossary,
                quest,
                chat,
                thread=first,
                actor=Actor("curator", run_id="run-s", thread_id=first.id),
                prefix_messages=PREFIX,
                max_tokens_message=budget,
            )
        finally:
            client.close()
        assert len(sent) > 1 and report.calls == len(sent)
        assert all(approx_tokens(message) <= budget for message in sent)
        assert len(report.reviewed) == len(gold) + 2
        assert common.id in report.rejected
        assert f">>{gold[0].first_post_id} (QM, first appearance)" in "".join(sent)
        assert duplicate.id in report.reviewed
        assert glossary.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        results = run_checks(glossary.glossary.entry_views(), quest)
        assert results["sources"].passed and results["unique_names"].passed
        assert results["provenance_posts"].passed
        glossary.progress.set_thread_state(
            first.id,
            thread_key=first.key,
            position=first.position,
            status="curated",
            end_revision_id=glossary.history.last_revision_id(),
        )
        export = build_export(glossary, quest, tmp_path / "export", as_of_thread=first.id)
        # the duplicate spelling is merged and the common word rejected: the glossary's entries
        # (what the wiki lists and every report counts) are the gold terms
        assert export.entries == len(gold)
        assert "wiki/html/index.html" in export.files
