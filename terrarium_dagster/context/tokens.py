"""Token accounting: exact counts from the server when it gives them, a calibrated estimate else.

Two counters implement `TokenCounter`:

- `HeuristicCounter` estimates from characters: a chars-per-token ratio for prose and another for
  JSON (tool calls, tool results, tool schemas), one token per non-ASCII character, a fixed
  overhead per message, per tool call and for the tool block of the chat template. It learns from
  every real count it is shown (`observe`): one scale per class fitted to recent counts, and the
  remaining miss as a decaying peak ratio; the estimate uses the peak plus a safety margin (a
  percentage and a constant), so it stays above the truth.
- `ServerCounter` adds the server's own numbers: every observed prompt (`usage.prompt_tokens`) and
  every `/tokenize` answer is remembered with a hash of its message list. A new list that extends
  a remembered one (the next round of a scene extends the previous call) is counted as that exact
  number plus the estimate of the new messages; `count_exact` asks `/tokenize`.

The estimate errs high as a rule, not always: a suffix unlike what the calibration has seen may
count more on the server than estimated (3,062 estimated where Qwen3's tokenizer counted 3,091,
a scene's round after its tool results were shrunk, in a 4,096-token window). So whatever judges a
prompt against a limit asks for the exact count when the estimate comes within
`UNCERTAIN_SHARE` of it (`exact_threshold`), not only when the estimate is over it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, runtime_checkable

from terrarium_dagster.context.prompts import canonical_json, tools_json

Message = dict[str, Any]
Tools = Sequence[dict[str, Any]] | None
Tokenize = Callable[[list[Message], list[dict[str, Any]] | None], "int | None"]

# How far below the server's count an estimate may fall: within this share of a limit, a prompt
# is counted exactly before it is judged against it.
UNCERTAIN_SHARE = 0.05


def exact_threshold(limit: int, share: float = 1.0) -> int:
    """The estimate above which a prompt judged against `limit` is counted exactly first:
    `share` of the limit, and never more than `1 - UNCERTAIN_SHARE` of it (close enough below
    the limit that the estimate's error could hide that the prompt is over it)."""
    return int(limit * min(share, 1.0 - UNCERTAIN_SHARE))


@runtime_checkable
class TokenCounter(Protocol):
    """What the context layer needs from a token counter."""

    def count_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        """Prompt tokens of `messages` with `tools`, never below the truth (best effort)."""
        ...

    def count_exact(self, messages: Sequence[Message], tools: Tools) -> int | None:
        """The server's exact count, or None when it cannot give one."""
        ...

    def estimate_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        """The calibrated heuristic alone for a whole prompt (no server numbers)."""
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

    def anchors(self) -> list[tuple[str, int]]:
        """The exact counts remembered (prompt digest, tokens), oldest first, to persist."""
        ...

    def restore_anchors(self, anchors: Sequence[tuple[str, int]]) -> None:
        """Take back persisted exact counts (replacing those remembered)."""
        ...

    def fork(self) -> TokenCounter:
        """A private copy that learns on its own from now on."""
        ...


Units = tuple[float, float, float]
"""Raw size of a prompt part: (prose units, JSON units, fixed tokens) — units are characters
divided by the class's chars-per-token, plus one per digit and one per non-ASCII character."""

_WITHOUT_DIGITS = str.maketrans("", "", "0123456789")


def _text_units(text: str, chars_per_token: float) -> float:
    """Each digit is a token of its own, as Qwen's, Mistral's and Llama 2's tokenizers split
    numbers (others group up to three: the estimate errs high there): an entry list such as
    `[E243], [E244]` is about one token per 1.4 characters, not 3.6 like prose."""
    if not text:
        return 0.0
    ascii_chars = len(text.encode("ascii", "ignore"))
    digits = len(text) - len(text.translate(_WITHOUT_DIGITS))
    return (ascii_chars - digits) / chars_per_token + digits + (len(text) - ascii_chars)


_FEATURE = {"t": 0, "j": 1, "c": 2}
_SUM_KEYS = ("tt", "tj", "tc", "jj", "jc", "cc", "ty", "jy", "cy")


def _sum_key(row: int, column: int | str) -> str:
    names = "tjc"
    if column == "y":
        return f"{names[row]}y"
    low, high = sorted((row, int(column)))
    return f"{names[low]}{names[high]}"


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Solve a small linear system by Gaussian elimination; None when it is singular."""
    size = len(rhs)
    rows = [[*matrix[i], rhs[i]] for i in range(size)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(rows[r][column]))
        if abs(rows[pivot][column]) < 1e-12:
            return None
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for r in range(size):
            if r != column:
                factor = rows[r][column] / rows[column][column]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[column], strict=True)]
    return [rows[i][size] / rows[i][i] for i in range(size)]


@dataclass(frozen=True)
class PromptSizer:
    """Raw sizes of prompt parts, before calibration: characters per token for prose and for
    JSON, and the fixed tokens the chat template adds per message, per tool call, for the tool
    block and for the generation prompt."""

    chars_per_token: float = 3.6
    json_chars_per_token: float = 2.4
    message_overhead: int = 5
    tool_call_overhead: int = 10
    tools_overhead: int = 120
    reply_overhead: int = 3

    def text_units(self, text: str) -> float:
        """Prose units of `text`."""
        return _text_units(text, self.chars_per_token)

    def message_units(self, message: Message) -> Units:
        """A message's units. A message whose values are all text (a scene message, a tool
        result, a summary: most of a prompt, measured again at every round and every count
        the server reports) is measured once for as long as it is seen again
        (`_text_message_units`, keyed by its content, never by identity)."""
        items = tuple(sorted(message.items()))
        if all(isinstance(value, str) for _, value in items):
            return _text_message_units(self, items)
        return self.measure_message(message)

    def measure_message(self, message: Message) -> Units:
        """A message's units, measured."""
        text = json_units = 0.0
        fixed = float(self.message_overhead)
        content = message.get("content")
        if isinstance(content, str):
            if message.get("role") == "tool":
                json_units += _text_units(content, self.json_chars_per_token)
            else:
                text += _text_units(content, self.chars_per_token)
        elif isinstance(content, list):  # content parts
            json_units += _text_units(canonical_json(content), self.json_chars_per_token)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            fixed += self.tool_call_overhead
            text += _text_units(str(function.get("name") or ""), self.chars_per_token)
            arguments = str(function.get("arguments") or "")
            json_units += _text_units(arguments, self.json_chars_per_token)
        return text, json_units, fixed

    def units(self, messages: Sequence[Message], tools: Tools) -> Units:
        text, json_units, fixed = 0.0, 0.0, float(self.reply_overhead)
        if tools:
            json_units += _text_units(tools_json(tools), self.json_chars_per_token)
            fixed += self.tools_overhead
        for message in messages:
            t, j, f = self.message_units(message)
            text, json_units, fixed = text + t, json_units + j, fixed + f
        return text, json_units, fixed


