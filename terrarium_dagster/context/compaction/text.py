"""Text cuts compaction makes without the model: thinking blocks out, long texts clipped or
truncated around a marker. Sizes are the token counter's estimates."""

from __future__ import annotations

import re

from terrarium_dagster.context.tokens import TokenCounter

TRUNCATION_MARKER = "[… truncated {count} characters …]"
TRUNCATED = re.compile(r"\[… truncated \d+ characters …\]")
_THINK_BLOCK = re.compile(r"<(think|thinking)>.*?</\1>\s*", re.DOTALL)
_THINK_OPENLESS = re.compile(r"^.*?</(?:think|thinking)>\s*", re.DOTALL)


def strip_thinking(text: str) -> str:
    """`text` without `<think>…</think>` blocks (and a leading block missing its opening tag)."""
    if "</think" not in text:
        return text
    stripped = _THINK_BLOCK.sub("", text)
    if "</think" in stripped:
        stripped = _THINK_OPENLESS.sub("", stripped, count=1)
    return stripped


def clip_text(counter: TokenCounter, text: str, cap_tokens: int, *, keep_end: bool = False) -> str:
    """`text` cut (at a line or word boundary) to about `cap_tokens` tokens."""
    if counter.estimate_text(text) <= cap_tokens:
        return text
    chars = max(16, int(len(text) * cap_tokens / max(1, counter.estimate_text(text))))
    if keep_end:
        cut = text[-chars:]
        boundary = cut.find("\n")
        return "…" + (cut[boundary + 1 :] if 0 <= boundary < len(cut) // 2 else cut)
    cut = text[:chars]
    boundary = max(cut.rfind("\n"), cut.rfind(". "))
    return (cut[: boundary + 1] if boundary > len(cut) // 2 else cut).rstrip() + " …"


def truncate_text(counter: TokenCounter, text: str, keep_tokens: int) -> str:
    """`text` kept to its head and tail (about `keep_tokens` tokens) around a marker."""
    size = counter.estimate_text(text)
    if size <= keep_tokens:
        return text
    keep_chars = max(24, int(len(text) * keep_tokens / size))
    head = text[: keep_chars * 2 // 3]
    tail = text[len(text) - keep_chars // 3 :]
    removed = len(text) - len(head) - len(tail)
    return f"{head}\n{TRUNCATION_MARKER.format(count=removed)}\n{tail}"
