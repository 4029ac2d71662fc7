"""A thread's scene batches in numbers, for a run's report and the `scene_batches` asset."""

from __future__ import annotations

from dataclasses import dataclass

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Thread

CHARS_PER_TOKEN = 4.0
OPENING_CHARS = 80


@dataclass(frozen=True, slots=True)
class SceneFigures:
    scene_id: str
    posts: int
    chars: int
    first_post_ref: str
    first_post_url: str | None
    opening: str


@dataclass(frozen=True, slots=True)
class SceneBatchSummary:
    thread_id: int
    title: str
    posts: int
    story_posts: int
    story_chars: int
    approx_tokens: int
    scenes: tuple[SceneFigures, ...]


def scene_batch_summary(corpus: Corpus, thread: Thread) -> SceneBatchSummary:
    """Count the thread's posts and scenes; tokens are approximate (characters / 4)."""
    scenes = corpus.scenes(thread.id)
    figures = []
    for scene in scenes:
        text = scene.text
        first = scene.posts[0]
        opening = " ".join(first.text.split())[:OPENING_CHARS]
        figures.append(
            SceneFigures(
                scene_id=scene.id,
                posts=len(scene.posts),
                chars=len(text),
                first_post_ref=first.ref,
                first_post_url=corpus.post_url(first),
                opening=opening,
            )
        )
    story_chars = sum(item.chars for item in figures)
    return SceneBatchSummary(
        thread_id=thread.id,
        title=thread.title,
        posts=thread.post_count,
        story_posts=sum(item.posts for item in figures),
        story_chars=story_chars,
        approx_tokens=round(story_chars / CHARS_PER_TOKEN),
        scenes=tuple(figures),
    )
