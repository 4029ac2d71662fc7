"""The client against a real llama.cpp `llama-server` serving the 135M SmolLM2 model.

What the loopback stand-ins cannot show: the protocol as llama.cpp speaks it, the window found in
its `/v1/models` meta, its `/tokenize` shape counted exactly through `/apply-template`, its
overflow wording, its refusal of tools with a template that has none, and `terrarium run` on the
sample through it. The model is tiny: these tests check the plumbing, not the glossary (it writes
little or nothing; the run is then flagged suspect, as it should be).

Skipped, naming what is missing, where the binary or the model is absent; under CI (which builds
them in `.ci/run`) they must run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.server import probe_server
from terrarium_dagster.model.server_answers import ServerContextOverflow
from terrarium_dagster.model.session import ModelSession, standalone_task
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import run_args, terrarium
from tests.support.llama_server import LlamaServer, run_llama_server

pytestmark = pytest.mark.slow

SYSTEM = {"role": "system", "content": "You note the names in a story."}
USER = {"role": "user", "content": "The envoy Vaskari crossed the Ashfall at dawn."}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "glossary_search",
            "description": "Find glossary entries by name.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]


@pytest.fixture(scope="module")
def tools_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama-server with a window of 8192 and our ChatML template that takes tools."""
    with run_llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


def _client(server: LlamaServer, **options: object) -> ChatClient:
    config = {"base_url": server.url, "max_retries": 0, "temperature": 0.0, "seed": 1, **options}
    return ChatClient(ClientConfig(**config))  # type: ignore[arg-type]


_terrarium = partial(terrarium, timeout=420, clean=True)


def test_the_probe_finds_llama_cpp_its_window_tools_and_exact_counting(
    tools_server: LlamaServer,
) -> None:
    with _client(tools_server) as client:
        info = probe_server(client)
    assert info.kind == "llama.cpp"
    assert info.window == 8192 and info.window_source == "/v1/models meta.n_ctx"
    assert info.tools is True and info.counting == "llama.cpp"
    assert "llama.cpp" in info.line() and "window 8192" in info.line()


def test_counts_are_exact_through_apply_template_and_said_once(
    tools_server: LlamaServer, caplog: pytest.LogCaptureFixture
) -> None:
    with _client(tools_server) as client, caplog.at_level(logging.INFO):
        # not probed: the client finds llama.cpp's shape by itself on the first count, once
        counts = [client.tokenize([SYSTEM, USER], tools=TOOLS) for _ in range(3)]
        reply = client.chat([SYSTEM, USER], tools=TOOLS, max_tokens=1)
    assert client.tokenize_shape == "llama.cpp"
    assert counts[0] is not None and counts == [counts[0]] * 3
    assert counts[0] == reply.prompt_tokens, "the count is the one the chat request reports"
    said = [r.getMessage() for r in caplog.records if "llama.cpp's shape" in r.getMessage()]
    assert len(said) == 1, "said once, not a warning per call"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_chat_through_llama_server_speaks_the_protocol(tools_server: LlamaServer) -> None:
    with _client(tools_server) as client:
        result = client.chat([SYSTEM, USER], tools=TOOLS, max_tokens=24)
        # the reply goes back in the history as every server takes it
        history = [
            SYSTEM,
            USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "glossary_search", "arguments": '{"query": "Vas'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "arguments are not valid JSON"},
        ]
        again = client.chat(history, tools=TOOLS, max_tokens=8)
    assert result.finish_reason in ("stop", "length", "tool_calls")
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert again.prompt_tokens > result.prompt_tokens, "null content and broken JSON accepted"


def test_an_overflow_is_recognised_and_the_session_recovers_within_the_window(
    tmp_path: Path,
) -> None:
    long_text = "The envoy Vaskari crossed the Ashfall at dawn. " * 200  # ~2,000 tokens
    task = {"role": "user", "content": long_text}
    with run_llama_server(tmp_path, n_ctx=1024) as server, _client(server) as client:
        with pytest.raises(ServerContextOverflow) as caught:
            client.chat([SYSTEM, task], max_tokens=16)
        assert caught.value.max_context_length == 1024
        assert caught.value.prompt_tokens and caught.value.prompt_tokens > 1024
        # a session that does not know the window (as with llama-cpp-python) learns it from
        # the overflow and sends the request again, smaller, within prompt + max_tokens
        probe_server(client)
        client.server_info = client.server_info.model_copy(update={"window": None})
        with GlossaryStore(tmp_path / "s.db") as store:
            session = ModelSession(client, store, budget=32768, max_tokens=16, run_id=None)
            assert session.window == 32768
            result = session.call(
                [SYSTEM, task],
                purpose="summary",
                tools=None,
                shrink=standalone_task(session, None),
                decided=lambda _reply: True,  # a tiny model's cut summary: the window is tested
            )
            assert session.window == 1024 and session.learned_window == 1024
            assert result.prompt_tokens + 16 <= 1024
            calls = store.runs.agent_calls()
        assert [bool(call.error) for call in calls] == [True, False]


