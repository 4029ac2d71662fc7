"""Thinking and sampling per call kind, chosen on purpose for the served model's family.

Each request the engine sends is of one kind (its `purpose`): scene rounds (`annotate`),
summaries (`summary`), the pre-compaction flush (`flush`), the curator's review (`curate`),
summoned contexts (`summon`, `why`). Thinking is off for all of them but the curator's review,
which may think (`curator_thinking`, with `curator_max_tokens` of room): a scene round that
thinks spends its completion tokens before the tool calls, and a summary or flush has nothing to
reason about. Off is sent as Qwen3's `chat_template_kwargs: {enable_thinking: false}` (models of
other families do not take the switch, so nothing is sent for them).

Sampling follows the advice of the model family's authors for the mode the call runs in (their
model cards' recommended settings, `FAMILY_SAMPLING`); a setting given explicitly
(`temperature`, `top_p`, `top_k`) wins for every call. The family is `model_family`, or guessed
from the served model's name when that is `auto`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from terrarium_dagster.config import Settings

FAMILIES: tuple[str, ...] = ("qwen3", "llama3", "mistral", "other")
CURATE_PURPOSE = "curate"

#: The sampling each family's authors advise, by thinking mode (True: thinking).
FAMILY_SAMPLING: dict[str, dict[bool, dict[str, float | int]]] = {
    # Qwen3 model card: thinking 0.6 / 0.95 / 20 (no greedy decoding: it loops), non-thinking
    # 0.7 / 0.8 / 20.
    "qwen3": {
        True: {"temperature": 0.6, "top_p": 0.95, "top_k": 20},
        False: {"temperature": 0.7, "top_p": 0.8, "top_k": 20},
    },
    # Llama 3.1 Instruct's generation_config.json.
    "llama3": {
        True: {"temperature": 0.6, "top_p": 0.9},
        False: {"temperature": 0.6, "top_p": 0.9},
    },
    # Mistral Small 3.x model cards: a low temperature (0.15).
    "mistral": {True: {"temperature": 0.15}, False: {"temperature": 0.15}},
    # Unknown: low temperature for tool calls, the server's defaults otherwise.
    "other": {True: {"temperature": 0.2}, False: {"temperature": 0.2}},
}


def model_family(setting: str, model_name: str | None) -> str:
    """`setting` unless it is `auto`; then the family the served model's name says."""
    if setting != "auto":
        return setting
    name = (model_name or "").lower().replace("_", "-")
    if "qwen3" in name or "qwq" in name:
        return "qwen3"
    if "llama-3" in name or "llama3" in name:
        return "llama3"
    if any(word in name for word in ("mistral", "ministral", "mixtral", "magistral", "devstral")):
        return "mistral"
    return "other"


def thinks(settings: Settings, purpose: str) -> bool:
    """Whether a request of this kind may think."""
    if purpose == CURATE_PURPOSE:
        return settings.curator_thinking is not False
    return bool(settings.enable_thinking)


def answer_tokens(settings: Settings, purpose: str, window: int | None = None) -> int | None:
    """The completion tokens of a request of this kind (None: the session's `max_tokens`): the
    curator gets room to think, up to a quarter of the window (`window`: the one the session
    keeps to, else the context budget)."""
    if purpose != CURATE_PURPOSE:
        return None
    room = settings.curator_max_tokens if thinks(settings, purpose) else settings.max_tokens
    return max(settings.max_tokens, min(room, (window or settings.context_budget) // 4))


def request_options(settings: Settings, model_name: str | None, purpose: str) -> dict[str, Any]:
    """The body fields a request of this kind carries: sampling, and the thinking switch."""
    family = model_family(settings.model_family, model_name)
    thinking = thinks(settings, purpose)
    options: dict[str, Any] = dict(FAMILY_SAMPLING[family][thinking])
    explicit: Mapping[str, float | int | None] = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "top_k": settings.top_k,
    }
    options.update({key: value for key, value in explicit.items() if value is not None})
    if family == "qwen3":
        options["chat_template_kwargs"] = {"enable_thinking": thinking}
    return options
