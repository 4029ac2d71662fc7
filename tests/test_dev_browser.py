"""The Quick start's one command, `terrarium dev`, in a real browser.

`terrarium dev --offline` brings up the Dagster UI and the site server together. One thread is
materialized through GraphQL (as the Launchpad does); then headless Chromium, driven by
Playwright, opens the asset's events in the Dagster UI and clicks, never typing an address: the
materialization's metadata link opens the entry's page on the reader's site, its source opens
the post (the quote highlighted), and back returns to the entry. Finally one SIGINT (what Ctrl-C
sends) stops everything: `terrarium dev` exits 0 and no process of Dagster's group is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from terrarium_dagster.corpus.reader import Corpus
from tests.support.browser import free_port
from tests.support.dagster_dev import REPO, DagsterDev, dev_environment, write_instance

ASSETS = ["scene_batches", "thread_annotations", "curated_glossary", "glossary_export"]


def _group_of_children(pid: int) -> set[int]:
    """Process groups of `pid`'s children (`dagster dev` runs in a group of its own)."""
    groups: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:  # ppid
                groups.add(int(fields[2]))  # pgrp
    return groups


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


class TerrariumDev(DagsterDev):
    """`terrarium dev` instead of `dagster dev`: the same GraphQL client, another process."""

    def start(self) -> None:
        write_instance(REPO / "dagster.yaml", self.home, quick=self.quick)
        terrarium = str(Path(sys.executable).with_name("terrarium"))
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [terrarium, "dev", "--offline", "--port", str(self.port)],
                cwd=self.workdir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:  # only a leftover from a failed test: the test stops it itself
        self.client.close()
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            groups = _group_of_children(process.pid)
            process.kill()
            process.wait()
            for group in groups:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)


@pytest.fixture
def terrarium_dev(tmp_path: Path, _isolated_home: Path) -> Iterator[TerrariumDev]:
    env = dev_environment(_isolated_home, tmp_path / "store" / "terrarium.db")
    env.pop("TERRARIUM_OFFLINE")  # `--offline` says it
    site_port = free_port()
    env["TERRARIUM_SITE_URL"] = f"http://127.0.0.1:{site_port}"
    dev = TerrariumDev(tmp_path, env)
    dev.env["DAGSTER_HOME"] = str(dev.home)
    try:
        dev.start()
        yield dev
    finally:
        dev.stop()


def _url_entries(event: dict[str, Any], prefix: str) -> dict[str, str]:
    return {
        label: entry["url"]
        for label, entry in event["metadata"].items()
        if label.startswith(prefix) and entry["__typename"] == "UrlMetadataEntry"
    }


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_terrarium_dev_links_from_a_materialization_to_the_entry_and_its_post_then_stops(
    terrarium_dev: TerrariumDev, sample_db: Path, page: Any
) -> None:
    dev = terrarium_dev
    site = dev.env["TERRARIUM_SITE_URL"]
    with Corpus(sample_db) as corpus:
        first = corpus.threads()[0].key
    dev.wait_until_loaded()
    assert httpx.get(site + "/exports/", timeout=5).status_code == 200, "the site server is up"
    dev.wait_for(
        lambda: first in dev.partition_keys("thread_annotations"),
        timeout=60,
        what="the discovery sensor",
    )
    backfill = dev.launch_backfill(ASSETS, [first])
    dev.wait_for(
        lambda: dev.backfill(backfill)["status"] == "COMPLETED_SUCCESS",
        timeout=180,
        what="the first thread's materialization",
    )
    annotations = [e for e in dev.materializations("thread_annotations") if e["partition"] == first]
    assert len(annotations) == 1, dev.explain(annotations)
    (event,) = annotations
    entries = _url_entries(event, "entry · ")
    assert entries, event["metadata"].keys()
    label, entry_url = next(iter(entries.items()))
    assert entry_url.startswith(site + "/?upto=") and "#/entry/" in entry_url
    (curation,) = dev.materializations("curated_glossary")
    assert _url_entries(curation, "find_an_entry") == {"find_an_entry": site + "/"}

    # The browser: the asset's events in the Dagster UI, then clicks only.
    dagster_ui = dev.url.removesuffix("/graphql")
    page.goto(f"{dagster_ui}/assets/thread_annotations?view=events&partition={first}")
    link = page.locator(f'a[href="{entry_url}"]').first
    link.wait_for(timeout=60_000)
    page.keyboard.press("Escape")  # a dialog Dagster may open on a first visit
    page.locator(".bp5-overlay-backdrop").wait_for(state="detached", timeout=10_000)
    # The touched entries' table shows its first_source_url whole (a wide table is cut at the
    # panel's right edge, so the link comes before the columns that wrap).
    page.set_viewport_size({"width": 1400, "height": 1000})
    cell = page.locator("td", has_text=site + "/post/").first
    cell.scroll_into_view_if_needed()
    box, view = cell.bounding_box(), page.viewport_size
    assert box and view and box["x"] + box["width"] <= view["width"], (box, view)
    with page.context.expect_page() as opened:  # Dagster opens metadata links in a new tab
        link.click()
    tab = opened.value
    site_errors: list[str] = []
    tab.on("pageerror", lambda exc: site_errors.append(str(exc)))
    tab.on("console", lambda msg: site_errors.append(msg.text) if msg.type == "error" else None)
    tab.wait_for_selector("#entry-title")
    term = tab.inner_text("#entry-title")
    assert term and term in label
    source = tab.locator("a.source").first
    source.click()
    tab.wait_for_selector("article#post")
    assert tab.url.startswith(site + "/post/")
    assert tab.locator("mark#quote").count() == 1, "the source's quote is highlighted"
    tab.go_back()
    tab.wait_for_selector("#entry-title")
    assert tab.inner_text("#entry-title") == term
    assert not site_errors, site_errors
    tab.close()
    page.goto("about:blank")  # leave the Dagster UI before stopping it (it would poll and fail)
    page.errors_seen.clear()  # what Dagster's own UI logged; the site's tab reported into it too

    # One Ctrl-C stops everything.
    process = dev.process
    assert process is not None
    groups = _group_of_children(process.pid)
    assert groups, "dagster dev runs as a child of terrarium dev"
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0, dev.log_tail()
    deadline = time.monotonic() + 15
    while any(_alive(group) for group in groups) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(group) for group in groups), "a process of dagster dev was left"
    with pytest.raises(httpx.TransportError):
        httpx.get(site + "/exports/", timeout=2)
    with pytest.raises(httpx.TransportError):
        httpx.get(dagster_ui + "/server_info", timeout=2)
    # What it printed meanwhile: no warning meant for Dagster's developers, none repeated.
    log = dev.log_path.read_text(encoding="utf-8", errors="replace")
    assert "superseded" not in log and "Use 'dg dev'" not in log, log
    assert "does not match the name" not in log, "the code location is named as the project says"
