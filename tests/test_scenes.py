"""Scene batching: maximal runs of QM story posts within a thread, and every edge case."""

from __future__ import annotations

import inspect

import pytest

from terrarium_dagster.corpus.scenes import (
    Role,
    SceneBuilder,
    batch_scenes,
    iter_batch_scenes,
    story_role,
)
from terrarium_dagster.corpus.units import Post, Scene

QM = ("qm_post", "story_post")
TALLY = ("qm_post", "vote_tally_post")
PLAYER: tuple[str, ...] = ()


def post(
    post_id: int,
    tags: tuple[str, ...] = QM,
    *,
    time: int | None = None,
    text: str | None = None,
    thread: int = 1,
) -> Post:
    return Post(
        id=post_id,
        thread_id=thread,
        name="Quest Master" if "qm_post" in tags else "Anonymous",
        trip_code=None,
        subject=None,
        time=post_id * 10 if time is None else time,
        text=f"text of {post_id}" if text is None else text,
        tags=frozenset(tags),
    )


def runs(scenes: list[Scene]) -> list[tuple[int, ...]]:
    return [scene.post_ids for scene in scenes]


def test_consecutive_qm_posts_form_one_scene_and_players_separate_scenes() -> None:
    posts = [post(1), post(2), post(3, PLAYER), post(4), post(5, PLAYER), post(6, PLAYER), post(7)]
    assert runs(batch_scenes(posts)) == [(1, 2), (4,), (7,)]


def test_scene_ids_indices_and_thread() -> None:
    scenes = batch_scenes([post(10, thread=5), post(11, PLAYER, thread=5), post(12, thread=5)])
    assert [(scene.id, scene.index, scene.thread_id) for scene in scenes] == [
        ("5#10", 0, 5),
        ("5#12", 1, 5),
    ]


def test_scene_text_renders_post_blocks_separated_by_blank_lines() -> None:
    scene = batch_scenes([post(1, text="First line\nsecond"), post(2, text="Next")])[0]
    assert scene.text == "[post 1]\nFirst line\nsecond\n\n[post 2]\nNext"


def test_thread_starting_with_player_posts() -> None:
    posts = [post(1, PLAYER), post(2, PLAYER), post(3), post(4)]
    scenes = batch_scenes(posts)
    assert runs(scenes) == [(3, 4)]
    assert scenes[0].index == 0


def test_thread_ending_with_player_posts() -> None:
    assert runs(batch_scenes([post(1), post(2), post(3, PLAYER), post(4, PLAYER)])) == [(1, 2)]


def test_thread_without_qm_post_has_no_scene() -> None:
    assert batch_scenes([post(1, PLAYER), post(2, PLAYER), post(3, ("op_post",))]) == []


def test_no_posts_no_scenes() -> None:
    assert batch_scenes([]) == []


def test_vote_tally_is_excluded_and_ends_the_run() -> None:
    posts = [post(1), post(2, TALLY), post(3), post(4)]
    assert runs(batch_scenes(posts)) == [(1,), (3, 4)]


def test_vote_tally_without_qm_tag_also_ends_the_run() -> None:
    assert runs(batch_scenes([post(1), post(2, ("vote_tally_post",)), post(3)])) == [(1,), (3,)]


def test_tallies_alone_make_no_scene() -> None:
    assert batch_scenes([post(1, TALLY), post(2, PLAYER), post(3, TALLY)]) == []


def test_empty_qm_post_is_skipped_without_breaking_the_run() -> None:
    posts = [post(1), post(2, text=""), post(3)]
    assert runs(batch_scenes(posts)) == [(1, 3)]


def test_empty_qm_post_alone_makes_no_scene() -> None:
    assert batch_scenes([post(1, PLAYER), post(2, text=""), post(3, PLAYER)]) == []


def test_scene_starting_after_an_empty_qm_post_is_named_by_its_first_text_post() -> None:
    scenes = batch_scenes([post(1, text=""), post(2), post(3)])
    assert [scene.id for scene in scenes] == ["1#2"]


