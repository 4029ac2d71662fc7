"""A thread whose title is only whitespace ("   ") has no title, as a NULL or empty one: the
corpus reader says so once (`corpus.units.thread_title`), and the site, the post pages,
`status` and the exports show the thread without one (it read "thread 2 (   )")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.identity import CorpusIdentity
from tests.support.browser import require_chromium, terrarium_serve
from tests.support.cli import run_args, terrarium
from tests.support.corpus_builder import PostSpec, ThreadSpec, build_corpus

pytest_plugins = ["tests.support.browser"]

TITLES = ("The Salt Road", "   ", "\t\n", "")


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("untitled")
    threads = [
        ThreadSpec(
            title,
            [PostSpec(f"The envoy met Vaskari at the gate of Orlundel, day {number}.")],
        )
        for number, title in enumerate(TITLES, start=1)
    ]
    corpus = build_corpus(root / "quest.db", threads)
    store = root / "store.db"
    assert main(run_args(store, corpus)) == 0
    return corpus, store


def test_status_and_the_exports_give_no_title_for_whitespace(
    story: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, store = story
    report = json.loads(terrarium("status", "--json", "--db", str(store)).stdout)
    assert [thread["title"] for thread in report["threads"]] == ["The Salt Road", "", "", ""]
    site = tmp_path / "site"
    assert main(["export", "--db", str(store), "--format", "site", "--out", str(site)]) == 0
    titles = [
        json.loads(path.read_text().split("(", 1)[1].rsplit(")", 1)[0])["title"]
        for path in sorted((site / "data").glob("thread-*.js"))
    ]
    assert titles == ["The Salt Road", "", "", ""]
    wiki = tmp_path / "wiki"
    second = str(corpus_ids(corpus)[1])
    assert main(["export", "--db", str(store), "--as-of-thread", second, "--format", "wiki",
                 "--out", str(wiki)]) == 0  # fmt: skip
    said = (wiki / "wiki" / "index.md").read_text()
    assert f"As of the end of thread t00001-{second}.\n" in said


def corpus_ids(corpus: Path) -> list[int]:
    from terrarium_dagster.corpus.reader import Corpus

    with Corpus(corpus) as opened:
        return [thread.id for thread in opened.threads()]


def test_a_store_that_recorded_a_whitespace_title_still_matches_its_corpus() -> None:
    recorded = CorpusIdentity(name="Quest", first_threads=[(1000, "A"), (1007, "   ")])
    given = CorpusIdentity(name="Quest", first_threads=[(1000, "A"), (1007, "")])
    assert recorded.matches(given) and given.matches(recorded)
    assert not recorded.matches(CorpusIdentity(name="Quest", first_threads=[(1000, "B")]))


@pytest.fixture(scope="module")
def served(story: tuple[Path, Path]) -> Iterator[str]:
    corpus, store = story
    with terrarium_serve(store, "--corpus", str(corpus)) as base:
        yield base


def test_a_post_page_of_an_untitled_thread_names_the_thread_alone(
    served: str, story: tuple[Path, Path]
) -> None:
    corpus, _store = story
    second = corpus_ids(corpus)[1]
    page = httpx.get(f"{served}/post/{second}", timeout=10)
    assert page.status_code == 200
    assert f"<title>Post {second} — thread t00001-{second}</title>" in page.text
    assert f"Thread t00001-{second}:" not in page.text


def test_the_site_names_an_untitled_thread_by_its_number_alone(served: str, page: Any) -> None:
    require_chromium()
    page.goto(f"{served}/?upto=2")
    notice = page.wait_for_selector(".notice >> text=As of the end of thread 2")
    assert notice.inner_text().startswith("As of the end of thread 2: ")  # no "(   )"
    page.select_option("#position", "3")
    notice = page.wait_for_selector(".notice >> text=As of the end of thread 4")
    assert notice.inner_text().startswith("As of the end of thread 4: ")  # no "()"
    labels = [option.inner_text() for option in page.query_selector_all("#position option")]
    assert labels == ["Thread 1: The Salt Road", "Thread 2", "Thread 3", "Thread 4"]
