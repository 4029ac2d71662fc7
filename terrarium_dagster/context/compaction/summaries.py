"""Summaries for compaction: asked of the model through the `Summarizer` a compaction was handed,
checked, and replaced by a deterministic extractive summary when the answer is unusable.

A request continues the cached prefix: the system prompt and the conversation as the server last
saw it (`origin_prefix`), with the instruction appended as the last user message. An empty,
error-like or echoed answer is refused (None). The model is not asked for entry ids or post
numbers: a summary gets the entry ids it must keep and did not name appended, and the posts it
covers (`covered_posts`), so the code, not the model's output tokens, carries the citations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction.events import CompactionEvent, Tier
from terrarium_dagster.context.compaction.step import Compaction
from terrarium_dagster.context.compaction.text import clip_text, strip_thinking
from terrarium_dagster.context.layout import head_messages, prefix_messages
from terrarium_dagster.context.state import Message, SceneSpan, Summary
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.errors import BudgetError, NoAnswerError

# how a refusal or a failure starts (a summary is third-person prose about the story)
_ERROR_START = re.compile(
    r"(error\b|i'?m sorry|i am sorry|sorry,|i can(?:'t|not| not)\b|as an ai\b)"
)


@dataclass(frozen=True)
class SummaryRequest:
    """One summary to ask for: the prefix it continues, the instruction, its size, and the entry
    ids it must name (none: no check)."""

    prefix: list[Message]
    instruction: str
    cap_tokens: int
    entry_ids: Sequence[int] = ()
    sources: str = ""  # the posts the summary covers, appended to it (`covered_posts`)


def origin_prefix(job: Compaction, last_scene_id: str | None) -> list[Message]:
    """The prefix as the server last saw it, up to the end of scene `last_scene_id`."""
    if last_scene_id is None:
        return head_messages(job.origin, job.system_prompt)
    span = next((s for s in job.origin.scenes if s.scene_id == last_scene_id), None)
    if span is None:
        return prefix_messages(job.state, job.system_prompt)
    return prefix_messages(job.origin, job.system_prompt, upto=span.end)


def ask_summary(job: Compaction, request: SummaryRequest) -> str | None:
    """The checked summary the model gives for `request`, or None when it is unusable (or no
    model was handed, or the request would not fit)."""
    messages = [*request.prefix, {"role": "user", "content": request.instruction}]
    if job.summarizer is None or not job.fits(messages):
        return None
    try:
        answer = job.summarizer(messages)
    except (BudgetError, NoAnswerError):
        return None  # no usable answer, as in an uninterrupted run: the extractive summary
    text = accept_summary(
        job.counter, answer, cap_tokens=request.cap_tokens, entry_ids=request.entry_ids
    )
    if text is not None and request.sources and request.sources not in text:
        text += "\n" + request.sources
    return text


def scenes_summary(
    job: Compaction,
    instruction: str,
    *,
    spans: Sequence[SceneSpan],
    previous: Summary | None,
    cap_tokens: int,
    entry_ids: Sequence[int],
) -> SummaryRequest:
    """The request for a summary of the scenes `spans` (and of what `previous` covered): the
    prefix as the server saw it up to the last of them, the posts from the first scene covered."""
    first_scene = previous.scene_ids[0] if previous and previous.scene_ids else spans[0].scene_id
    return SummaryRequest(
        origin_prefix(job, spans[-1].scene_id),
        instruction,
        cap_tokens=cap_tokens,
        entry_ids=entry_ids,
        sources=covered_posts(first_scene, spans, job.state.scene_messages),
    )


def ask_ahead_of_flush(job: Compaction, request: SummaryRequest) -> None:
    """Send `request` now, beside the flush the pass is about to run, when there is one: the
    summary is decided by the context as the compaction found it, never by the flush's answer
    (whose messages are not kept; what it records goes to the glossary), so the two need not
    wait for each other. `ask_summary` takes the reply at its turn (`Compaction.ahead`): the
    run counts and learns as if it asked then."""
    if job.ahead is None or job.summarizer is None or job.flushed or job.flusher is None:
        return
    job.ahead("summary", [*request.prefix, {"role": "user", "content": request.instruction}])


def accept_summary(
    counter: TokenCounter, answer: str | None, *, cap_tokens: int, entry_ids: Sequence[int]
) -> str | None:
    """`answer` as a summary (clipped, entry ids it left out appended), or None if unusable."""
    text = strip_thinking(answer or "").strip()
    if not text:
        return None
    lowered = text.lower()
    if _ERROR_START.match(lowered) or '"ok":false' in lowered.replace(" ", ""):
        return None
    if text.startswith(("# Task:", prompts.SCENE_HEADING, "<tool_call>", '{"name"')):
        return None
    if counter.estimate_text(text) > cap_tokens * 3 // 2:
        text = clip_text(counter, text, cap_tokens)
    mentioned = set(prompts.parse_entry_refs(text))
    missing = [entry_id for entry_id in sorted(set(entry_ids)) if entry_id not in mentioned]
    if missing:
        text += "\n" + _also_touched(counter, missing, max(24, cap_tokens // 3))
    return text


_POST_LABEL = re.compile(r"^\[post (\d+)", re.MULTILINE)


def covered_posts(
    first_scene_id: str,
    spans: Sequence[SceneSpan],
    messages_of: Callable[[SceneSpan], list[Message]],
) -> str:
    """The citation line of a summary: `Posts >>5–>>61.`, from the first post of
    `first_scene_id` (scene ids are `<thread>#<first post>`) to the last post the scene messages
    of `spans` show."""
    posts = [
        int(number)
        for span in spans
        for message in messages_of(span)[:1]
        for number in _POST_LABEL.findall(str(message.get("content") or ""))
    ]
    first = first_scene_id.rpartition("#")[2]
    if not posts or not first.isdigit():
        return ""
    return f"Posts >>{first}–>>{max(posts)}."


def _also_touched(counter: TokenCounter, missing: Sequence[int], room_tokens: int) -> str:
    """The line naming entry ids a summary left out, the newest first kept when it would
    not fit `room_tokens` (the summary's `entry_ids` keep them all)."""
    kept = list(missing)
    while True:
        left_out = len(missing) - len(kept)
        more = f" and {left_out} earlier" if left_out else ""
        line = f"Also touched: {prompts.entry_refs(kept)}{more}."
        if len(kept) <= 1 or counter.estimate_text(line) <= room_tokens:
            return line
        kept = kept[len(kept) // 4 or 1 :]


def extractive(
    counter: TokenCounter,
    *,
    title: str,
    spans: Sequence[SceneSpan],
    messages_of: Callable[[SceneSpan], list[Message]],
    previous: str,
    entry_ids: Sequence[int],
    cap_tokens: int,
) -> str:
    """The deterministic fallback summary: first story lines of each scene and entry ids."""
    lines = [title, "Entries: " + prompts.entry_refs(entry_ids)]
    for span in spans:
        lines.append(f"- {span.scene_id}: {_first_story_line(messages_of(span))}")
    new = "\n".join(lines)
    room = cap_tokens - counter.estimate_text(new)
    if previous.strip() and room > 32:
        return clip_text(counter, previous.strip(), room, keep_end=True) + "\n" + new
    return clip_text(counter, new, cap_tokens)


def placeholder_of(previous: Summary | None) -> str:
    """The text of a previous summary that is a placeholder (extractive), else "": it is kept as
    it is, never handed to the model to rewrite (it would invent what the placeholder leaves
    out)."""
    return previous.text if previous and previous.fallback else ""


def summary_of_scenes(
    job: Compaction,
    answer: str | None,
    *,
    kind: Literal["chunk", "thread"],
    thread_id: int,
    spans: Sequence[SceneSpan],
    previous: Summary | None,
    entry_ids: list[int],
    cap_tokens: int,
    title: str,
) -> Summary:
    """The summary that takes the place of `spans` and of the `previous` summary: the model's
    checked `answer` (after a placeholder previous summary, kept as it is), else the
    deterministic extractive summary titled `title`."""
    text = answer
    placeholder = placeholder_of(previous)
    if text is not None and placeholder:
        text = clip_text(job.counter, f"{placeholder}\n{text}", cap_tokens, keep_end=True)
    fallback = text is None
    if text is None:
        text = extractive(
            job.counter,
            title=title,
            spans=spans,
            messages_of=job.state.scene_messages,
            previous=previous.text if previous else "",
            entry_ids=entry_ids,
            cap_tokens=cap_tokens,
        )
    material = sum(job.estimate(job.state.scene_messages(s)) for s in spans)
    return Summary(
        kind=kind,
        thread_id=thread_id,
        scene_ids=[*(previous.scene_ids if previous else []), *(s.scene_id for s in spans)],
        entry_ids=entry_ids,
        text=text,
        tokens_before=material + (previous.tokens_after if previous else 0),
        tokens_after=job.counter.estimate_text(text),
        fallback=fallback,
    )


def summary_event(
    tier: Tier, summary: Summary, scene_ids: list[str], *, flushed: bool
) -> CompactionEvent:
    """The event of a pass that put `summary` in the place of the scenes `scene_ids`."""
    return CompactionEvent(
        tier=tier,
        entry_ids=summary.entry_ids,
        scene_ids=scene_ids,
        summary=summary.text,
        fallback=summary.fallback,
        flushed=flushed,
    )


def words(tokens: int) -> int:
    """The word count a summary of `tokens` tokens is asked for."""
    return max(40, int(tokens * 0.65))


def _first_story_line(messages: Sequence[Message]) -> str:
    """The first line of story text of a scene's user message (or of its first message)."""
    if not messages:
        return ""
    content = str(messages[0].get("content") or "")
    body = content.split("\n## Story\n", 1)[-1]
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(("[post ", "#")):
            return line[:160]
    return ""
