"""The novels benchmark's prefix-cache estimate (`benchmarks/bench_window_novels.py::PrefixCache`):
what a request shares with an earlier one from its start is cached, the rest is not, and a
`/tokenize` is counted without being booked as a prefill."""

from __future__ import annotations

from typing import Any

from benchmarks.bench_window_novels import PrefixCache
from terrarium_dagster.testing import qwen3

SYSTEM = {"role": "system", "content": "You annotate a story. " * 40}


def _chat(*messages: dict[str, str]) -> dict[str, Any]:
    return {"messages": [SYSTEM, *messages], "max_tokens": 100}


def test_a_request_that_continues_an_earlier_one_is_mostly_cached() -> None:
    cache = PrefixCache()
    first = _chat({"role": "user", "content": "# Scene 1\n" + "The lantern swings. " * 60})
    longer = _chat(
        *first["messages"][1:],
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "# Scene 2\n" + "A new name arrives. " * 60},
    )
    assert cache.counting(first) == qwen3.request_tokens(first)
    assert cache.cached == 0, "nothing was sent before the first request"
    cache.counting(longer)
    shared = qwen3.request_tokens(first)
    assert cache.prompt == shared + qwen3.request_tokens(longer)
    # the second request's first blocks are the first request's: cached, up to the last block
    # boundary inside what they share; what follows is not (the tokens are estimated from the
    # share of characters, so about the first request's count, not exactly)
    assert 0.9 * shared <= cache.cached <= 1.05 * shared, (cache.cached, shared)


def test_a_request_with_another_start_is_not_cached_and_a_tokenize_is_not_a_prefill() -> None:
    cache = PrefixCache()
    cache.counting(_chat({"role": "user", "content": "one " * 300}))
    other = {"messages": [{"role": "system", "content": "Another prompt. " * 40}], "max_tokens": 9}
    cache.counting(other)
    assert cache.cached == 0
    before = cache.prompt
    assert cache.counting({"messages": other["messages"]}) == qwen3.request_tokens(other)
    assert cache.prompt == before
