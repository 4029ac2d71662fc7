"""A scene too large for one request, read in parts: where each part starts and ends, and what a
thread records of it (`Annotator` reads a scene part by part when the scene's text does not fit
the room its request leaves).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from terrarium_dagster.corpus.units import Post, Scene
from terrarium_dagster.errors import StoreError
from terrarium_dagster.store.progress import THROUGH_POST

PART_MARK = "@"  # a part of a split scene: "<scene id>@<post id>.<piece>", where the part starts
PART_NEXT = (
    "part_next"  # thread state extra: "<post id>.<piece>" where the scene's next part starts
)


def next_part(
    scene: Scene, start: tuple[int, int], max_chars: int
) -> tuple[Scene, tuple[int, int] | None]:
    """The part of `scene` from `start` (post index, piece of that post) whose text fits
    `max_chars`, and where the next part starts (None: this part ends the scene).

    A scene that fits is its own only part, unchanged. Else whole posts are taken while they fit;
    a post too long for the room alone is cut at paragraphs (a paragraph too long, at sentences
    or words: `post_pieces`), in order. A part holds at least one piece, so the scene always
    advances. Its id is `<scene id>@<post id>.<piece>`; its posts are the scene's posts (a cut
    post keeps its id and holds the part's pieces of its text): provenance is unchanged."""
    posts, (index, piece) = scene.posts, start
    if start == (0, 0) and len(scene.text) <= max_chars:
        return scene, None
    chosen: list[Post] = []
    size = 0
    if piece == 0 and _message_chars(posts[index].text) <= max_chars:
        chosen.append(posts[index])
        size, index = _message_chars(posts[index].text), index + 1
    else:
        pieces = post_pieces(posts[index].text, max_chars)
        end = piece
        while end < len(pieces) and (
            end == piece or size + _message_chars(pieces[end]) <= max_chars
        ):
            size += _message_chars(pieces[end])
            end += 1
        chosen.append(replace(posts[index], text="\n\n".join(pieces[piece:end])))
        if end < len(pieces):
            return _part(scene, chosen, start), (index, end)
        index += 1
    while index < len(posts) and size + _message_chars(posts[index].text) <= max_chars:
        chosen.append(posts[index])
        size += _message_chars(posts[index].text)
        index += 1
    return _part(scene, chosen, start), ((index, 0) if index < len(posts) else None)


def part_mark(scene: Scene, position: tuple[int, int] | None) -> str | None:
    """`position` (post index, piece) as the thread records it: "<post id>.<piece>"."""
    return None if position is None else f"{scene.posts[position[0]].id}.{position[1]}"


def part_position(scene: Scene, mark: object, cursor: str) -> tuple[int, int] | None:
    """The (post index, piece) a recorded mark names in `scene`; None for no mark (the scene
    ended); StoreError when it names no post of the scene."""
    if mark is None:
        return None
    post_id, _, piece = str(mark).partition(".")
    ids = [post.id for post in scene.posts]
    if not post_id.isdigit() or int(post_id) not in ids or not piece.isdigit():
        raise StoreError(f"the thread's cursor {cursor!r} names no part of scene {scene.id}")
    return ids.index(int(post_id)), int(piece)


def part_progress(scene: Scene, after: str | None, split: bool) -> dict[str, Any]:
    """What a scene's end records beside the cursor: the last post annotated once the scene is
    done (a living thread's new posts start after it), and for a split scene where its next
    part starts (None once its last part is done)."""
    if after is not None:
        return {PART_NEXT: after}
    if split:
        return {THROUGH_POST: scene.posts[-1].id, PART_NEXT: None}
    return {THROUGH_POST: scene.posts[-1].id}


def _message_chars(text: str) -> int:
    """Characters a post's text takes in a scene message (its `[post N]` line and a gap)."""
    return len(text) + 24


def _part(scene: Scene, posts: list[Post], start: tuple[int, int]) -> Scene:
    first = scene.posts[start[0]].id
    return Scene(
        id=f"{scene.id}{PART_MARK}{first}.{start[1]}",
        thread_id=scene.thread_id,
        index=scene.index,
        posts=tuple(posts),
    )


def post_pieces(text: str, max_chars: int) -> list[str]:
    """A post's text in the pieces a part may take: its paragraphs (blank-line separated, else
    its lines), a paragraph longer than the room cut at sentence ends, else at spaces."""
    room = max(200, max_chars - 64)
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if len(paragraphs) <= 1:
        paragraphs = [p for p in text.split("\n") if p.strip()] or [text]
    pieces: list[str] = []
    for paragraph in paragraphs:
        while len(paragraph) > room:
            cut = paragraph.rfind(". ", room // 2, room)
            cut = cut + 1 if cut >= 0 else paragraph.rfind(" ", room // 2, room)
            cut = cut if cut > 0 else room
            pieces.append(paragraph[:cut].strip())
            paragraph = paragraph[cut:].strip()
        if paragraph:
            pieces.append(paragraph)
    return pieces or [text]
