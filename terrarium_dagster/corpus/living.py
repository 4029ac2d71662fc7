"""A living corpus, as the corpus sees it: a thread's scenes after the posts already annotated,
and a post's content hash.

A quest grows while it is annotated: posts are added to the current thread, and now and then a
post is edited or deleted. New posts of an annotated thread become new scenes of that thread:
`split_after` cuts the thread's scenes after the last post annotated, so a scene that grew (QM
posts appended with no player post between) keeps its annotated part under its id and its new
posts become a scene of their own (id `<thread>#<first new post>`). Edits are noticed by the
hash of a post's story text (`text_hash`), recorded when a post is first used as a source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Protocol

from terrarium_dagster.corpus.units import Post, Scene


class PostSource(Protocol):
    def post(self, post_id: int) -> Post | None: ...


class PostsSource(Protocol):
    def posts_by_id(self, post_ids: Iterable[int]) -> dict[int, Post]: ...


def text_hash(post: Post | None) -> str | None:
    """The hash of a post's story text (what the agent read and quotes are checked against);
    None when the post is gone."""
    if post is None:
        return None
    return hashlib.sha256(post.text.encode("utf-8")).hexdigest()[:32]


def hash_lookup(post: Callable[[int], Post | None]) -> Callable[[int], str | None]:
    """post id -> its text hash now (None: deleted), over a corpus's `post` lookup."""
    return lambda post_id: text_hash(post(post_id))


def cited_lookups(
    corpus: PostsSource, post_ids: Iterable[int]
) -> tuple[Callable[[int], str | None], Callable[[int], str | None]]:
    """(its text's hash, its text) of a cited post now, None when it is gone: the posts the
    sources cite read at once, for checking them all (`store.sources.check`)."""
    found = corpus.posts_by_id(post_ids)

    def text_of(post_id: int) -> str | None:
        post = found.get(post_id)
        return post.text if post is not None else None

    return hash_lookup(found.get), text_of


def split_after(scenes: Sequence[Scene], through_post: int | None) -> list[Scene]:
    """`scenes`, with the scene holding `through_post` cut after it when posts follow it there
    (they were added after it was annotated): the annotated part keeps the scene's id, the rest
    is a new scene; scenes after it are renumbered. Unchanged when `through_post` is None, not
    in any scene, or its scene's last post."""
    result = list(scenes)
    if through_post is None:
        return result
    for position, scene in enumerate(result):
        ids = scene.post_ids
        if through_post not in ids:
            continue
        cut = ids.index(through_post) + 1
        if cut == len(ids):
            return result
        head = replace(scene, posts=scene.posts[:cut])
        rest = scene.posts[cut:]
        tail = Scene(
            id=f"{scene.thread_id}#{rest[0].id}",
            thread_id=scene.thread_id,
            index=scene.index + 1,
            posts=rest,
        )
        later = [replace(s, index=s.index + 1) for s in result[position + 1 :]]
        return [*result[:position], head, tail, *later]
    return result


def scenes_after(scenes: Sequence[Scene], cursor_scene_id: str | None) -> list[Scene]:
    """The scenes after the cursor's (all when there is no cursor; none when the cursor names no
    scene, as in a store written before the thread's scenes were known by their posts)."""
    if cursor_scene_id is None:
        return list(scenes)
    ids = [scene.id for scene in scenes]
    if cursor_scene_id not in ids:
        return []
    return list(scenes[ids.index(cursor_scene_id) + 1 :])
