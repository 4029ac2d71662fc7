"""Token accounting: exact counts from the server when it gives them, a calibrated estimate else.

Two counters implement `TokenCounter`:

- `HeuristicCounter` estimates from characters: a chars-per-token ratio for prose and another for
  JSON (tool calls, tool results, tool schemas), one token per non-ASCII character, a fixed
  overhead per message, per tool call and for the tool block of the chat template. It learns from
  every real count it is shown (`observe`): the ratio actual/estimated is tracked as an
  exponentially weighted ratio of sums, and a peak of recent ratios that decays toward it; the
  estimate uses the peak, plus a safety margin (a percentage and a constant), so it stays above the
  truth.
- `ServerCounter` adds the server's own numbers: every observed prompt (`usage.prompt_tokens`) and
  every `/tokenize` answer is remembered with a hash of its message list. A new list that extends
  a remembered one (the next round of a scene extends the previous call) is counted as that exact
  number plus the estimate of the new messages; `count_exact` asks `/tokenize`.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from terrarium_dagster.context.prompts import canonical_json, tools_json

Message = dict[str, Any]
Tools = Sequence[dict[str, Any]] | None
Tokenize = Callable[[list[Message], list[dict[str, Any]] | None], "int | None"]


@runtime_checkable
class TokenCounter(Protocol):
    """What the context layer needs from a token counter."""

    def count_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        """Prompt tokens of `messages` with `tools`, never below the truth (best effort)."""
        ...

    def count_exact(self, messages: Sequence[Message], tools: Tools) -> int | None:
        """The server's exact count, or None when it cannot give one."""
        ...

    def estimate_message(self, message: Message) -> int:
        """Cheap estimate of one message's share of a prompt (for planning)."""
        ...

    def estimate_text(self, text: str) -> int:
        """Cheap estimate of a text's tokens."""
        ...

    def observe(self, messages: Sequence[Message], tools: Tools, actual: int) -> None:
        """Learn from the server's count of a prompt (usage.prompt_tokens or /tokenize)."""
        ...

    def calibration(self) -> dict[str, float]:
        """The learned state, to persist with the context."""
        ...

    def restore(self, calibration: Mapping[str, float]) -> None:
        """Take back a persisted calibration."""
        ...


def _text_units(text: str, chars_per_token: float) -> float:
    if not text:
        return 0.0
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars / chars_per_token + (len(text) - ascii_chars)


class HeuristicCounter:
    """Characters-based estimate, calibrated against the server's counts, erring high."""

    def __init__(
        self,
        *,
        chars_per_token: float = 3.6,
        json_chars_per_token: float = 2.8,
        message_overhead: int = 5,
        tool_call_overhead: int = 10,
        tools_overhead: int = 120,
        reply_overhead: int = 3,
        margin: float = 0.08,
        margin_tokens: int = 24,
        decay: float = 0.85,
        peak_decay: float = 0.9,
        min_ratio: float = 0.25,
        max_ratio: float = 8.0,
    ) -> None:
        self.chars_per_token = chars_per_token
        self.json_chars_per_token = json_chars_per_token
        self.message_overhead = message_overhead
        self.tool_call_overhead = tool_call_overhead
        self.tools_overhead = tools_overhead
        self.reply_overhead = reply_overhead
        self.margin = margin
        self.margin_tokens = margin_tokens
        self.decay = decay
        self.peak_decay = peak_decay
        self.min_ratio = min_ratio
        self.max_ratio = max_ratio
        self._actual_sum = 0.0
        self._estimate_sum = 0.0
        self._peak = 1.0
        self.observations = 0

    # -- raw estimates (uncalibrated) --------------------------------------------------------

    def raw_message(self, message: Message) -> float:
        units = float(self.message_overhead)
        content = message.get("content")
        if isinstance(content, str):
            per = self.json_chars_per_token if message.get("role") == "tool" else None
            units += _text_units(content, per or self.chars_per_token)
        elif isinstance(content, list):  # content parts
            units += _text_units(canonical_json(content), self.json_chars_per_token)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            units += self.tool_call_overhead
            units += _text_units(str(function.get("name") or ""), self.chars_per_token)
            units += _text_units(str(function.get("arguments") or ""), self.json_chars_per_token)
        return units

    def raw_tools(self, tools: Tools) -> float:
        if not tools:
            return 0.0
        return self.tools_overhead + _text_units(tools_json(tools), self.json_chars_per_token)

    def raw_messages(self, messages: Sequence[Message], tools: Tools) -> float:
        return (
            sum(self.raw_message(message) for message in messages)
            + self.raw_tools(tools)
            + self.reply_overhead
        )

    # -- calibrated estimates ---------------------------------------------------------------

    @property
    def ratio(self) -> float:
        """Observed actual/estimated, weighted toward recent observations (1.0 before any)."""
        if self._estimate_sum <= 0:
            return 1.0
        return self._actual_sum / self._estimate_sum

    @property
    def factor(self) -> float:
        """What raw estimates are multiplied by: the peak ratio plus the safety margin."""
        return max(self._peak, self.ratio) * (1.0 + self.margin)

    def scale(self, raw: float) -> int:
        return math.ceil(raw * self.factor)

    def count_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        return self.scale(self.raw_messages(messages, tools)) + self.margin_tokens

    def count_exact(self, messages: Sequence[Message], tools: Tools) -> int | None:
        return None

    def estimate_message(self, message: Message) -> int:
        return self.scale(self.raw_message(message))

    def estimate_text(self, text: str) -> int:
        return self.scale(_text_units(text, self.chars_per_token))

    def observe(self, messages: Sequence[Message], tools: Tools, actual: int) -> None:
        self.observe_raw(self.raw_messages(messages, tools), actual)

    def observe_raw(self, raw: float, actual: int) -> None:
        """Calibrate with one pair (raw estimate, actual count)."""
        if raw <= 0 or actual <= 0:
            return
        observed = min(self.max_ratio, max(self.min_ratio, actual / raw))
        self._actual_sum = self.decay * self._actual_sum + observed * raw
        self._estimate_sum = self.decay * self._estimate_sum + raw
        if self.observations == 0:
            self._peak = observed
        else:
            ratio = self.ratio
            self._peak = max(observed, ratio + (self._peak - ratio) * self.peak_decay)
        self.observations += 1

    def calibration(self) -> dict[str, float]:
        return {
            "actual_sum": self._actual_sum,
            "estimate_sum": self._estimate_sum,
            "peak": self._peak,
            "observations": float(self.observations),
        }

    def restore(self, calibration: Mapping[str, float]) -> None:
        if not calibration:
            return
        self._actual_sum = float(calibration.get("actual_sum", 0.0))
        self._estimate_sum = float(calibration.get("estimate_sum", 0.0))
        self._peak = float(calibration.get("peak", 1.0))
        self.observations = int(calibration.get("observations", 0))


