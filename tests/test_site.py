"""The reader's site in a real browser (headless Chromium), served by `terrarium serve`.

Each page is loaded the way a reader gets there — a reading position (`?upto=`), a search
(`?q=`), an entry (`#/entry/N`) — and Chromium renders it with its script; the test reads the
rendered page (`--dump-dom`), checks the console for errors, takes screenshots, and checks the
spoiler shield: at a reading position no text from a later thread's posts is on the page.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import TERRARIUM, interrupt, store_copy

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="needs Debian's chromium (.ci/run installs it)",
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def store(offline_bundled_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The bundled sample (no --corpus): the store records it and its post URL template (the
    # session's run, copied).
    return store_copy(offline_bundled_store, tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def site(store: Path, sample_db: Path) -> Iterator[str]:
    assert CHROMIUM is not None, "chromium is not installed (.ci/run installs it)"
    port = _free_port()
    command = [TERRARIUM, "serve", "--port", str(port)]
    process = subprocess.Popen(  # no --corpus: serve reads the one the store was built with
        [*command, "--db", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/glossary-data.js", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "terrarium serve did not come up"
            time.sleep(0.1)
        yield base
    finally:
        interrupt(process)


def _render(url: str, tmp_path: Path, name: str) -> str:
    """The page as the browser shows it, after its script ran; asserts no console error."""
    assert CHROMIUM is not None
    shot = tmp_path / f"{name}.png"
    common = [CHROMIUM, *FLAGS, "--window-size=900,1200"]
    done = subprocess.run(
        [*common, f"--user-data-dir={tmp_path / (name + '-dom')}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    subprocess.run(
        [*common, f"--user-data-dir={tmp_path / (name + '-shot')}", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=90,
        check=True,
    )
    assert shot.stat().st_size > 10_000, "the screenshot is blank"
    return done.stdout


def _text(dom: str) -> str:
    """What the page shows: its text without scripts and styles."""
    body = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", dom)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def test_the_reading_position_hides_everything_from_later_threads(
    site: str, store: Path, sample_db: Path, tmp_path: Path
) -> None:
    with Corpus(sample_db) as corpus:
        threads = corpus.threads()
    first, later = threads[0], threads[1:]
    with GlossaryStore(store) as glossary:
        then = glossary.history.glossary_as_of_thread(first.id)
        terms_then = {view.term for view in then if view.status not in ("rejected", "merged")}
        quotes_later = {
            item.quote
            for entry in glossary.glossary.entries()
            for item in glossary.provenance.for_entry(entry.id, include_superseded=True)
            if item.thread_id in {t.id for t in later} and len(item.quote) > 25
        }
        later_ids = {e.id for e in glossary.glossary.entries()} - {view.id for view in then}
    dom = _render(f"{site}/?upto={first.key}", tmp_path, "position")
    shown = _text(dom)
    for thread in later:  # later titles are not shown either
        assert thread.title not in shown, thread.title
    assert "As of the end of thread 1" in shown
    for term in terms_then:
        assert term in shown, term
    assert quotes_later, "the sample should have sources in later threads"
    for quote in quotes_later:
        assert quote not in shown, quote
    listed = {int(n) for n in re.findall(r'href="#/entry/(\d+)"', dom)}
    assert listed and not listed & later_ids, listed & later_ids


def test_the_reading_position_is_also_taken_as_the_command_line_names_a_thread(
    site: str, tmp_path: Path
) -> None:
    """`?upto=ch3` (as `--threads` and `status` write it) was ignored: the first thread shown."""
    shown = _text(_render(f"{site}/?upto=ch2", tmp_path, "upto-ch"))
    assert "As of the end of thread 2" in shown


def test_search_as_you_type_filters_the_index(site: str, tmp_path: Path, sample_db: Path) -> None:
    with Corpus(sample_db) as corpus:
        last = corpus.threads()[-1]
    dom = _render(f"{site}/?upto={last.key}&q=lamp", tmp_path, "search")
    match = re.search(r'id="result-count">(\d+) matching', dom)
    assert match and int(match.group(1)) > 0


def test_an_entry_page_links_its_sources_and_its_references(
    site: str, store: Path, sample_db: Path, tmp_path: Path
) -> None:
    with Corpus(sample_db) as corpus:
        last = corpus.threads()[-1]
    with GlossaryStore(store) as glossary:
        entry = next(
            e
            for e in glossary.glossary.entries()
            if e.status == "confirmed" and glossary.provenance.for_entry(e.id)
        )
    dom = _render(f"{site}/?upto={last.key}#/entry/{entry.id}", tmp_path, "entry")
    assert f'id="entry-title">{entry.term}<' in dom
    sources = re.findall(r'<a href="([^"]+)"[^>]* class="source"[^>]*>([^<]+)</a>', dom)
    assert sources and all(href.startswith("/post/") for href, _ in sources)
    assert all(", post " in label for _, label in sources), "sources read as thread and post"
    follow = httpx.get(f"{site}/exports/", timeout=5)
    assert follow.status_code == 200
