"""The offline backend's summaries: `# Task: summarize_chunk | summarize_thread | fold_story`.

`# Task: summarize_chunk | summarize_thread | fold_story`: an extractive summary of the scene
exchanges in the conversation (those named in the task body by scene id or thread, else all),
integrating `## Previous summary`, keeping every `[E<id>]` and post reference, within a length
bound (`at most N words|tokens|characters` in the body, else a default per task).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from terrarium_dagster.backends.chat_request import ENTRY_REF, calls_after, entry_number
from terrarium_dagster.backends.offline_tokenizer import CHARS_PER_TOKEN
from terrarium_dagster.backends.scene_message import message_sections, parse_scene_message
from terrarium_dagster.backends.wire import content_text
from terrarium_dagster.terms.text_search import clean_sentence

SUMMARY_CHARS = {"summarize_chunk": 1200, "summarize_thread": 1600, "fold_story": 2400}

_SCENE_ID = re.compile(r"\b(\d+#\d+)\b")
_SCENE_RANGE = re.compile(r"\b(\d+#\d+) \.\. (\d+#\d+)\b")
_LENGTH_BOUND = re.compile(r"at most (\d+) (words?|tokens?|characters?|chars?)", re.IGNORECASE)


def cut_text(text: str, limit: int) -> str:
    """`text` on one line, cut at a word within `limit` characters and marked `…`."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


@dataclass(slots=True)
class _SceneDigest:
    scene_id: str
    first_post: int | None
    last_post: int | None
    gist: str
    entries: dict[str, str]  # "E12" -> term (or "")


def _scene_exchanges(messages: Sequence[Mapping[str, Any]]) -> list[_SceneDigest]:
    digests: list[_SceneDigest] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        text = content_text(message.get("content"))
        scene = parse_scene_message(text) if message.get("role") == "user" else None
        index += 1
        if scene is None:
            continue
        following = []
        while index < len(messages) and messages[index].get("role") != "user":
            following.append(messages[index])
            index += 1
        _, calls = calls_after(following)
        entries: dict[str, str] = {}
        for call in calls:
            result = call.result or {}
            entry = result.get("entry")
            if result.get("ok") and isinstance(entry, dict) and entry.get("id"):
                entries.setdefault(str(entry["id"]), str(entry.get("term", "")))
        for message_after in following:
            for ref in ENTRY_REF.findall(content_text(message_after.get("content"))):
                entries.setdefault(f"E{ref}", "")
        posts = [pid for pid, _ in scene.posts]
        first_text = scene.posts[0][1] if scene.posts else ""
        gist = cut_text(clean_sentence(first_text.split("\n")[0]) if first_text else "", 140)
        digests.append(
            _SceneDigest(
                scene.scene_id,
                posts[0] if posts else None,
                posts[-1] if posts else None,
                gist,
                entries,
            )
        )
    return digests


def _length_bound(task: str, body: str) -> int:
    match = _LENGTH_BOUND.search(body)
    if match is None:
        return SUMMARY_CHARS.get(task, 1600)
    number, unit = int(match.group(1)), match.group(2).casefold()
    if unit.startswith("word"):
        return number * 6
    if unit.startswith("token"):
        return number * CHARS_PER_TOKEN
    return number


def _entry_mentions(text: str) -> list[str]:
    return list(dict.fromkeys(f"E{number}" for number in re.findall(r"\[E(\d+)\]", text)))


def summarize(task: str, body: str, history: Sequence[Mapping[str, Any]]) -> str:
    """The extractive summary answering a summary task (see the module docstring)."""
    sections = message_sections(body)
    previous = " ".join(sections.get("previous summary", "").split())
    scope_ids = set(_SCENE_ID.findall(body))
    thread = re.search(r"\bthread (\d+)\b", body)
    digests = _scene_exchanges(history)
    positions = [i for i, d in enumerate(digests) if d.scene_id in scope_ids]
    span = _SCENE_RANGE.search(body)
    if span and {span.group(1), span.group(2)} <= {d.scene_id for d in digests}:
        ids = [d.scene_id for d in digests]
        first, last = ids.index(span.group(1)), len(ids) - 1 - ids[::-1].index(span.group(2))
        positions += list(range(first, last + 1))
    chosen = [d for i, d in enumerate(digests) if i in set(positions)]
    if not chosen and thread:
        chosen = [d for d in digests if d.scene_id.startswith(f"{thread.group(1)}#")]
    if not chosen and task != "fold_story":
        chosen = digests
    # text handed over in the body itself (e.g. thread summaries to fold), beyond the previous one
    handed = "\n".join(
        _handed_text(text)
        for heading, text in sections.items()
        if heading != "previous summary" and "[E" in text
    )
    limit = _length_bound(task, body)

    def scene_line(digest: _SceneDigest, with_gist: bool) -> str:
        posts = ""
        if digest.first_post is not None:
            posts = f" (>>{digest.first_post}" + (
                f"-{digest.last_post})" if digest.last_post != digest.first_post else ")"
            )
        refs = ", ".join(
            f"[{ref}] {term}".rstrip() for ref, term in sorted(digest.entries.items(), key=_ref_key)
        )
        gist = f" {digest.gist}" if with_gist and digest.gist else ""
        tail = f" Entries: {refs}." if refs else ""
        return f"Scene {digest.scene_id}{posts}:{gist}{tail}"

    listed = re.search(r"^entries: (.*)$", body, re.MULTILINE)
    required = list(
        dict.fromkeys(
            [*_entry_mentions(listed.group(1) if listed else "")]
            + [*_entry_mentions(previous), *_entry_mentions(handed)]
            + [ref for d in chosen for ref in sorted(d.entries, key=_ref_key)]
        )
    )
    attempts = (
        (previous, handed, True),
        (previous, handed, False),
        (cut_text(previous, limit // 3), cut_text(handed, limit // 3), False),
        ("", "", False),
    )
    text = ""
    for prev_text, handed_text, gists in attempts:
        parts = [p for p in (prev_text, handed_text) if p]
        parts += [scene_line(d, gists) for d in chosen]
        text = "\n".join(parts)
        missing = [ref for ref in required if f"[{ref}]" not in text]
        if missing:
            text += "\nAlso: " + " ".join(f"[{ref}]" for ref in missing) + "."
        if len(text) <= limit:
            return text or "Nothing happened yet."
    ids_only = "Entries so far: " + " ".join(f"[{ref}]" for ref in required) + "."
    return ids_only if len(ids_only) <= limit or not required else cut_text(ids_only, limit)


def _handed_text(text: str) -> str:
    """Summaries handed over in a task body (`### Thread 12` blocks) as plain lines."""
    lines: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line or line.startswith("entries:"):
            continue
        if line.startswith("#"):
            lines.append(line.lstrip("# ") + ":")
        elif lines and lines[-1].endswith(":"):
            lines[-1] += " " + line
        else:
            lines.append(line)
    return "\n".join(lines)


def _ref_key(item: Any) -> int:
    ref = item[0] if isinstance(item, tuple) else item
    number = entry_number(ref)
    return number if number is not None else 0
