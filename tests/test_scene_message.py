"""What the agent is shown with a scene: known entries without repeats, bounded story text."""

from __future__ import annotations

from collections.abc import Sequence

from terrarium_dagster.agent.relevant import RelevantEntry, entry_line
from terrarium_dagster.agent.scene_lines import fit_story, known_lines, lines_shown, stale_in_view
from terrarium_dagster.backends.offline import parse_scene_message, with_earlier_known
from terrarium_dagster.context import prompts
from terrarium_dagster.corpus.units import Post, Scene
from terrarium_dagster.store.models import Entry


def _entry(
    entry_id: int, term: str, definition: str = "A long-serving envoy of the north."
) -> Entry:
    return Entry(
        id=entry_id, term=term, norm_term=term.lower(), definition=definition, status="tentative"
    )


def _scene_text(entries: list[Entry], story: str = "[post 1]\nVaskari came.") -> str:
    return prompts.scene_message(
        scene_id="1#1",
        thread_id=1,
        title="T",
        scene_number=1,
        scene_count=1,
        first_post_id=1,
        last_post_id=1,
        known_entries=[entry_line(e) for e in entries],
        story=story,
    )


def test_a_line_already_in_the_history_is_not_repeated() -> None:
    vaskari, quill = _entry(1, "Vaskari"), _entry(2, "Quillhaven")
    history = [{"role": "user", "content": _scene_text([vaskari])}]
    relevant = [RelevantEntry(vaskari, "occurs", 0), RelevantEntry(quill, "occurs", 5)]
    assert known_lines(relevant, lines_shown(history), budget=500) == [entry_line(quill)]


def test_a_changed_entry_is_listed_again() -> None:
    before = _entry(1, "Vaskari")
    after = _entry(1, "Vaskari", "An envoy, later revealed as a spy.")
    history = [{"role": "user", "content": _scene_text([before])}]
    relevant = [RelevantEntry(after, "occurs", 0)]
    assert known_lines(relevant, lines_shown(history), budget=500) == [entry_line(after)]


def test_occurring_entries_over_the_budget_are_listed_by_name_and_similar_ones_dropped() -> None:
    occurring = [_entry(i, f"Name{i}") for i in range(1, 4)]
    similar = _entry(9, "Namesake")
    relevant = [RelevantEntry(e, "occurs", i) for i, e in enumerate(occurring)]
    relevant.append(RelevantEntry(similar, "similar", 1 << 30))
    lines = known_lines(relevant, set(), budget=16)  # room for the first line only
    assert lines[0] == entry_line(occurring[0])
    assert lines[1:] == [entry_line(e, short=True) for e in occurring[1:]]
    assert all(line.endswith(": …") for line in lines[1:])


def test_a_line_an_earlier_scene_of_the_block_lists_spends_none_of_the_budget() -> None:
    """A drafted scene's message lists whole, outside its budget, the lines the block's earlier
    scene messages list (a serial run's conversation would hold them, and the serial message
    would not repeat them): the budget stays the serial message's for the rest."""
    occurring = [_entry(i, f"Name{i}") for i in range(1, 4)]
    relevant = [RelevantEntry(e, "occurs", i) for i, e in enumerate(occurring)]
    earlier = frozenset({entry_line(occurring[0])})
    lines = known_lines(relevant, set(), budget=16, before=earlier)  # room for one line
    assert lines[:2] == [entry_line(occurring[0]), entry_line(occurring[1])]
    assert lines[2] == entry_line(occurring[2], short=True)
    serial = known_lines(
        relevant[1:],
        lines_shown([{"role": "user", "content": _scene_text(occurring[:1])}]),
        budget=16,
    )
    assert lines[1:] == serial  # what the serial message lists beside the earlier line