@functools.lru_cache(maxsize=8192)
def _text_message_units(sizer: PromptSizer, items: tuple[tuple[str, str], ...]) -> Units:
    return sizer.measure_message(dict(items))


@dataclass(kw_only=True, eq=False)
class Calibration:
    """What the heuristic learns from the server's counts, and the margin it keeps above them.

    One scale per class (prose, JSON) and a per-prompt constant, fitted by ridge least squares of
    relative errors over recent observations, exponentially decayed and pulled toward scale 1.0
    and constant 0 while the data say little; what the fit still misses is tracked as the ratio
    actual/fitted with a decaying peak. Sizes are multiplied by that peak plus the margin.
    """

    margin: float = 0.08
    decay: float = 0.85
    peak_decay: float = 0.9
    prior_weight: float = 1e4
    constant_prior_weight: float = 0.5
    min_scale: float = 0.25
    max_scale: float = 8.0
    # the learned state (what `to_dict` persists)
    text_scale: float = field(default=1.0, init=False)
    json_scale: float = field(default=1.0, init=False)
    constant: float = field(default=0.0, init=False)
    observations: int = field(default=0, init=False)
    _sums: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(_SUM_KEYS, 0.0), init=False, repr=False
    )
    _actual_sum: float = field(default=0.0, init=False, repr=False)
    _fitted_sum: float = field(default=0.0, init=False, repr=False)
    _peak: float = field(default=1.0, init=False, repr=False)

    def fitted(self, units: Units, *, whole_prompt: bool = False) -> float:
        """The calibrated size of `units` (of a whole prompt: with the constant), no margin."""
        text, json_units, fixed = units
        size = self.text_scale * text + self.json_scale * json_units + fixed
        return max(0.0, size + self.constant) if whole_prompt else size

    @property
    def ratio(self) -> float:
        """What the fit misses: actual/fitted over recent observations (1.0 before any)."""
        if self._fitted_sum <= 0:
            return 1.0
        return self._actual_sum / self._fitted_sum

    @property
    def factor(self) -> float:
        """What fitted sizes are multiplied by: the peak miss plus the safety margin."""
        return max(1.0, self._peak, self.ratio) * (1.0 + self.margin)

    def scale(self, fitted: float) -> int:
        """`fitted` with the margin, in whole tokens."""
        return math.ceil(fitted * self.factor)

    def learn(self, units: Units, actual: int) -> None:
        """Fit again with the server's count `actual` of a prompt measuring `units`."""
        text, json_units, fixed = units
        features = (text, json_units, 1.0)
        target = actual - fixed
        weight = (1000.0 / actual) ** 2  # relative errors count, as a 1000-token prompt's would
        sums = self._sums
        for key in _SUM_KEYS:
            first, second = key
            value = features[_FEATURE[first]] * (
                target if second == "y" else features[_FEATURE[second]]
            )
            sums[key] = self.decay * sums[key] + weight * value
        weights = (self.prior_weight, self.prior_weight, self.constant_prior_weight)
        priors = (1.0, 1.0, 0.0)
        matrix = [
            [sums[_sum_key(i, j)] + (weights[i] if i == j else 0.0) for j in range(3)]
            for i in range(3)
        ]
        rhs = [sums[_sum_key(i, "y")] + weights[i] * priors[i] for i in range(3)]
        solution = _solve(matrix, rhs)
        if solution is not None:
            self.text_scale = self._clamp(solution[0])
            self.json_scale = self._clamp(solution[1])
            self.constant = solution[2]
        fitted = max(1.0, self.fitted(units, whole_prompt=True))
        observed = actual / fitted
        self._actual_sum = self.decay * self._actual_sum + actual
        self._fitted_sum = self.decay * self._fitted_sum + fitted
        if self.observations == 0:
            self._peak = observed
        else:
            ratio = self.ratio
            self._peak = max(observed, ratio + (self._peak - ratio) * self.peak_decay)
        self.observations += 1

    def _clamp(self, value: float) -> float:
        return min(self.max_scale, max(self.min_scale, value))

    def copy(self) -> Calibration:
        """An independent copy: what either learns from now on stays its own."""
        twin = copy.copy(self)
        twin._sums = dict(self._sums)
        return twin

    def to_dict(self) -> dict[str, float]:
        """The learned state, to persist."""
        return {
            **{f"sum_{key}": value for key, value in self._sums.items()},
            "text_scale": self.text_scale,
            "json_scale": self.json_scale,
            "constant": self.constant,
            "actual_sum": self._actual_sum,
            "fitted_sum": self._fitted_sum,
            "peak": self._peak,
            "observations": float(self.observations),
        }

    def load(self, calibration: Mapping[str, float]) -> None:
        """Take back a persisted state; an empty one resets to the uncalibrated start."""
        for key in self._sums:
            self._sums[key] = float(calibration.get(f"sum_{key}", 0.0))
        self.text_scale = float(calibration.get("text_scale", 1.0))
        self.json_scale = float(calibration.get("json_scale", 1.0))
        self.constant = float(calibration.get("constant", 0.0))
        self._actual_sum = float(calibration.get("actual_sum", 0.0))
        self._fitted_sum = float(calibration.get("fitted_sum", 0.0))
        self._peak = float(calibration.get("peak", 1.0))
        self.observations = int(calibration.get("observations", 0))


