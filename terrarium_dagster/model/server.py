"""What the model server is, found once at start: its kind, its window, whether its chat template
takes tools, and how it counts a prompt exactly.

`probe_server(client)` asks what each known server answers and returns a `ServerInfo` (kept on
the client as `client.server_info`); `ServerInfo.line()` says it in one line. What the servers
say, and where:

- **vLLM**: `GET /v1/models` with `owned_by: "vllm"` and `max_model_len`; `POST /tokenize` takes
  the chat messages (and tools) and answers `{"count", "tokens", "max_model_len"}`. Tool support
  is a launch flag (`--enable-auto-tool-choice --tool-call-parser ...`) no endpoint shows.
- **llama.cpp** (`llama-server`): `owned_by: "llamacpp"`, the window in `data[0].meta.n_ctx` and
  in `/props` (`default_generation_settings.n_ctx`); `/props` also has `chat_template_caps`
  (`supports_tools: false` for a template that leaves the tool schemas out of the prompt) and
  `total_slots`: the requests it decodes at once, which share one KV cache of `n_ctx` tokens
  (the client's `Capacity` keeps what is in flight within both, see `model/capacity.py`).
  `POST /tokenize` takes `{"content": text}` only, so a chat prompt is rendered first by
  `POST /apply-template` (the same messages and tools).
- **llama-cpp-python**: `owned_by: "me"`; no window, no tool capability, no chat-prompt count is
  published: the budget and a 400 overflow set the window, counts are estimated.
- anything else OpenAI-compatible: what `/v1/models` and `/tokenize` show, else the same.

A server whose chat template cannot take tools is refused (`require_tools`), before a run writes
anything: a run through it would read every scene and write nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from terrarium_dagster.errors import AgentError, ConfigError
from terrarium_dagster.model.client import ChatClient, ServerUnreachableError
from terrarium_dagster.model.protocol import ServerInfo, ServerKind, TokenizeShape

log = logging.getLogger(__name__)


#: `owned_by` of a `/v1/models` entry, per server.
OWNERS: dict[str, ServerKind] = {
    "vllm": "vllm",
    "llamacpp": "llama.cpp",
    "me": "llama-cpp-python",
    "terrarium": "offline",
}

#: A two-message chat, to see which shape /tokenize answers in.
PROBE_MESSAGES = [
    {"role": "system", "content": "probe"},
    {"role": "user", "content": "probe"},
]

TOOL_TEMPLATE_FIX = (
    "start it with a chat template that takes tools, e.g. `llama-server --jinja "
    "--chat-template-file chatml-tools.jinja` (docs/servers.md, llama.cpp)"
)


def probe_server(client: ChatClient) -> ServerInfo:
    """Find out what the server at `client`'s URL is (see the module doc), set the client's
    counting to match, keep the result as `client.server_info` and log it in one line.

    A server that cannot be reached raises (`ServerUnreachableError`); one whose `/v1/models`
    fails otherwise is described from what else it answers, with a warning."""
    url = client.config.root_url
    try:
        model = client.resolve_model()
    except ServerUnreachableError:
        raise  # nothing to ask the model either: say so now
    except AgentError as exc:
        log.warning("cannot read the served models (%s); going by what else the server says", exc)
        model = None
    kind: ServerKind = "openai-compatible"
    if model is not None and model.owned_by in OWNERS:
        kind = OWNERS[model.owned_by]
    elif model is not None and model.meta is not None:
        kind = "llama.cpp"
    window, window_source = None, None
    if model is not None and model.max_model_len:
        window, window_source = model.max_model_len, "max_model_len"
    elif model is not None and model.meta is not None and model.meta.n_ctx:
        window, window_source = model.meta.n_ctx, "/v1/models meta.n_ctx"
    tools: bool | None = None
    tools_source: str | None = None
    slots: int | None = None
    cache: int | None = None
    if kind not in ("vllm", "offline"):
        props = client.optional_json("GET", "/props")
        if isinstance(props, dict):
            if kind == "openai-compatible" and "default_generation_settings" in props:
                kind = "llama.cpp"
            if window is None:
                window = _props_window(props)
                window_source = "/props n_ctx" if window else None
            tools = _props_tools(props)
            tools_source = "/props chat_template_caps" if tools is not None else None
            slots = _positive(props.get("total_slots"))
            cache = _props_window(props) if slots else None  # one slot's n_ctx: see capacity.py
    counting = _counting(client, kind)
    client.use_tokenize_shape(counting)
    info = ServerInfo(
        url=url,
        kind=kind,
        model=model.id if model is not None else None,
        window=window,
        window_source=window_source,
        tools=tools,
        tools_source=tools_source,
        counting=counting,
        slots=slots,
        cache_tokens=cache,
    )
    client.capacity.configure(slots, cache)
    client.server_info = info
    log.debug("%s", info.line())
    return info


def server_info(client: ChatClient) -> ServerInfo:
    """The client's `ServerInfo`, probed now if it was not yet."""
    return client.server_info or probe_server(client)


def require_tools(info: ServerInfo) -> None:
    """Refuse a server whose chat template leaves the tool schemas out (`ConfigError`, exit 2)."""
    if info.tools is False:
        raise ConfigError(
            f"the {info.kind} server at {info.url} cannot take tools: its chat template has none "
            f"({info.tools_source}); {TOOL_TEMPLATE_FIX}"
        )


def _props_window(props: dict[str, Any]) -> int | None:
    settings = props.get("default_generation_settings")
    for value in (
        settings.get("n_ctx") if isinstance(settings, dict) else None,
        props.get("n_ctx"),
    ):
        if _positive(value) is not None:
            return value
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _props_tools(props: dict[str, Any]) -> bool | None:
    caps = props.get("chat_template_caps")
    if isinstance(caps, dict) and isinstance(caps.get("supports_tools"), bool):
        return bool(caps["supports_tools"])
    return None


def _counting(client: ChatClient, kind: ServerKind) -> TokenizeShape:
    """How this server counts a chat prompt. vLLM (and the offline stand-in) take messages at
    /tokenize; another server is asked once with a two-message chat, and its answer's shape
    decides (llama.cpp's needs /apply-template as well)."""
    if kind in ("vllm", "offline"):
        return "vllm"
    body: dict[str, Any] = {"messages": PROBE_MESSAGES, "add_generation_prompt": True}
    if client.config.model is not None or client.model_info is not None:
        body["model"] = client.model_name()
    answer = client.optional_json("POST", "/tokenize", body)
    if isinstance(answer, dict) and isinstance(answer.get("count"), int):
        return "vllm"
    if isinstance(answer, dict) and isinstance(answer.get("tokens"), list):
        rendered = client.optional_json("POST", "/apply-template", {"messages": PROBE_MESSAGES})
        if isinstance(rendered, dict) and isinstance(rendered.get("prompt"), str):
            return "llama.cpp"
    return "none"
