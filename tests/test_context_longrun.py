"""A long synthetic run through the vLLM simulator: the budget holds for hundreds of scenes.

The run uses the real pieces of the context layer (ContextManager, ServerCounter fed by the
server's usage and /tokenize) against `SimulatedVLLM`, which renders, tokenizes and accounts
every request like vLLM would and refuses any request over `max_model_len` with a 400. The model
behind it is a small deterministic annotator written here (the project's offline backend is
tested on its own); it follows the prompt conventions: scenes get searches and creations, summary
tasks get summaries that cite the entry ids they were given, flushes get "nothing to record".
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from terrarium_dagster.context import (
    SYSTEM_PROMPT,
    CompactionEvent,
    CompactionPolicy,
    ContextManager,
    ContextState,
    ServerCounter,
    scene_message,
    tool_pair_problems,
)
from terrarium_dagster.context.prompts import canonical_json, parse_entry_refs
from terrarium_dagster.errors import ContextOverflowError
from terrarium_dagster.testing.simulator import SimulatedVLLM

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "glossary_search",
            "description": "Search the glossary by term, alias or definition words.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "glossary_create",
            "description": "Create a glossary entry with its source post.",
            "parameters": {
                "type": "object",
                "properties": {
                    "term": {"type": "string"},
                    "definition": {"type": "string"},
                    "post_id": {"type": "integer"},
                },
                "required": ["term", "definition", "post_id"],
            },
        },
    },
]

_WORDS = re.findall(
    r"\w+",
    "the a of and to in was with that for on his her they it as at by from were had but not "
    "river night road fire stone hall gate blood iron winter wind tower camp village forest "
    "sword bow horse cart guard scout elder priest merchant child soldier wall bridge field "
    "walked spoke watched gathered waited fought carried heard opened burned crossed raised",
)
_SYLLABLES = ("kar", "vel", "oth", "mir", "dun", "sha", "rek", "ilo", "gar", "thy", "bel", "zan")
_TERM = re.compile(r"\b[A-Z][a-z]+(?:[a-z]+)\b")


def invented_terms(rng: random.Random, count: int) -> list[str]:
    terms: set[str] = set()
    while len(terms) < count:
        parts = rng.sample(_SYLLABLES, rng.randint(2, 3))
        terms.add("".join(parts).capitalize())
    return sorted(terms)


@dataclass
class SyntheticScene:
    scene_id: str
    thread_id: int
    number: int
    count: int
    post_ids: list[int]
    story: str


def synthetic_corpus(
    *, threads: int, posts_per_thread: int, words_per_post: int, seed: int = 7
) -> list[SyntheticScene]:
    """Threads of scenes (runs of 1-5 posts) of filler prose sprinkled with invented terms."""
    rng = random.Random(seed)
    terms = invented_terms(rng, 120)
    scenes: list[SyntheticScene] = []
    post_id = 1000
    for t in range(threads):
        thread_id = post_id
        thread_scenes: list[tuple[list[int], str]] = []
        remaining = posts_per_thread
        while remaining > 0:
            size = min(remaining, rng.randint(1, 5))
            remaining -= size
            blocks = []
            ids = []
            for _ in range(size):
                words = [rng.choice(_WORDS) for _ in range(words_per_post)]
                for _ in range(3):
                    words[rng.randrange(len(words))] = rng.choice(terms[t * 4 : t * 4 + 12])
                ids.append(post_id)
                sentence = " ".join(words)
                blocks.append(f"[post {post_id}]\n{sentence[0].upper()}{sentence[1:]}.")
                post_id += 1
            thread_scenes.append((ids, "\n\n".join(blocks)))
        for number, (ids, story) in enumerate(thread_scenes, start=1):
            scenes.append(
                SyntheticScene(
                    scene_id=f"{thread_id}#{ids[0]}",
                    thread_id=thread_id,
                    number=number,
                    count=len(thread_scenes),
                    post_ids=ids,
                    story=story,
                )
            )
    return scenes


class Annotator:
    """A deterministic model: answers by the first line of the last user message."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        messages = body["messages"]
        last_user = next(m for m in reversed(messages) if m["role"] == "user")
        first_line = str(last_user["content"]).split("\n", 1)[0]
        if first_line.startswith("# Task: flush"):
            return {"content": "nothing to record"}
        if first_line.startswith("# Task:"):
            return {"content": self._summary(str(last_user["content"]))}
        if messages[-1]["role"] == "tool":
            return {"content": "Done."}
        return self._annotate(str(last_user["content"]))

    @staticmethod
    def _summary(instruction: str) -> str:
        entries = re.search(r"^entries: (.*)$", instruction, re.MULTILINE)
        scenes = re.search(r"^scene ids: (.*)$", instruction, re.MULTILINE)
        covered = scenes.group(1).split(", ") if scenes else []
        return (
            f"The party pressed on through {len(covered) or 'the'} scenes, meeting allies and "
            f"foes. Entries: {entries.group(1) if entries else '(none)'}."
        )

    @staticmethod
    def _annotate(scene_text: str) -> dict[str, Any]:
        known = scene_text.split("## Known entries", 1)[-1].split("## Story", 1)[0]
        story = scene_text.split("## Story", 1)[-1]
        post = re.search(r"\[post (\d+)\]", story)
        terms = [t for t in dict.fromkeys(_TERM.findall(story)) if t not in _WORDS_CAPS]
        new = [t for t in terms if f"] {t} " not in known][:2]
        calls = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": canonical_json(arguments)},
            }
            for index, (name, arguments) in enumerate(
                [("glossary_search", {"query": t}) for t in new]
                + [
                    (
                        "glossary_create",
                        {
                            "term": t,
                            "definition": f"{t}, a name met in the story.",
                            "post_id": int(post.group(1)) if post else 0,
                        },
                    )
                    for t in new
                ]
            )
        ]
        if not calls:
            return {"content": "Nothing new in this scene."}
        return {"content": None, "tool_calls": calls}