def test_a_changed_entry_over_the_budget_is_listed_whole_not_sent_back_to_its_old_line() -> None:
    """Over the budget an occurring entry is named with "…", which a model reads as the line
    shown above: when an older line of it is in the conversation, that line is stale, so the
    entry is listed whole (the offline backend and the forgetful model merge the same way)."""
    first, second = _entry(1, "Vaskari"), _entry(2, "Quillhaven")
    history = [{"role": "user", "content": _scene_text([second])}]
    changed = _entry(2, "Quillhaven", "A harbour town. Its bell was stolen.")
    relevant = [RelevantEntry(first, "occurs", 0), RelevantEntry(changed, "occurs", 5)]
    lines = known_lines(relevant, lines_shown(history), budget=16)  # room for one line
    assert lines == [entry_line(first), entry_line(changed)]
    scene = parse_scene_message(
        prompts.scene_message(
            scene_id="1#2",
            thread_id=1,
            title="T",
            scene_number=2,
            scene_count=2,
            first_post_id=2,
            last_post_id=2,
            known_entries=lines,
            story="[post 2]\nQuillhaven rang.",
        )
    )
    assert scene is not None
    seen = with_earlier_known(scene, history)
    assert {e.entry_id: e.definition for e in seen.known}[2] == changed.definition


def test_an_entry_shown_above_as_it_was_is_listed_now_for_a_scene_that_names_a_word_of_it() -> None:
    """The scene says "Piskwick"; the conversation shows "East Piskwick" as it was before a fact
    was added: its line as it is now is listed (nothing for an entry unchanged since shown, or
    one the scene names no word of)."""
    old = _entry(3, "East Piskwick", "Hides a bronze tower.")
    now = _entry(3, "East Piskwick", "Hides a bronze tower. Fears a crooked well.")
    other = _entry(4, "Old Wyxmarch", "Keeps a hollow bridge.")
    history = [{"role": "user", "content": _scene_text([old, other])}]
    entries = {3: now, 4: other}

    def get_entries(ids: Sequence[int]) -> list[Entry]:
        return [entries[i] for i in ids]

    text = "[post 9]\nPiskwick fears a crooked well. Wyxmarch was quiet."
    stale = stale_in_view(text, lines_shown(history), set(), get_entries)
    assert [(item.entry.id, item.entry.definition) for item in stale] == [(3, now.definition)]
    assert stale_in_view(text, lines_shown(history), {3}, get_entries) == []
    assert stale_in_view("[post 9]\nRain fell.", lines_shown(history), set(), get_entries) == []


def test_the_known_entries_block_keeps_within_twice_its_budget_and_counts_the_rest() -> None:
    occurring = [_entry(i, f"Name{i}") for i in range(1, 200)]
    relevant = [RelevantEntry(e, "occurs", i) for i, e in enumerate(occurring)]
    budget = 40
    lines = known_lines(relevant, set(), budget=budget)
    assert sum(len(line) // 4 + 1 for line in lines[:-1]) <= budget * 2
    left = len(occurring) - (len(lines) - 1)
    assert lines[-1] == f"- … {left} more known entries occur here: search first"


def test_lines_in_non_scene_messages_do_not_count_as_shown() -> None:
    vaskari = _entry(1, "Vaskari")
    history = [{"role": "user", "content": "# Task: curate\n" + entry_line(vaskari)}]
    assert lines_shown(history) == set()


def test_a_huge_post_is_cut_with_a_marker_and_short_posts_stay_whole() -> None:
    posts = (
        Post(1, 1, "QM", None, None, 1, "Short opening.", frozenset({"qm_post"})),
        Post(2, 1, "QM", None, None, 2, "x" * 1_000_000, frozenset({"qm_post"})),
    )
    scene = Scene("1#1", 1, 0, posts)
    text = fit_story(scene, 10_000)
    assert len(text) < 11_000
    assert "Short opening." in text
    assert "more characters of post 2 not shown" in text


def test_the_offline_backend_reads_known_entries_from_earlier_scene_messages() -> None:
    vaskari, quill = _entry(1, "Vaskari"), _entry(2, "Quillhaven")
    earlier = [{"role": "user", "content": _scene_text([vaskari])}]
    scene = parse_scene_message(_scene_text([quill]))
    assert scene is not None
    merged = with_earlier_known(scene, earlier)
    assert sorted(entry.term for entry in merged.known) == ["Quillhaven", "Vaskari"]
