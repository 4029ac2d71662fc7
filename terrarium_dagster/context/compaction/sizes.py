"""What a request of one context may hold, and what its messages measure.

`PromptSizes` holds the budget (the model's window, lowered when the server says it is smaller),
the completion's `max_tokens`, the token counter and the tools every prompt carries. It counts
messages (asking the server for an exact count only near the limit), checks a request before it
is sent, and feeds the counter what the server counted: a prompt's usage, or a 400's refusal
(`learn_refusal`). `ContextManager` owns one and plans compaction with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from terrarium_dagster.context import prompts
from terrarium_dagster.context.state import Message, tool_pair_problems
from terrarium_dagster.context.tokens import TokenCounter, exact_threshold
from terrarium_dagster.errors import BudgetError

_OVERFLOW_LIMIT = (
    re.compile(r"maximum context length (?:is |of )?\(?(\d+)"),
    re.compile(r"maximum model length (?:is |of )?\(?(\d+)"),
    re.compile(r"context length is only (\d+)"),
)
_OVERFLOW_PROMPT = (
    re.compile(r"\((\d+) in the messages"),
    re.compile(r"request has (\d+) input tokens"),
    re.compile(r"prompt contains (?:at least )?(\d+) input tokens"),
    re.compile(r"[Yy]ou passed (\d+) input tokens"),
    re.compile(r"prompt \(length (\d+)\)"),
    re.compile(r"[Ii]nput length \((\d+)\)"),
)


class PromptSizes:
    """The budget of one context and the counter that measures its prompts."""

    def __init__(
        self,
        *,
        budget: int,
        max_tokens: int,
        counter: TokenCounter,
        tools: Sequence[dict[str, Any]] | None,
    ) -> None:
        if max_tokens >= budget:
            raise BudgetError(f"max_tokens ({max_tokens}) must be below the budget ({budget})")
        self.budget = budget
        self.max_tokens = max_tokens
        self.counter = counter
        self.tools = prompts.canonical_tools(tools)

    @property
    def limit(self) -> int:
        """Prompt tokens a request may have: the budget minus the completion's max_tokens."""
        return self.budget - self.max_tokens

    def describe(self, limit: int) -> str:
        """`limit` and where it comes from, in numbers that add up (a budget a 400 lowered
        included): every budget message states it so."""
        window = limit + self.max_tokens
        return f"{limit} tokens (a window of {window} minus max_tokens {self.max_tokens})"

    def count(self, messages: Sequence[Message], *, exact_above: int | None = None) -> int:
        """Prompt tokens of `messages`; asks the server for an exact count when the estimate
        is above the limit `exact_above` or close below it (`exact_threshold`: an estimate may
        fall short of the server's count)."""
        estimate = self.counter.count_messages(messages, self.tools)
        if exact_above is not None and estimate > exact_threshold(exact_above):
            exact = self.counter.count_exact(messages, self.tools)
            if exact is not None:
                return exact
        return estimate

    def estimate(self, messages: Iterable[Message]) -> int:
        return sum(self.counter.estimate_message(message) for message in messages)

    def fits(self, messages: Sequence[Message]) -> bool:
        """True when `messages` plus max_tokens fit the budget."""
        return self.count(messages, exact_above=self.limit) <= self.limit

    def check(self, messages: Sequence[Message]) -> int:
        """Raise unless `messages` may be sent: within budget, no tool call without its result.

        Returns the prompt token count. The loop calls it (or `prepare_call`) before every call.
        """
        check_pairs(messages)
        tokens = self.count(messages, exact_above=self.limit)
        if tokens > self.limit:
            raise BudgetError(
                f"request of {tokens} prompt tokens plus {self.max_tokens} for the answer exceeds "
                f"the context budget of {self.budget} tokens"
            )
        return tokens

    def observe(self, messages: Sequence[Message], prompt_tokens: int | None) -> None:
        """Feed the server's count of a sent prompt (usage.prompt_tokens) to the counter."""
        if prompt_tokens:
            self.counter.observe(messages, self.tools, prompt_tokens)

    def learn_refusal(self, sent: Sequence[Message], error: BaseException | str | None) -> None:
        """The server refused `sent` as too long (400): take its window when it is smaller than
        the budget, and teach the counter what it counted."""
        text = str(error or "")
        server_limit, server_prompt = parse_overflow(text)
        server_limit = getattr(error, "max_context_length", None) or server_limit
        server_prompt = getattr(error, "prompt_tokens", None) or server_prompt
        if server_limit is not None and server_limit < self.budget:
            self.budget = server_limit  # the server's window is smaller than configured
        if server_prompt is not None:
            if "at least" in text:  # a lower bound (vLLM 0.18+ may stop counting early)
                server_prompt = max(server_prompt, self.counter.count_messages(sent, self.tools))
            self.counter.observe(sent, self.tools, server_prompt)
        else:  # the server only said "too long": it counted more than the limit, by how much
            # is unknown, so learn a count that errs high (the limit plus an answer's room)
            estimate = self.counter.count_messages(sent, self.tools)
            self.counter.observe(sent, self.tools, max(estimate, self.limit) + self.max_tokens)


def check_pairs(messages: Sequence[Message]) -> None:
    """ValueError when a tool call and its result are separated (or one is missing)."""
    problems = tool_pair_problems(messages)
    if problems:
        raise ValueError("message list separates tool calls and results: " + problems[0])


def parse_overflow(text: str) -> tuple[int | None, int | None]:
    """(the server's max context length, the prompt tokens it counted) from a 400's message."""
    limit = next((int(m.group(1)) for p in _OVERFLOW_LIMIT if (m := p.search(text))), None)
    prompt = next((int(m.group(1)) for p in _OVERFLOW_PROMPT if (m := p.search(text))), None)
    return limit, prompt
