"""The vLLM-protocol simulator: rendering, tokenizing, prefix-cache accounting, overflow, routes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from terrarium_dagster.context import parse_overflow
from terrarium_dagster.testing.simulator import (
    PrefixCache,
    SimulatedVLLM,
    completion_text,
    render_chat,
    tokenize_text,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "glossary_search",
            "description": "Search the glossary.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]


def echo(body: dict[str, Any]) -> dict[str, Any]:
    return {"content": "Done with this scene."}


def paragraph(seed: int, words: int = 200) -> str:
    return " ".join(f"word{(seed * 7919 + i * 104729) % 1000}" for i in range(words))


def chat(client: httpx.Client, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    return client.post(
        "/v1/chat/completions", json={"model": "m", "messages": messages, "tools": TOOLS, **extra}
    )


@pytest.fixture
def sim() -> SimulatedVLLM:
    return SimulatedVLLM(echo, max_model_len=4096, cache_blocks=1024)


@pytest.fixture
def client(sim: SimulatedVLLM) -> httpx.Client:
    with httpx.Client(transport=sim, base_url="http://sim.invalid") as client:
        yield client


def test_tokenizer_is_deterministic_lossless_and_about_four_chars_a_token() -> None:
    text = 'The Wyrmwood gate opened; >>1234 said "Kar\'vel" at 12:30.\n\nÉlan — 火 fire.'
    tokens = tokenize_text(text)
    assert "".join(tokens) == text
    assert tokenize_text(text) == tokens
    prose = paragraph(1, 400).replace("word", "stone ")
    assert 3.0 <= len(prose) / len(tokenize_text(prose)) <= 5.5


def test_template_renders_tools_calls_and_results_and_generation_prompt() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "glossary_search", "arguments": '{"query":"x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'},
    ]
    text = render_chat(messages, TOOLS)
    assert text.startswith("<|im_start|>system\nsys\n\n# Tools")
    assert '"name": "glossary_search"' in text and '<tool_response>\n{"ok":true}' in text
    assert text.endswith("<|im_start|>assistant\n")
    assert render_chat(messages, TOOLS) == text


def test_identical_prompt_is_cached_in_full_blocks_except_the_last_token(
    client: httpx.Client, sim: SimulatedVLLM
) -> None:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": paragraph(1)}]
    first = chat(client, messages).json()["usage"]
    second = chat(client, messages).json()["usage"]
    prompt = first["prompt_tokens"]
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert second["prompt_tokens"] == prompt
    assert second["prompt_tokens_details"]["cached_tokens"] == (prompt - 1) // 16 * 16
    assert sim.stats.calls == 2 and sim.stats.cached_tokens == (prompt - 1) // 16 * 16


def test_next_round_reuses_the_prompt_and_the_generated_answer() -> None:
    sim = SimulatedVLLM(lambda body: {"content": paragraph(9, 60)}, max_model_len=4096)
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": paragraph(2)}]
    with httpx.Client(transport=sim, base_url="http://sim.invalid") as client:
        first = chat(client, messages).json()
        answer = first["choices"][0]["message"]
        extended = [*messages, answer, {"role": "user", "content": "more"}]
        usage = chat(client, extended).json()["usage"]
    sequence = tokenize_text(render_chat(messages, TOOLS)) + tokenize_text(completion_text(answer))
    after = tokenize_text(render_chat(extended, TOOLS))
    assert after[: len(sequence)] == sequence  # the template renders the answer as generated
    assert usage["prompt_tokens_details"]["cached_tokens"] == len(sequence) // 16 * 16
    assert len(sequence) // 16 > first["usage"]["prompt_tokens"] // 16  # answer blocks count


def test_changed_early_message_misses_the_cache_from_the_change_on(
    client: httpx.Client, sim: SimulatedVLLM
) -> None:
    system = {"role": "system", "content": paragraph(3, 100)}
    chat(client, [system, {"role": "user", "content": paragraph(4)}])
    changed = chat(client, [system, {"role": "user", "content": "x " + paragraph(4)}]).json()
    head = len(tokenize_text(render_chat([system], TOOLS, add_generation_prompt=False)))
    head += len(tokenize_text("<|im_start|>user\n"))
    assert changed["usage"]["prompt_tokens_details"]["cached_tokens"] == head // 16 * 16


def test_short_prompt_below_one_block_is_never_cached(client: httpx.Client) -> None:
    messages = [{"role": "user", "content": "hi"}]
    chat(client, messages)
    usage = client.post("/v1/chat/completions", json={"messages": messages}).json()["usage"]
    assert usage["prompt_tokens"] < 16
    assert usage["prompt_tokens_details"]["cached_tokens"] == 0


def test_lru_eviction_forgets_the_least_recently_used_prompt() -> None:
    sim = SimulatedVLLM(echo, max_model_len=4096, cache_blocks=40)
    with httpx.Client(transport=sim, base_url="http://sim.invalid") as client:
        a = [{"role": "user", "content": paragraph(10)}]
        b = [{"role": "user", "content": paragraph(11)}]
        c = [{"role": "user", "content": paragraph(12)}]
        for messages in (a, b, c, a):  # no tools: the prompts share no block
            usage = client.post("/v1/chat/completions", json={"messages": messages}).json()
        again = usage["usage"]  # b came after a, c evicted a (and part of b)
    assert len(sim.cache) <= 40
    assert again["prompt_tokens_details"]["cached_tokens"] == 0


def test_eviction_takes_a_prompts_tail_before_its_prefix() -> None:
    cache = PrefixCache(block_size=4, capacity=6)
    first = [f"t{i}" for i in range(4 * 5 + 1)]  # 5 full blocks
    cache.lookup_and_insert(first)
    cache.lookup_and_insert([f"u{i}" for i in range(4 * 2 + 1)])  # 2 blocks: evicts 1 of first
    assert cache.lookup_and_insert(first) == 4 * 4  # the prefix survived, the tail went


def test_request_over_max_model_len_gets_vllms_400(
    client: httpx.Client, sim: SimulatedVLLM
) -> None:
    messages = [{"role": "user", "content": paragraph(5, 200)}]
    prompt = sim.count(messages, TOOLS)
    response = chat(client, messages, max_tokens=4096 - prompt + 1)
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "maximum context length is 4096 tokens" in message
    assert parse_overflow(message) == (4096, prompt)
    assert chat(client, messages, max_tokens=4096 - prompt).status_code == 200
    assert sim.stats.overflows == 1 and sim.stats.largest_request == 4096


def test_tokenize_counts_what_chat_usage_reports(client: httpx.Client) -> None:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": paragraph(6)}]
    counted = client.post("/tokenize", json={"messages": messages, "tools": TOOLS}).json()
    usage = chat(client, messages).json()["usage"]
    assert counted["count"] == usage["prompt_tokens"] == len(counted["tokens"])
    assert counted["max_model_len"] == 4096


def test_completion_tokens_count_content_and_tool_calls(client: httpx.Client) -> None:
    usage = chat(client, [{"role": "user", "content": "hi"}]).json()["usage"]
    assert usage["completion_tokens"] == len(tokenize_text("Done with this scene.<|im_end|>"))
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_wraps_an_inner_transport_and_rewrites_its_usage() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "offline"}]})
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "model": "offline",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    sim = SimulatedVLLM(httpx.MockTransport(handler), max_model_len=2048)
    with httpx.Client(transport=sim, base_url="http://sim.invalid") as client:
        models = client.get("/v1/models").json()["data"]
        payload = chat(client, [{"role": "user", "content": paragraph(7)}]).json()
    assert models == [{"id": "offline", "max_model_len": 2048}]
    assert payload["choices"][0]["message"]["content"] == "ok"
    assert payload["usage"]["prompt_tokens"] > 100
    assert payload["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    assert seen == ["/v1/models", "/v1/chat/completions"]


def test_callable_inner_without_models_gets_a_served_model(client: httpx.Client) -> None:
    data = client.get("/v1/models").json()["data"]
    assert data[0]["id"] == "simulated" and data[0]["max_model_len"] == 4096


def test_stats_dict_reports_uncached_prompt_tokens(
    client: httpx.Client, sim: SimulatedVLLM
) -> None:
    messages = [{"role": "user", "content": paragraph(8)}]
    chat(client, messages)
    chat(client, messages)
    stats = sim.stats.as_dict()
    assert stats["uncached_prompt_tokens"] == stats["prompt_tokens"] - stats["cached_tokens"]
    assert [call.first_line for call in sim.stats.log] == [paragraph(8)[:80]] * 2
    assert json.dumps(stats)
