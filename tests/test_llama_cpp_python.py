"""The client against llama-cpp-python's server with the 135M SmolLM2 model: what it does not
publish (no window, no tool capability, no chat-prompt count) is said once at start; its overflow
teaches the window; the history the engine keeps is one it accepts (it answers 500 to null content
beside tool calls). Skipped where its environment was not built (`bash .ci/llama-cpp-python`)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.server import probe_server
from terrarium_dagster.model.server_answers import ServerContextOverflow
from tests.support.llama_server import run_llama_cpp_python

pytestmark = pytest.mark.slow

SYSTEM = {"role": "system", "content": "You note the names in a story."}
USER = {"role": "user", "content": "The envoy Vaskari crossed the Ashfall at dawn."}
CALLED = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "glossary_search", "arguments": '{"query": "Vas'},
        }
    ],
}
ANSWERED = {"role": "tool", "tool_call_id": "c1", "content": "arguments are not valid JSON"}


def test_llama_cpp_python_is_found_overflows_teach_and_the_history_is_accepted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with run_llama_cpp_python(tmp_path, n_ctx=1024) as server:
        config = ClientConfig(base_url=server.url, max_retries=0, temperature=0.0)
        with ChatClient(config) as client, caplog.at_level(logging.INFO):
            info = probe_server(client)
            assert info.kind == "llama-cpp-python"
            assert info.window is None and info.tools is None and info.counting == "none"
            assert "estimated" in info.line() and "window not published" in info.line()
            assert client.tokenize([SYSTEM, USER]) is None, "estimated, without asking again"
            with pytest.raises(ServerContextOverflow) as caught:
                client.chat([SYSTEM, {"role": "user", "content": "word " * 1500}], max_tokens=8)
            assert caught.value.max_context_length == 1024
            assert caught.value.prompt_tokens and caught.value.prompt_tokens > 1024
            # null content beside tool calls, as the protocol allows, is a 500 here ...
            raw = [SYSTEM, USER, CALLED, ANSWERED]
            refused = httpx.post(server.url + "/chat/completions", json={"messages": raw})
            assert refused.status_code == 500
            # ... and what the client sends instead is taken
            result = client.chat(raw, max_tokens=4)
        assert result.prompt_tokens > 0
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