class HeuristicCounter:
    """Characters-based estimate, calibrated against the server's counts, erring high.

    A prompt is measured in prose units (system, user and assistant text), JSON units (tool
    results, tool call arguments, tool schemas) and fixed tokens (per message, per tool call, the
    tool block and the generation prompt of the chat template): its `sizer`. Its `fit` (a
    `Calibration`) fits one scale per class and a per-prompt constant to the server's counts and
    multiplies by the peak miss plus the margin (the fit's `margin` of it and `margin_tokens`
    more) so that the estimate stays above the truth.
    """

    def __init__(
        self,
        *,
        sizer: PromptSizer | None = None,
        fit: Calibration | None = None,
        margin_tokens: int = 24,
    ) -> None:
        self.sizer = sizer or PromptSizer()
        self.fit = fit or Calibration()
        self.margin_tokens = margin_tokens

    def count_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        return self.estimate_messages(messages, tools)

    def count_suffix(self, messages: Sequence[Message]) -> int:
        """Estimate of messages appended to a prompt whose count is known."""
        fitted = sum(self.fit.fitted(self.sizer.message_units(message)) for message in messages)
        return self.fit.scale(fitted) + self.margin_tokens

    def count_exact(self, messages: Sequence[Message], tools: Tools) -> int | None:
        return None

    def estimate_messages(self, messages: Sequence[Message], tools: Tools) -> int:
        fitted = self.fit.fitted(self.sizer.units(messages, tools), whole_prompt=True)
        return self.fit.scale(fitted) + self.margin_tokens

    def estimate_message(self, message: Message) -> int:
        return self.fit.scale(self.fit.fitted(self.sizer.message_units(message)))

    def estimate_text(self, text: str) -> int:
        return self.fit.scale(self.fit.text_scale * self.sizer.text_units(text))

    def observe(self, messages: Sequence[Message], tools: Tools, actual: int) -> None:
        """Calibrate with the server's count of a prompt."""
        if actual <= 0:
            return
        self.fit.learn(self.sizer.units(messages, tools), actual)

    def fork(self) -> Self:
        """A private copy: what it learns from now on stays its own (a drafted scene's)."""
        twin = copy.copy(self)
        twin.fit = self.fit.copy()
        return twin

    def calibration(self) -> dict[str, float]:
        return self.fit.to_dict()

    def restore(self, calibration: Mapping[str, float]) -> None:
        """Take back a persisted calibration; an empty one resets to the uncalibrated start."""
        self.fit.load(calibration)

    def anchors(self) -> list[tuple[str, int]]:
        return []  # the heuristic remembers no exact counts

    def restore_anchors(self, anchors: Sequence[tuple[str, int]]) -> None:
        return


