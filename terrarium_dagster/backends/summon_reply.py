"""The offline backend's answer to `# Task: summon`, from the snapshot context in the
conversation: the glossary calls that touched the entry (or term) the question names, the scene
they were made in, the definition, reason and quote recorded, the posts cited as `>>post`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from terrarium_dagster.backends.chat_request import ENTRY_REF, Call, calls_after, entry_number
from terrarium_dagster.backends.extractive_summary import cut_text
from terrarium_dagster.backends.scene_message import parse_scene_message
from terrarium_dagster.backends.wire import content_text
from terrarium_dagster.store.normalize import normalize_term


def summon_answer(question: str, history: Sequence[Mapping[str, Any]]) -> str:
    """What a summoned context says about the entry (or term) the question names."""
    refs = [int(n) for n in ENTRY_REF.findall(question)]
    quoted = re.findall(r"[\"“']([^\"“”']{2,60})[\"”']", question)
    names = {normalize_term(name) for name in quoted if normalize_term(name)}
    findings: list[str] = []
    scene_id = "?"
    calls_by_scene: list[tuple[str, Call]] = []
    index = 0
    while index < len(history):
        message = history[index]
        text = content_text(message.get("content"))
        scene = parse_scene_message(text) if message.get("role") == "user" else None
        if scene is not None:
            scene_id = scene.scene_id
        following = []
        index += 1
        while index < len(history) and history[index].get("role") != "user":
            following.append(history[index])
            index += 1
        _, calls = calls_after(following)
        calls_by_scene.extend((scene_id, call) for call in calls)
    for scene_name, call in calls_by_scene:
        if call.name not in ("glossary_create", "glossary_update", "glossary_delete"):
            continue
        result = call.result or {}
        entry = result.get("entry") if isinstance(result.get("entry"), dict) else {}
        number = entry_number(entry.get("id") or call.args.get("entry_id") or result.get("deleted"))
        term = str(entry.get("term") or call.args.get("term") or "")
        # entry ids named in the question decide; quoted names only when it names none (a
        # quoted word inside a definition must not pull in other entries' edits)
        matches = number in refs if refs else bool(term) and normalize_term(term) in names
        if not matches:
            continue
        action = {"glossary_create": "created", "glossary_update": "updated"}.get(
            call.name, "deleted"
        )
        if not result.get("ok"):
            verb = call.name.removeprefix("glossary_")
            action = f"tried to {verb} (refused: {result.get('error', '?')})"
        posts = list(result.get("posts") or call.args.get("post_ids") or [])
        cited = " ".join(f">>{post}" for post in posts) or "no post given"
        line = (
            f"In scene {scene_name} I {action} [E{number}] {term}".rstrip() + f", citing {cited}."
        )
        for label, key in (("definition", "definition"), ("reason", "reason"), ("quote", "quote")):
            value = call.args.get(key)
            if value:
                line += f' My {label}: "{cut_text(str(value), 240)}"'
        findings.append(line)
    if not findings:
        for message in history:
            text = content_text(message.get("content"))
            for ref in refs:
                for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
                    if f"[E{ref}]" in sentence:
                        findings.append(f'My summary says: "{cut_text(sentence, 240)}"')
                        break
        findings = list(dict.fromkeys(findings))[:3]
    if not findings:
        subject = ", ".join(f"E{ref}" for ref in refs) or "that"
        return f"I have no record of {subject} in this context (it ends at scene {scene_id})."
    return " ".join(findings)