def test_qm_post_with_dropped_trip_is_still_qm() -> None:
    posts = [post(1), post(2, ("qm_post", "story_post", "dropped_trip")), post(3)]
    assert runs(batch_scenes(posts)) == [(1, 2, 3)]


def test_dropped_trip_without_qm_tag_is_a_player_post() -> None:
    assert runs(batch_scenes([post(1), post(2, ("dropped_trip",)), post(3)])) == [(1,), (3,)]


def test_opening_post_tagged_qm_starts_a_scene() -> None:
    posts = [post(1, ("op_post", "qm_post", "story_post")), post(2), post(3, PLAYER)]
    assert runs(batch_scenes(posts)) == [(1, 2)]


def test_story_post_without_qm_tag_is_not_story() -> None:
    assert batch_scenes([post(1, ("story_post",))]) == []


def test_posts_are_ordered_by_time_then_id() -> None:
    # Post 4 has the earliest time: it comes first although its id is the largest; 2 and 3 share
    # a time, so the lower id comes first.
    posts = [
        post(1, time=100),
        post(2, PLAYER, time=200),
        post(3, time=200),
        post(4, PLAYER, time=50),
    ]
    assert runs(batch_scenes(posts)) == [(1,), (3,)]
    posts = [post(3, time=300), post(1, time=100), post(2, time=200)]
    assert runs(batch_scenes(posts)) == [(1, 2, 3)]


def test_interleaved_times_split_a_run_where_a_player_post_falls_between() -> None:
    # By id the QM posts 1, 2, 3 are consecutive, but player post 9 was posted between 2 and 3.
    posts = [post(1, time=10), post(2, time=20), post(3, time=40), post(9, PLAYER, time=30)]
    assert runs(batch_scenes(posts)) == [(1, 2), (3,)]


def test_several_threads_restart_scene_indices() -> None:
    posts = [post(1, thread=1), post(2, thread=1), post(5, thread=2), post(6, PLAYER, thread=2)]
    posts.append(post(7, thread=2))
    scenes = batch_scenes(posts)
    assert [(scene.id, scene.index) for scene in scenes] == [("1#1", 0), ("2#5", 0), ("2#7", 1)]


def test_iter_batch_scenes_is_lazy() -> None:
    consumed: list[int] = []

    def feed() -> object:
        for item in [post(1), post(2, PLAYER), post(3), post(4, PLAYER), post(5)]:
            consumed.append(item.id)
            yield item

    scenes = iter_batch_scenes(feed())  # type: ignore[arg-type]
    assert inspect.isgenerator(scenes)
    assert next(scenes).post_ids == (1,)
    assert consumed == [1, 2]


def test_iter_batch_scenes_refuses_posts_out_of_order() -> None:
    with pytest.raises(ValueError, match="time, id"):
        list(iter_batch_scenes([post(2), post(1)]))


def test_scene_builder_refuses_a_post_of_another_thread() -> None:
    builder = SceneBuilder(1)
    with pytest.raises(ValueError, match="not in thread 1"):
        builder.add(post(1, thread=2))


def test_scene_builder_yields_each_scene_when_its_run_ends() -> None:
    builder = SceneBuilder(1)
    assert builder.add(post(1)) is None
    assert builder.add(post(2)) is None
    ended = builder.add(post(3, PLAYER))
    assert ended is not None and ended.post_ids == (1, 2)
    assert builder.interrupt() is None
    assert builder.add(post(4)) is None
    last = builder.finish()
    assert last is not None and (last.index, last.post_ids) == (1, (4,))
    assert builder.scenes_done == 2


@pytest.mark.parametrize(
    ("tags", "role"),
    [
        (("qm_post",), Role.STORY),
        (("qm_post", "op_post", "story_post", "dropped_trip"), Role.STORY),
        (("qm_post", "vote_tally_post"), Role.BREAK),
        (("story_post",), Role.BREAK),
        ((), Role.BREAK),
    ],
)
def test_story_role(tags: tuple[str, ...], role: Role) -> None:
    assert story_role(frozenset(tags)) is role
