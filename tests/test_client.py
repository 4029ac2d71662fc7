"""The vLLM client against a real HTTP server on 127.0.0.1 speaking vLLM's API."""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from pydantic import ValidationError

from terrarium_dagster.errors import AgentError, ConfigError, ContextOverflowError, Interrupted
from terrarium_dagster.model.client import (
    ChatClient,
    ClientConfig,
    backoff_delay,
    parse_retry_after,
)
from terrarium_dagster.model.conversation_checks import validate_messages
from terrarium_dagster.model.protocol import (
    ChatMessage,
    ChatResponse,
    Usage,
    assistant_message_dict,
)
from terrarium_dagster.model.server_answers import ServerContextOverflow, parse_context_overflow
from tests.support.vllm_server import (
    Fault,
    Reply,
    ScriptedVLLM,
    overflow_message,
    run_vllm_server,
    vllm_server_fixture,  # noqa: F401 (registers the vllm_server fixture)
)

SYSTEM = {"role": "system", "content": "You annotate a story."}
USER = {"role": "user", "content": "# Scene 1#2\nThe Ashfall came."}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "glossary_search",
            "description": "Search the glossary.",
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
            "description": "Create an entry.",
            "parameters": {"type": "object", "properties": {"term": {"type": "string"}}},
        },
    },
]


