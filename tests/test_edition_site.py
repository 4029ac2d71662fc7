"""The reader's site shows the edition for the reader's position, in a real browser (Chromium
driven by Playwright, served by `terrarium serve`): an entry whose edition a later thread
rewrote shows, at an earlier position, that position's text and nothing of the later one; the
working definition is one click away."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.browser import require_chromium, terrarium_serve

pytest_plugins = ["tests.support.browser"]
QUOTE = re.compile(r"“([^”]{20,})”")


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    require_chromium()  # skips (outside CI) before the story is built when there is no browser
    root = tmp_path_factory.mktemp("edition_site")
    corpus = generate_corpus(root / "quest.db", threads=4, posts_per_thread=30, seed=7)
    db = root / "store" / "terrarium.db"
    with Engine.open(load_settings(offline=True, corpus=corpus, db=str(db))) as engine:
        for thread in engine.threads:
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)
        engine.write_edition(engine.threads[-1].id)
        keys = [thread.key for thread in engine.threads]
    return corpus, db, keys


@pytest.fixture(scope="module")
def site(story: tuple[Path, Path, list[str]]) -> Iterator[str]:
    corpus, db, _ = story
    with terrarium_serve(db, "--corpus", str(corpus)) as base:
        yield base


def test_an_entry_at_a_reading_position_shows_that_positions_edition_only(
    site: str, story: tuple[Path, Path, list[str]], page: Any
) -> None:
    _, db, keys = story
    with GlossaryStore(db, read_only=True) as store:
        early, late = store.editions.as_of(0), store.editions.as_of(len(keys) - 1)
    rewritten = [
        (entry_id, text, late[entry_id])
        for entry_id, text in early.items()
        if entry_id in late
        and set(QUOTE.findall(late[entry_id].text)) - set(QUOTE.findall(text.text))
    ]
    assert rewritten, "a later thread rewrote some entry with new quotes"
    entry_id, then, later = rewritten[0]
    new_quotes = set(QUOTE.findall(later.text)) - set(QUOTE.findall(then.text))

    page.goto(f"{site}/?upto={keys[0]}#/entry/{entry_id}")
    page.wait_for_selector("#entry-title")
    shown = page.inner_text("#page")
    assert QUOTE.findall(then.text) and all(q in shown for q in QUOTE.findall(then.text))
    assert not [q for q in new_quotes if q in shown], "nothing of the later edition"
    assert "**" not in shown and ">>" + str(then.posts[0]) not in shown.split("\n")[0]
    working = page.locator("details.working")
    assert working.count() == 1 and not working.evaluate("node => node.open")
    working.locator("summary").click()  # the working definition, one click away
    assert working.evaluate("node => node.open")

    page.goto(f"{site}/?upto={keys[-1]}#/entry/{entry_id}")
    page.wait_for_selector("#entry-title")
    page.wait_for_function(
        "quote => document.querySelector('#page').innerText.includes(quote)",
        arg=sorted(new_quotes)[0],
    )


def test_the_index_glosses_an_entry_with_its_edition_lead(
    site: str, story: tuple[Path, Path, list[str]], page: Any
) -> None:
    _, db, keys = story
    with GlossaryStore(db, read_only=True) as store:
        edition = store.editions.as_of(len(keys) - 1)
        views = {
            v.id: v
            for v in store.history.glossary_as_of_thread(
                store.progress.thread_states()[-1].thread_id
            )
        }
    entry_id, text = next(
        (i, t) for i, t in edition.items() if i in views and views[i].status == "confirmed"
    )
    lead = text.text.split("\n", 1)[0].split(":", 1)[1].strip().rstrip(".")
    page.goto(f"{site}/?upto={keys[-1]}")
    page.wait_for_selector(f"a[href='#/entry/{entry_id}']")
    line = page.locator(f"li:has(a[href='#/entry/{entry_id}'])").first.inner_text()
    assert lead in line and "**" not in line and ">>" not in line
