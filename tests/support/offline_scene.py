"""What the offline annotator plans for one scene of a short story excerpt, and known entries to
show it: the name-rule tests' common ground."""

from __future__ import annotations

from terrarium_dagster.backends.offline import KnownEntry, SceneAnnotator, parse_scene_message
from terrarium_dagster.context.prompts import scene_message


def offline_plan(story: str, known: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """One scene of `story` (posts 101-102 of a one-scene chapter) with `known` entry lines:
    the aliases the offline annotator adds to each known entry, and the terms it creates."""
    text = scene_message(
        scene_id="100#101",
        thread_id=100,
        title="A chapter",
        scene_number=1,
        scene_count=1,
        first_post_id=101,
        last_post_id=102,
        known_entries=known,
        story=story,
    )
    plan = SceneAnnotator(min_score=0.0).plan(parse_scene_message(text))
    aliases = {
        str(args["entry_id"]): list(args["add_aliases"])
        for _id, args in plan.updates
        if "add_aliases" in args
    }
    return aliases, [candidate.term for candidate, _args in plan.creates]


def known_entry(entry_id: int, term: str, *aliases: str) -> KnownEntry:
    """A confirmed entry as the curator sees it."""
    return KnownEntry(entry_id, term, aliases, "confirmed", "A name in the story.")