class RecordingSleep:
    """A sleep that only remembers how long it was asked to wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class HighestRandom(random.Random):
    """Full jitter at its ceiling: uniform(a, b) returns (almost) b."""

    def random(self) -> float:
        return 1.0 - 1e-12


def make_client(
    server: ScriptedVLLM, sleep: RecordingSleep | None = None, **options: Any
) -> ChatClient:
    settings: dict[str, Any] = {"base_url": server.url, "timeout_s": 5.0, "max_retries": 3}
    settings.update(options)
    return ChatClient(ClientConfig(**settings), sleep=sleep or RecordingSleep())


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def client(vllm_server: ScriptedVLLM, sleep: RecordingSleep) -> Iterator[ChatClient]:
    with make_client(vllm_server, sleep) as chat_client:
        yield chat_client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- configuration and models ----------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_base_url_with_or_without_v1_reaches_the_same_server(
    vllm_server: ScriptedVLLM, suffix: str
) -> None:
    config = ClientConfig(base_url=vllm_server.url + suffix)
    assert config.root_url == vllm_server.url
    assert config.api_url == vllm_server.url + "/v1"
    with ChatClient(config) as chat_client:
        assert [model.id for model in chat_client.models()] == ["test-model"]


def test_config_rejects_a_url_without_scheme_and_reserved_extra_body_keys() -> None:
    with pytest.raises(ValidationError, match="http"):
        ClientConfig(base_url="localhost:8000")
    with pytest.raises(ValidationError, match="messages"):
        ClientConfig(base_url="http://h", extra_body={"messages": []})


def test_resolve_model_returns_the_configured_model_with_its_max_model_len(
    vllm_server: ScriptedVLLM,
) -> None:
    vllm_server.models.append(("qwen3-8b", 40960))
    with make_client(vllm_server, model="qwen3-8b") as chat_client:
        info = chat_client.resolve_model()
    assert (info.id, info.max_model_len) == ("qwen3-8b", 40960)


def test_resolve_model_without_configured_model_takes_the_first_served(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.max_model_len = 8192
    vllm_server.models.append(("other", None))
    info = client.resolve_model()
    assert (info.id, info.max_model_len) == ("test-model", 8192)
    client.chat([SYSTEM, USER])
    assert vllm_server.chat_bodies[0]["model"] == "test-model"


def test_resolve_model_unknown_raises_config_error_naming_served_models(
    vllm_server: ScriptedVLLM,
) -> None:
    vllm_server.models.append(("qwen3-8b", 40960))
    with (
        make_client(vllm_server, model="llama") as chat_client,
        pytest.raises(ConfigError, match=r"'llama'.*'test-model', 'qwen3-8b'"),
    ):
        chat_client.resolve_model()


# --- chat: parsing ---------------------------------------------------------------------------


def test_chat_parses_tool_calls_finish_reason_and_usage(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.script(
        Reply(
            tool_calls=[
                ("glossary_search", '{"query": "Ashfall"}', "call-1"),
                ("glossary_create", '{"term": "Ashfall"}'),
            ],
            prompt_tokens=120,
            completion_tokens=30,
        )
    )
    result = client.chat([SYSTEM, USER], tools=TOOLS)
    assert result.finish_reason == "tool_calls"
    assert result.attempts == 1
    assert result.latency_ms > 0
    assert result.model == "test-model"
    calls = result.tool_calls
    assert next((call.id, call.function.name) for call in calls) == ("call-1", "glossary_search")
    assert calls[1].function.name == "glossary_create"
    assert calls[1].id.startswith("chatcmpl-tool-")
    assert json.loads(calls[0].function.arguments) == {"query": "Ashfall"}
    assert (result.prompt_tokens, result.completion_tokens) == (120, 30)
    assert result.usage.total_tokens == 150


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content", "both"])
def test_chat_reads_reasoning_from_either_field_name(
    vllm_server: ScriptedVLLM, client: ChatClient, field: str
) -> None:
    vllm_server.script(Reply(content="ok", reasoning="The Ashfall is new.", reasoning_field=field))
    result = client.chat([SYSTEM, USER])
    assert result.reasoning == "The Ashfall is new."
    assert result.content == "ok"


def test_cached_tokens_are_read_when_the_server_reports_them(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.script(Reply(cached_tokens=96, prompt_tokens=128))
    result = client.chat([SYSTEM, USER])
    assert (result.prompt_tokens, result.cached_tokens) == (128, 96)


def test_cached_tokens_are_zero_when_prompt_tokens_details_is_absent(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.script(Reply())
    result = client.chat([SYSTEM, USER])
    assert vllm_server.requests  # the server did answer
    assert result.usage.prompt_tokens_details is None
    assert result.cached_tokens == 0
    assert Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2).cached_tokens == 0


def test_model_misbehaviour_comes_back_unchanged_for_the_loop_to_judge(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.script(
        Fault.bad_arguments("glossary_create", '{"term": "Ash'),
        Fault.unknown_tool("summon_dragon"),
        Fault.empty_reply(),
        Fault.empty_reply(null_content=True),
    )
    bad = client.chat([SYSTEM, USER], tools=TOOLS)
    assert bad.tool_calls[0].function.arguments == '{"term": "Ash'
    assert client.chat([SYSTEM, USER], tools=TOOLS).tool_calls[0].function.name == "summon_dragon"
    empty = client.chat([SYSTEM, USER], tools=TOOLS)
    assert (empty.content, empty.tool_calls) == ("", [])
    null = client.chat([SYSTEM, USER], tools=TOOLS)
    assert (null.content, null.tool_calls) == (None, [])


# --- chat: what is sent ----------------------------------------------------------------------


@pytest.mark.parametrize("thinking", [True, False])
def test_enable_thinking_is_sent_as_chat_template_kwargs(
    vllm_server: ScriptedVLLM, thinking: bool
) -> None:
    with make_client(vllm_server, enable_thinking=thinking) as chat_client:
        chat_client.chat([SYSTEM, USER])
    assert vllm_server.chat_bodies[0]["chat_template_kwargs"] == {"enable_thinking": thinking}


def test_chat_template_kwargs_are_absent_when_thinking_is_unset(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    client.chat([SYSTEM, USER])
    body = vllm_server.chat_bodies[0]
    assert "chat_template_kwargs" not in body
    assert "top_p" not in body and "seed" not in body and "tools" not in body


def test_request_body_is_sorted_compact_json_with_the_configured_sampling(
    vllm_server: ScriptedVLLM,
) -> None:
    options = {"temperature": 0.3, "top_p": 0.9, "seed": 7, "max_tokens": 512}
    extra = {"extra_body": {"repetition_penalty": 1.05}}
    with make_client(vllm_server, **options, **extra) as chat_client:
        chat_client.chat([SYSTEM, USER], tools=TOOLS, tool_choice="auto", max_tokens=256)
    request = vllm_server.chat_requests[0]
    canonical = json.dumps(
        request.json, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode()
    assert request.body == canonical
    assert request.headers["content-type"] == "application/json"
    body = request.json
    assert body["max_tokens"] == 256
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.3, 0.9, 7)
    assert body["tool_choice"] == "auto" and body["tools"] == TOOLS
    assert body["repetition_penalty"] == 1.05
    assert body["stream"] is False


def test_key_order_of_the_callers_dicts_does_not_change_the_bytes(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    client.chat([SYSTEM, USER], tools=TOOLS)
    reordered = [dict(reversed(list(message.items()))) for message in (SYSTEM, USER)]
    tools = [dict(reversed(list(tool.items()))) for tool in TOOLS]
    client.chat(reordered, tools=tools)
    first, second = vllm_server.chat_requests
    assert first.body == second.body


def test_reply_appended_to_history_carries_only_standard_keys(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.script(
        Reply(
            content=None,
            tool_calls=[("glossary_search", '{"query": "Ashfall"}', "call-1")],
            reasoning="thinking...",
            reasoning_field="both",
        ),
        Reply(content="Recorded."),
    )
    first = client.chat([SYSTEM, USER], tools=TOOLS)
    history = [SYSTEM, USER, assistant_message_dict(first.message)]
    history.append({"role": "tool", "tool_call_id": "call-1", "content": '{"ok":true}'})
    client.chat(history, tools=TOOLS)
    sent = vllm_server.chat_bodies[1]["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": "",  # not null: llama-cpp-python refuses null
        "tool_calls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {"name": "glossary_search", "arguments": '{"query": "Ashfall"}'},
            }
        ],
    }
    assert all(
        set(message) <= {"role", "content", "tool_calls", "tool_call_id"} for message in sent
    )


def test_api_key_is_sent_as_bearer_token(vllm_server: ScriptedVLLM) -> None:
    vllm_server.api_key = "sekret"
    with make_client(vllm_server, api_key="sekret") as chat_client:
        assert chat_client.chat([SYSTEM, USER]).content == "done"
    assert vllm_server.chat_requests[0].headers["authorization"] == "Bearer sekret"
    assert "sekret" not in repr(chat_client.config)


def test_wrong_api_key_is_an_agent_error_without_retry(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep
) -> None:
    vllm_server.api_key = "sekret"
    with (
        make_client(vllm_server, sleep, api_key="wrong") as chat_client,
        pytest.raises(AgentError, match="HTTP 401: Unauthorized"),
    ):
        chat_client.chat([SYSTEM, USER])
    assert len(vllm_server.requests) == 1 and sleep.delays == []


# --- message validation ----------------------------------------------------------------------

CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "glossary_search", "arguments": "{}"},
}


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([SYSTEM, USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}], "call-1"),
        (
            [SYSTEM, USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}, USER],
            "has no tool result",
        ),
        ([SYSTEM, USER, {"role": "tool", "tool_call_id": "x", "content": "{}"}], "orphan"),
        ([USER, SYSTEM], "not first"),
        ([SYSTEM, SYSTEM, USER], "2 system messages"),
        ([USER], "no system message"),
        ([SYSTEM, {**USER, "reasoning": "secret"}], "non-standard keys: reasoning"),
        (
            [SYSTEM, USER, {"role": "assistant", "content": "x", "reasoning_content": "y"}],
            "non-standard keys: reasoning_content",
        ),
        ([SYSTEM, {"role": "narrator", "content": "x"}], "unknown role"),
        ([SYSTEM, {"role": "user", "content": None}], "content must be a string"),
        ([], "empty"),
    ],
)
def test_malformed_conversations_are_refused_before_sending(
    vllm_server: ScriptedVLLM, client: ChatClient, messages: list[dict[str, Any]], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        client.chat(messages)
    assert vllm_server.chat_requests == []


def test_validation_lists_every_problem_at_once() -> None:
    assistant = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    orphan = {"role": "tool", "tool_call_id": "nope", "content": "{}"}
    with pytest.raises(ValueError) as caught:
        validate_messages([USER, SYSTEM, assistant, orphan])
    text = str(caught.value)
    assert "not first" in text and "orphan" in text and "'call-1'" in text


def test_answered_tool_calls_pass_and_fragments_can_be_checked_alone() -> None:
    assistant = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    result = {"role": "tool", "tool_call_id": "call-1", "content": "{}"}
    validate_messages([SYSTEM, USER, assistant, result, {"role": "assistant", "content": "ok"}])
    validate_messages([result, USER], complete=False)  # a fragment, e.g. for counting


# --- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        Fault.server_error("worker restarting"),
        Fault.unavailable(),
        Fault.http(502),
        Fault.rate_limited(retry_after=None),
        Fault.drop(),
        Fault.timeout(delay_s=5.0),
    ],
    ids=["500", "503", "502", "429", "dropped-connection", "read-timeout"],
)
def test_transient_failure_is_retried_then_succeeds(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep, fault: Fault
) -> None:
    # a 500 is transient while its message changes (the same one twice is not: see below)
    restarted = Fault.server_error("worker back, cache cold")
    second = restarted if (fault.kind, fault.status) == ("http", 500) else fault
    vllm_server.script(fault, second, Reply(content="recovered"))
    with make_client(vllm_server, sleep, timeout_s=0.5) as chat_client:
        result = chat_client.chat([SYSTEM, USER])
    assert result.content == "recovered"
    assert result.attempts == 3
    assert len(vllm_server.chat_requests) == 3
    assert len(sleep.delays) == 2
    assert len(result.failed_attempts) == 2, "each retried request is reported, to be recorded"
    assert all(attempt.outcome for attempt in result.failed_attempts)


def test_the_same_500_twice_for_the_same_body_stops_with_the_whole_message(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep
) -> None:
    # llama-cpp-python's 500 for a message it cannot take: the cause comes last in a long text
    cause = "Input should be a valid string: messages.2.content"
    message = "Traceback (most recent call last): " + "frame; " * 120 + cause
    vllm_server.script(*[Fault.server_error(message)] * 6)
    with (
        make_client(vllm_server, sleep) as chat_client,
        pytest.raises(AgentError) as caught,
    ):
        chat_client.chat([SYSTEM, USER])
    assert len(vllm_server.chat_requests) == 2, "asked once more, not five times"
    assert "not a passing fault" in str(caught.value)
    assert str(caught.value).endswith(cause), "the whole message, its cause included"
    assert len(caught.value.failed_attempts) == 1


def test_a_4xx_is_not_retried_and_shows_the_whole_message(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep
) -> None:
    message = "Invalid tool call arguments: " + "x" * 900 + " (expected an object)"
    vllm_server.script(Fault.bad_request(message))
    with make_client(vllm_server, sleep) as chat_client, pytest.raises(AgentError) as caught:
        chat_client.chat([SYSTEM, USER])
    assert len(vllm_server.chat_requests) == 1
    assert str(caught.value).endswith("(expected an object)")


def test_a_call_that_fails_carries_the_attempts_it_retried(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep
) -> None:
    vllm_server.script(Fault.malformed_json(), Fault.server_error(), *[Fault.unavailable()] * 4)
    with (
        make_client(vllm_server, sleep, max_retries=3) as chat_client,
        pytest.raises(AgentError) as caught,
    ):
        chat_client.chat([SYSTEM, USER])
    outcomes = [getattr(attempt, "outcome", "") for attempt in caught.value.failed_attempts]
    # the malformed reply, then the 500 and two 503s retried; the last 503 is the error itself
    assert len(outcomes) == 4 == len(vllm_server.chat_requests) - 1
    assert "malformed response" in outcomes[0] and "HTTP 500" in outcomes[1]


def test_each_retry_is_logged_on_one_line(
    vllm_server: ScriptedVLLM, client: ChatClient, caplog: pytest.LogCaptureFixture
) -> None:
    vllm_server.script(Fault.unavailable("engine restarting"), Reply())
    with caplog.at_level(logging.WARNING, logger="terrarium_dagster.model.client"):
        client.chat([SYSTEM, USER])
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1
    assert "HTTP 503: engine restarting" in lines[0] and "retry 1 of 3" in lines[0]


def test_backoff_doubles_up_to_the_cap_at_the_jitter_ceiling(vllm_server: ScriptedVLLM) -> None:
    sleep = RecordingSleep()
    vllm_server.script(*[Fault.unavailable()] * 5, Reply())
    config = ClientConfig(
        base_url=vllm_server.url, max_retries=5, backoff_initial_s=0.5, backoff_max_s=3.0
    )
    with ChatClient(config, sleep=sleep, rng=HighestRandom()) as chat_client:
        assert chat_client.chat([SYSTEM, USER]).attempts == 6
    assert sleep.delays == pytest.approx([0.5, 1.0, 2.0, 3.0, 3.0])


def test_full_jitter_stays_within_zero_and_the_exponential_ceiling() -> None:
    rng = random.Random(1234)
    for retry in range(1, 9):
        ceiling = min(10.0, 0.25 * 2 ** (retry - 1))
        samples = [backoff_delay(retry, 0.25, 10.0, rng) for _ in range(200)]
        assert all(0.0 <= delay <= ceiling for delay in samples)
        assert max(samples) > 0.5 * ceiling  # jitter spreads over the range, not stuck at 0


def test_retry_after_is_honoured_and_capped(vllm_server: ScriptedVLLM) -> None:
    sleep = RecordingSleep()
    http_date = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    vllm_server.script(
        Fault.rate_limited(retry_after=2),
        Fault.rate_limited(retry_after=600),
        Fault.rate_limited(retry_after=http_date),
        Reply(),
    )
    with make_client(vllm_server, sleep, backoff_max_s=10.0) as chat_client:
        assert chat_client.chat([SYSTEM, USER]).attempts == 4
    assert sleep.delays == [2.0, 10.0, 10.0]


def test_parse_retry_after_reads_seconds_and_dates() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 01 Jan 2025 00:00:05 GMT", now=now) == 5.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_exhausted_retries_name_the_last_cause_and_the_attempts(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep
) -> None:
    vllm_server.script(*[Fault.unavailable("engine is sleeping")] * 3)
    with (
        make_client(vllm_server, sleep, max_retries=2) as chat_client,
        pytest.raises(AgentError) as caught,
    ):
        chat_client.chat([SYSTEM, USER])
    message = str(caught.value)
    assert "after 3 attempts" in message and "HTTP 503: engine is sleeping" in message
    assert len(vllm_server.chat_requests) == 3
    assert len(sleep.delays) == 2


def test_connection_refused_is_an_agent_error_after_retries() -> None:
    sleep = RecordingSleep()
    config = ClientConfig(base_url=f"http://127.0.0.1:{free_port()}", max_retries=2)
    with (
        ChatClient(config, sleep=sleep) as chat_client,
        pytest.raises(AgentError, match=r"after 3 attempts; last error: cannot connect"),
    ):
        chat_client.models()
    assert len(sleep.delays) == 2


def test_models_endpoint_is_retried_too(vllm_server: ScriptedVLLM, client: ChatClient) -> None:
    vllm_server.fail_next("/v1/models", Fault.unavailable())
    assert client.resolve_model().id == "test-model"
    assert len(vllm_server.requests_to("/v1/models")) == 2


# --- errors that are not retried -------------------------------------------------------------


@pytest.mark.parametrize("style", ["v0.18", "v0.10", "v0.10-max-tokens", "v0.9", "renderer"])
def test_context_overflow_raises_without_retry_with_parsed_numbers(
    vllm_server: ScriptedVLLM, sleep: RecordingSleep, style: str
) -> None:
    vllm_server.max_model_len = 4096
    vllm_server.script(Fault.context_overflow(style=style, prompt_tokens=4000))  # type: ignore[arg-type]
    with (
        make_client(vllm_server, sleep, max_tokens=500) as chat_client,
        pytest.raises(ContextOverflowError) as caught,
    ):
        chat_client.chat([SYSTEM, USER])
    error = caught.value
    assert isinstance(error, ServerContextOverflow)
    assert error.status == 400
    assert error.max_context_length == 4096
    assert error.prompt_tokens == 4000
    assert error.requested_tokens in (4000, 4500)  # v0.10 states only the prompt
    assert "4096" in str(error)
    assert len(vllm_server.chat_requests) == 1
    assert sleep.delays == []


def test_server_refuses_a_prompt_over_its_window_like_vllm(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.max_model_len = 300
    vllm_server.script(Reply(content="never sent"))
    messages = [SYSTEM, {"role": "user", "content": "word " * 200}]
    with pytest.raises(ServerContextOverflow) as caught:
        client.chat(messages, max_tokens=100)
    prompt = vllm_server.count_tokens({"messages": messages})
    assert caught.value.prompt_tokens == prompt
    assert caught.value.requested_tokens == prompt + 100
    assert vllm_server.pending_steps == 1  # the script was not consumed


def test_parse_context_overflow_reads_every_wording() -> None:
    for style in ("v0.18", "v0.10-max-tokens", "v0.9", "renderer"):
        assert parse_context_overflow(overflow_message(style, 32768, 32000, 1000)) == (  # type: ignore[arg-type]
            32768,
            33000,
            32000,
        )
    assert parse_context_overflow(overflow_message("v0.10", 32768, 33000, 0)) == (
        32768,
        33000,
        33000,
    )
    assert parse_context_overflow(overflow_message("decoder", 8192, 8825, 0)) == (8192, 8825, 8825)
    chars = (
        "This model's maximum context length is 8192 tokens. However, you requested 64 output "
        "tokens and your prompt contains 100000 characters (more than 81280 characters, which "
        "is the upper bound for 8128 input tokens)."
    )
    assert parse_context_overflow(chars) == (8192, None, None)
    assert parse_context_overflow("max_tokens=9000 cannot be greater than max_model_len") is None
    assert parse_context_overflow("The model `x` does not exist.") is None


def test_other_bad_request_is_an_agent_error_without_retry(
    vllm_server: ScriptedVLLM, client: ChatClient, sleep: RecordingSleep
) -> None:
    vllm_server.script(Fault.bad_request("tool_choice 'required' is not supported"))
    with pytest.raises(AgentError, match="HTTP 400: tool_choice 'required' is not supported") as e:
        client.chat([SYSTEM, USER])
    assert not isinstance(e.value, ContextOverflowError)
    assert len(vllm_server.chat_requests) == 1 and sleep.delays == []


def test_unknown_model_is_an_agent_error_with_the_server_message(vllm_server: ScriptedVLLM) -> None:
    with (
        make_client(vllm_server, model="llama") as chat_client,
        pytest.raises(AgentError, match="HTTP 404: The model `llama` does not exist"),
    ):
        chat_client.chat([SYSTEM, USER])


@pytest.mark.parametrize(
    ("fault", "detail"),
    [(Fault.malformed_json(), "not JSON"), (Fault.bad_schema(), "choices")],
    ids=["truncated-json", "missing-fields"],
)
def test_one_malformed_response_is_asked_again_like_a_transient_fault(
    vllm_server: ScriptedVLLM, client: ChatClient, fault: Fault, detail: str
) -> None:
    vllm_server.script(fault, Reply(content="fine"))
    assert client.chat([SYSTEM, USER]).content == "fine"
    assert len(vllm_server.chat_requests) == 2


@pytest.mark.parametrize(
    ("fault", "detail"),
    [(Fault.malformed_json(), "not JSON"), (Fault.bad_schema(), "choices")],
    ids=["truncated-json", "missing-fields"],
)
def test_a_persistently_malformed_response_is_one_agent_error(
    vllm_server: ScriptedVLLM, client: ChatClient, fault: Fault, detail: str
) -> None:
    attempts = client.config.max_retries + 1
    vllm_server.script(*[fault] * attempts)
    with pytest.raises(AgentError, match=f"malformed response from server: .*{detail}"):
        client.chat([SYSTEM, USER])
    assert len(vllm_server.chat_requests) == attempts


def test_a_reply_without_usage_is_accepted_with_zero_reported_tokens(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.script(Reply(content="no usage here", omit_usage=True))
    result = client.chat([SYSTEM, USER])
    assert result.content == "no usage here" and result.usage is None
    assert result.prompt_tokens == 0


def test_a_tool_call_without_an_id_gets_a_stable_one(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    arguments = '{"query": "Ashfall"}'
    vllm_server.script(Reply(tool_calls=[("glossary_search", arguments, "")]))
    (call,) = client.chat([SYSTEM, USER], tools=TOOLS).tool_calls
    assert call.id.startswith("call-chatcmpl-") and call.function.arguments == arguments


def test_a_failing_tokenize_endpoint_gives_no_count_instead_of_stopping(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    attempts = client.config.max_retries + 1
    faults = [Fault.server_error(f"busy {number}") for number in range(attempts)]
    vllm_server.fail_next("/tokenize", *faults)
    assert client.tokenize([SYSTEM, USER]) is None
    assert client.tokenize([SYSTEM, USER]) == vllm_server.count_tokens(
        {"messages": [SYSTEM, USER]}
    ), "a passing failure does not switch /tokenize off"


# --- tokenize --------------------------------------------------------------------------------


def test_tokenize_returns_the_server_count_posted_at_the_root(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    count = client.tokenize([SYSTEM, USER], tools=TOOLS)
    assert count == vllm_server.count_tokens({"messages": [SYSTEM, USER], "tools": TOOLS})
    request = vllm_server.requests_to("/tokenize")[0]
    assert request.json["add_generation_prompt"] is True
    assert request.json["tools"] == TOOLS and request.json["model"] == "test-model"
    # the chat's prompt_tokens agree with /tokenize for the same messages and tools
    assert client.chat([SYSTEM, USER], tools=TOOLS).prompt_tokens == count


def test_tokenize_sends_the_thinking_switch_too(vllm_server: ScriptedVLLM) -> None:
    with make_client(vllm_server, enable_thinking=False) as chat_client:
        chat_client.tokenize([SYSTEM, USER])
    body = vllm_server.requests_to("/tokenize")[0].json
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_tokenize_without_the_endpoint_returns_none_and_is_not_asked_again(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.tokenize_enabled = False
    assert client.tokenize([SYSTEM, USER]) is None
    assert client.tokenize([SYSTEM, USER]) is None
    assert client.tokenize_supported is False
    assert len(vllm_server.requests_to("/tokenize")) == 1


def test_tokenize_is_retried_on_server_errors(
    vllm_server: ScriptedVLLM, client: ChatClient
) -> None:
    vllm_server.fail_next("/tokenize", Fault.server_error())
    assert client.tokenize([SYSTEM, USER]) == vllm_server.count_tokens({"messages": [SYSTEM, USER]})
    assert len(vllm_server.requests_to("/tokenize")) == 2


# --- protocol --------------------------------------------------------------------------------


def test_response_parsing_ignores_extra_fields_and_requires_the_known_ones() -> None:
    body = {
        "id": "chatcmpl-1",
        "model": "m",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "x", "tool_calls": []},
                "finish_reason": "stop",
                "stop_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        "kv_transfer_params": None,
    }
    parsed = ChatResponse.model_validate(body)
    assert parsed.choices[0].message.tool_calls is None
    for missing in ("id", "choices"):
        with pytest.raises(ValidationError):
            ChatResponse.model_validate({k: v for k, v in body.items() if k != missing})
    # A missing usage is tolerated: the caller counts the tokens itself.
    assert (
        ChatResponse.model_validate({k: v for k, v in body.items() if k != "usage"}).usage is None
    )


def test_assistant_message_dict_never_carries_reasoning() -> None:
    message = ChatMessage.model_validate(
        {"role": "assistant", "content": "Answer.", "reasoning_content": "hidden"}
    )
    assert message.reasoning == "hidden"
    assert assistant_message_dict(message) == {"role": "assistant", "content": "Answer."}
    empty = ChatMessage(role="assistant", content=None)
    assert assistant_message_dict(empty) == {"role": "assistant", "content": ""}


def test_run_vllm_server_stops_promptly_even_with_a_request_hanging() -> None:
    started = time.monotonic()
    with pytest.raises(RuntimeError), run_vllm_server(model="m") as server:
        url = server.url
        server.script(Fault.timeout(delay_s=30))
        config = ClientConfig(base_url=url, timeout_s=0.2, max_retries=0)
        with ChatClient(config) as chat_client, pytest.raises(AgentError, match="read timeout"):
            chat_client.chat([SYSTEM, USER])
        raise RuntimeError("the test body failed")
    assert time.monotonic() - started < 10
    with (
        ChatClient(ClientConfig(base_url=url, max_retries=0)) as chat_client,
        pytest.raises(AgentError, match="cannot connect"),
    ):
        chat_client.models()


def test_a_request_in_flight_when_the_client_closes_ends_without_a_retry_or_a_line(
    vllm_server: ScriptedVLLM, caplog: pytest.LogCaptureFixture
) -> None:
    # The run stopped on one request's failure and closed its client while a sibling's request
    # was still with the server: that request then failed ("Bad file descriptor") and logged
    # "retry 1 of 5" after the run's last line.
    vllm_server.script(Fault.timeout(delay_s=1.0))
    chat_client = make_client(vllm_server, timeout_s=10.0)
    outcome: list[BaseException] = []

    def ask() -> None:
        try:
            chat_client.chat([SYSTEM, USER], tools=TOOLS)
        except BaseException as exc:
            outcome.append(exc)

    sender = threading.Thread(target=ask)
    with caplog.at_level(logging.DEBUG, logger="terrarium_dagster.model"):
        sender.start()
        deadline = time.monotonic() + 5
        while not vllm_server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.01)
        chat_client.close()
        sender.join(timeout=10)
    assert not sender.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], Interrupted), outcome
    assert not [r for r in caplog.records if "retry" in r.getMessage()], caplog.text
    assert len(vllm_server.chat_requests) == 1  # and it was not sent again