def test_the_gate_keeps_prompt_and_max_tokens_within_the_window(tmp_path: Path) -> None:
    # llama-server takes a prompt whose max_tokens do not fit and cuts the answer; the gate
    # does not let such a request go
    sentence = "The envoy Vaskari crossed the Ashfall at dawn. "
    with run_llama_server(tmp_path, n_ctx=1024) as server, _client(server) as client:

        def request_of(repeats: int) -> list[dict[str, str]]:
            return [SYSTEM, {"role": "user", "content": sentence * repeats}]

        one, hundred = (client.tokenize(request_of(n)) or 0 for n in (1, 101))
        repeats = 1 + int((1000 - one) / ((hundred - one) / 100))  # about 1,000 tokens
        request = request_of(repeats)
        as_it_is = client.tokenize(request) or 0
        assert as_it_is + 48 > 1024 > as_it_is, "llama-server would take it and cut the answer"
        with GlossaryStore(tmp_path / "s.db") as store:
            session = ModelSession(client, store, budget=32768, max_tokens=48, run_id=None)
            assert session.window == 1024
            result = session.call(
                request,
                purpose="summary",
                tools=None,
                shrink=standalone_task(session, None),
                decided=lambda _reply: True,  # a tiny model's cut summary: the window is tested
            )
    assert result.prompt_tokens + 48 <= 1024, "the gate made it smaller before sending"


def test_a_server_whose_template_has_no_tools_is_refused_at_start(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with run_llama_server(tmp_path, tools_template=False) as server:
        done = _terrarium(*run_args(db, agent_url=server.url), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "cannot take tools" in last and "--chat-template-file" in last
    assert not db.exists(), "nothing written"


def test_terrarium_run_on_the_sample_through_llama_server(tmp_path: Path) -> None:
    # The 135M model rambles: its answers either end (the run finishes; with no tool call it
    # is flagged suspect) or stay cut however much room they get (the run stops with one line
    # saying so): both are what a user of this model should see, never a silent empty run.
    # One scene, one round, short answers, one request at a time (a scene limit ends a run at a
    # block's end: at the default of 16 the whole first thread would be drafted, each request
    # about ten seconds of this tiny model on a busy CPU, and a cut answer is asked again with
    # more room): the test stays short. Requests side by side through llama-server are
    # `test_requests_at_once_fit_four_slots_sharing_one_cache`'s.
    db = tmp_path / "store.db"
    with run_llama_server(tmp_path) as server:
        done = _terrarium(
            *run_args(
                db,
                agent_url=server.url,
                max_scenes=1,
                concurrency=1,
                max_tokens=64,
                max_rounds=1,
                temperature=0,
                seed=1,
            ),
            cwd=tmp_path,
        )
    (said,) = [line for line in done.stderr.splitlines() if "server: llama.cpp" in line]
    assert "window 8192 tokens" in said and "tools: yes" in said and "exact" in said
    last = done.stderr.strip().splitlines()[-1]
    if done.returncode == 0:
        status = _terrarium("status", "--db", str(db), "--json", cwd=tmp_path)
        (thread, *_) = json.loads(status.stdout)["threads"]
        assert thread["scenes_done"] == 1
        if thread["suspect"]:
            assert "SUSPECT" in done.stderr
    else:
        assert done.returncode == 1, done.stderr[-3000:]
        assert last.startswith("terrarium: failed: the model did not answer"), last
    with GlossaryStore(db, read_only=True) as store:
        calls = [call for call in store.runs.agent_calls() if call.purpose == "annotate"]
    answered = [call for call in calls if not call.error]
    assert answered and all(call.prompt_tokens > 0 for call in answered), "on the books"
    assert all(call.prompt_tokens + 64 <= 8192 for call in calls)


def test_requests_at_once_fit_four_slots_sharing_one_cache(tmp_path: Path) -> None:
    # `llama-server -c 2048 -np 4 --kv-unified`: four slots sharing one KV cache of 2,048 tokens
    # (the smallest that shows it on this machine: `-c 8192` with the sample's scenes is the
    # same arithmetic, four times slower). Four requests of about 600 prompt tokens at once hold
    # more than it can — it would fail them all with HTTP 500 "Context size has been exceeded";
    # the probe reads the slots and the cache, and the session keeps what is in flight within
    # both, so six requests sent at once all answer. (The same six through a client without the
    # gate: four fail with that 500. Where the cache is not known, the 500s are capacity answers:
    # tests/test_capacity.py shows it on a loopback server; here it takes minutes.)
    filler = "The caravan of the Ember Road crossed the salt flats at dusk. " * 45
    slots = ["--parallel", "4", "--kv-unified"]
    with (
        run_llama_server(tmp_path, n_ctx=2048, extra_args=slots) as server,
        GlossaryStore(tmp_path / "store.db") as store,
    ):
        client = _client(server, max_retries=2)
        info = probe_server(client)
        session = ModelSession(client, store, budget=2048, max_tokens=16, run_id="slots")

        def ask(number: int) -> str | None:
            messages = [
                {"role": "system", "content": filler},
                {"role": "user", "content": f"Name {number}: who crossed the salt flats?"},
            ]
            counter = session.counter.fork()
            result = session.call(
                messages,
                purpose="summary",
                tools=None,
                counter=counter,
                decided=lambda _cut: True,  # a reply cut at 16 tokens will do: plumbing only
            )
            return result.content

        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(ask, range(6)))
        session.close()
        calls = store.runs.agent_calls()
        log = server.log_text()
    assert (info.slots, info.cache_tokens) == (4, 2048)
    assert "4 slots sharing a cache of 2048 tokens" in info.line()
    assert len(answers) == 6
    assert "Context size has been exceeded" not in log, "no request outgrew the cache"
    assert len(calls) == 6 and not [call for call in calls if call.error]
    assert client.capacity.peak_in_flight >= 2, "several at once"