_WORDS_CAPS = {w.capitalize() for w in _WORDS}


@dataclass
class Glossary:
    entries: dict[str, int] = field(default_factory=dict)

    def execute(self, call: dict[str, Any]) -> tuple[str, int | None]:
        arguments = json.loads(call["function"]["arguments"])
        if call["function"]["name"] == "glossary_search":
            entry_id = self.entries.get(arguments["query"])
            hits = [{"entry_id": f"E{entry_id}", "term": arguments["query"]}] if entry_id else []
            return canonical_json({"hits": hits, "ok": True}), None
        term = arguments["term"]
        if term in self.entries:
            return canonical_json(
                {"error": f"{term} exists as E{self.entries[term]}", "ok": False}
            ), None
        self.entries[term] = len(self.entries) + 1
        return canonical_json({"entry_id": f"E{self.entries[term]}", "ok": True}), self.entries[
            term
        ]


@dataclass
class RunResult:
    sim: SimulatedVLLM
    manager: ContextManager
    events: list[CompactionEvent]
    story_tokens: int
    scenes: int
    requests: list[int]  # prompt + max_tokens of every request sent, by the server's count


def run_synthetic(
    scenes: list[SyntheticScene],
    *,
    budget: int,
    max_tokens: int = 512,
    reserve: int | None = None,
    policy: CompactionPolicy | None = None,
    cache_blocks: int = 8192,
    use_tokenize: bool = True,
) -> RunResult:
    """Drive the scenes through ContextManager and the simulator as the agent loop would."""
    annotator = Annotator()
    sim = SimulatedVLLM(annotator, max_model_len=budget, cache_blocks=cache_blocks)
    client = httpx.Client(transport=sim, base_url="http://sim.invalid")
    glossary = Glossary()
    requests: list[int] = []

    def chat(messages: list[dict[str, Any]], tool_choice: str = "auto") -> dict[str, Any]:
        response = client.post(
            "/v1/chat/completions",
            json={
                "model": "sim",
                "messages": messages,
                "tools": manager.sizes.tools,
                "tool_choice": tool_choice,
                "max_tokens": max_tokens,
            },
        )
        if response.status_code == 400:
            raise ContextOverflowError(response.json()["error"]["message"])
        response.raise_for_status()
        payload = response.json()
        requests.append(payload["usage"]["prompt_tokens"] + max_tokens)
        manager.sizes.observe(messages, payload["usage"]["prompt_tokens"])
        return payload["choices"][0]["message"]

    def tokenize(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
        response = client.post("/tokenize", json={"messages": messages, "tools": tools})
        return int(response.json()["count"])

    def summarizer(messages: list[dict[str, Any]]) -> str:
        manager.sizes.check(messages)
        return str(chat(messages, tool_choice="none").get("content") or "")

    def flusher(messages: list[dict[str, Any]]) -> None:
        manager.sizes.check(messages)
        chat(messages)

    events: list[CompactionEvent] = []
    manager = ContextManager(
        ContextState(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        budget=budget,
        max_tokens=max_tokens,
        counter=ServerCounter(tokenize if use_tokenize else None),
        summarizer=summarizer,
        flusher=flusher,
        recorder=events.append,
        policy=policy,
    )
    reserve = 2 * max_tokens if reserve is None else reserve
    story_tokens = 0
    for index, scene in enumerate(scenes):
        story_tokens += sim.count([{"role": "user", "content": scene.story}]) - 6
        known = [
            f"- [E{entry_id}] {term} [tentative]: {term}, a name met in the story."
            for term, entry_id in glossary.entries.items()
            if term in scene.story
        ]
        text = scene_message(
            scene_id=scene.scene_id,
            thread_id=scene.thread_id,
            title=f"Thread {scene.thread_id}",
            scene_number=scene.number,
            scene_count=scene.count,
            first_post_id=scene.post_ids[0],
            last_post_id=scene.post_ids[-1],
            known_entries=known,
            story=scene.story,
        )
        manager.prepare(
            text, thread_id=scene.thread_id, scene_id=scene.scene_id, reserve_tokens=reserve
        )
        scene_messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        touched: list[int] = []
        for _ in range(4):
            plan = manager.prepare_call(scene_messages, thread_id=scene.thread_id)
            assert not tool_pair_problems(plan.messages)
            try:
                answer = chat(plan.messages)
            except ContextOverflowError as exc:
                plan = manager.on_overflow(
                    plan.scene_messages, exc, thread_id=scene.thread_id, scene_id=scene.scene_id
                )
                answer = chat(plan.messages)
            scene_messages = [*plan.scene_messages, answer]
            if not answer.get("tool_calls"):
                break
            for call in answer["tool_calls"]:
                result, entry_id = glossary.execute(call)
                if entry_id is not None:
                    touched.append(entry_id)
                scene_messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": result}
                )
        manager.end_scene(scene.scene_id, scene.thread_id, scene_messages, entry_ids=touched)
        is_last = index + 1 == len(scenes) or scenes[index + 1].thread_id != scene.thread_id
        if is_last:
            manager.end_thread(scene.thread_id)
    client.close()
    return RunResult(sim, manager, events, story_tokens, len(scenes), requests)


def _entry_ids_in_context(state: ContextState) -> set[int]:
    text = state.story_so_far + "".join(s.text for s in state.summaries)
    text += "".join(str(m.get("content") or "") for m in state.history)
    return set(parse_entry_refs(text))


@pytest.fixture(scope="module", params=["tokenize", "usage-only"])
def long_run(request: pytest.FixtureRequest) -> Iterator[RunResult]:
    """Hundreds of scenes; exact counts from /tokenize, or only from the calls' usage."""
    scenes = synthetic_corpus(threads=12, posts_per_thread=60, words_per_post=90)
    yield run_synthetic(
        scenes, budget=8192, max_tokens=512, use_tokenize=request.param == "tokenize"
    )


def test_long_run_never_sends_a_request_over_the_budget(long_run: RunResult) -> None:
    assert long_run.scenes >= 200
    assert long_run.sim.stats.overflows == 0
    assert max(long_run.requests) <= 8192
    assert long_run.sim.stats.largest_request <= 8192


def test_long_run_compacts_with_every_summary_tier(long_run: RunResult) -> None:
    tiers = {event.tier for event in long_run.events}
    assert {"summarize_chunk", "fold_thread", "fold_story"} <= tiers
    assert not any(event.fallback for event in long_run.events)
    dropping = [e for e in long_run.events if e.tier in ("summarize_chunk", "fold_thread")]
    assert all(event.tokens_after < event.tokens_before for event in dropping)


def test_long_run_keeps_every_written_entry_id_in_summaries(long_run: RunResult) -> None:
    state = long_run.manager.state
    recorded = set(state.story_entry_ids)
    for summary in state.summaries:
        recorded |= set(summary.entry_ids)
    for span in state.scenes:
        recorded |= set(span.entry_ids)
    written = {i for event in long_run.events for i in event.entry_ids} | recorded
    assert written <= recorded
    # the live summaries' texts name their entry ids (the story so far is capped, not exhaustive)
    for summary in state.summaries:
        assert set(summary.entry_ids) <= _entry_ids_in_context(state)


def test_long_run_state_round_trips_through_json(long_run: RunResult) -> None:
    state = long_run.manager.state
    text = state.to_json()
    assert ContextState.from_json(text).to_json() == text