def message_digest(message: Message) -> bytes:
    """The SHA-256 of a message's canonical JSON. A message whose values are all text (a scene
    message, a tool result, a summary: most of a prompt) is hashed once for as long as it is
    seen again (`_text_message_digest`, keyed by its content, never by identity)."""
    items = tuple(sorted(message.items()))
    if all(isinstance(value, str) for _, value in items):
        return _text_message_digest(items)
    return hashlib.sha256(canonical_json(message).encode()).digest()


@functools.lru_cache(maxsize=8192)
def _text_message_digest(items: tuple[tuple[str, str], ...]) -> bytes:
    return hashlib.sha256(canonical_json(dict(items)).encode()).digest()


class ServerCounter(HeuristicCounter):
    """Exact counts from the server where known, the calibrated heuristic (its base) for the rest.

    The estimates, the calibration and its persistence are the heuristic's; a count of a prompt
    the server counted before (or of such a prompt plus a suffix) starts from that exact count.
    """

    def __init__(
        self,
        tokenize: Tokenize | None = None,
        *,
        sizer: PromptSizer | None = None,
        fit: Calibration | None = None,
        margin_tokens: int = 24,
        anchors: int = 64,
    ) -> None:
        super().__init__(sizer=sizer, fit=fit, margin_tokens=margin_tokens)
        self.tokenize = tokenize
        self._anchors: OrderedDict[str, int] = OrderedDict()
        self._max_anchors = anchors
        self._tokenize_works = tokenize is not None
        self.tokenize_calls = 0

    @staticmethod
    def _digests(messages: Sequence[Message], tools: Tools) -> list[str]:
        """Digest of every prefix: `digests[k]` identifies `messages[:k]` with `tools`, chained
        from each message's own digest (`message_digest`), so a prompt of hundreds of messages
        is not hashed whole again for each of its prefixes."""
        running = hashlib.sha256(tools_json(tools).encode()).digest()
        digests = [running.hex()]
        for message in messages:
            running = hashlib.sha256(running + message_digest(message)).digest()
            digests.append(running.hex())
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
            return known + self.count_suffix(messages[k:])
        return self.estimate_messages(messages, tools)

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

    def observe(self, messages: Sequence[Message], tools: Tools, actual: int) -> None:
        if actual > 0:
            self._remember(self._digests(messages, tools)[-1], actual)
        super().observe(messages, tools, actual)

    def fork(self) -> Self:
        """A private copy sharing only the server: its calibration and remembered exact counts
        are its own from now on (a drafted scene's), so concurrent scenes never learn from each
        other in the order their replies happen to arrive."""
        twin = super().fork()
        twin._anchors = OrderedDict(self._anchors)
        twin.tokenize_calls = 0
        return twin

    def anchors(self) -> list[tuple[str, int]]:
        return list(self._anchors.items())

    def restore_anchors(self, anchors: Sequence[tuple[str, int]]) -> None:
        self._anchors.clear()
        for digest, count in anchors:
            self._remember(digest, int(count))