class ServerCounter:
    """Exact counts from the server where known, the calibrated heuristic for the rest."""

    def __init__(
        self,
        tokenize: Tokenize | None = None,
        *,
        heuristic: HeuristicCounter | None = None,
        anchors: int = 64,
    ) -> None:
        self.tokenize = tokenize
        self.heuristic = heuristic or HeuristicCounter()
        self._anchors: OrderedDict[str, int] = OrderedDict()
        self._max_anchors = anchors
        self._tokenize_works = tokenize is not None
        self.tokenize_calls = 0

    @staticmethod
    def _digests(messages: Sequence[Message], tools: Tools) -> list[str]:
        """Digest of every prefix: `digests[k]` identifies `messages[:k]` with `tools`."""
        running = hashlib.sha256(tools_json(tools).encode())
        digests = [running.hexdigest()]
        for message in messages:
            running.update(b"\x1e" + canonical_json(message).encode())
            digests.append(running.copy().hexdigest())
        return digests

    def _remember(self, digest: str, count: int) -> None:
        self._anchors[digest] = count
        self._anchors.move_to_end(digest)
        while len(self._anchors) > self._max_anchors:
            self._anchors.popitem(last=False)

    def count_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        digests = self._digests(messages, tools)
        for k in range(len(messages), 0, -1):
            known = self._anchors.get(digests[k])
            if known is None:
                continue
            if k == len(messages):
                return known
            suffix = sum(self.heuristic.raw_message(m) for m in messages[k:])
            return known + self.heuristic.scale(suffix) + self.heuristic.margin_tokens
        return self.heuristic.count_messages(messages, tools)

    def count_exact(self, messages: Sequence[Message], tools: Tools) -> int | None:
        digest = self._digests(messages, tools)[-1]
        if digest in self._anchors:
            return self._anchors[digest]
        if not self._tokenize_works or self.tokenize is None:
            return None
        self.tokenize_calls += 1
        count = self.tokenize(list(messages), list(tools) if tools else None)
        if count is None:
            self._tokenize_works = False  # the server has no /tokenize: stop asking
            return None
        self.observe(messages, tools, count)
        return count

    def estimate_message(self, message: Message) -> int:
        return self.heuristic.estimate_message(message)

    def estimate_text(self, text: str) -> int:
        return self.heuristic.estimate_text(text)

    def observe(self, messages: Sequence[Message], tools: Tools, actual: int) -> None:
        if actual <= 0:
            return
        self._remember(self._digests(messages, tools)[-1], actual)
        self.heuristic.observe(messages, tools, actual)

    def calibration(self) -> dict[str, float]:
        return self.heuristic.calibration()

    def restore(self, calibration: Mapping[str, float]) -> None:
        self.heuristic.restore(calibration)
