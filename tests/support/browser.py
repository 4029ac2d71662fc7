"""A real browser for tests: Debian's Chromium, headless, driven by Playwright (a pytest plugin).

Use it with `pytest_plugins = ["tests.support.browser"]`; then a test asks for `page` (a fresh
tab in a fresh context, closed after the test, whose console errors and uncaught page errors
fail the test unless it empties `page.errors_seen`) or `browser` (the session's Chromium).
`terrarium_serve(db)` runs `terrarium serve` for a store on a free port.

Playwright drives the system's Chromium (`/usr/bin/chromium`, or `chromium` on PATH, or
`$TERRARIUM_CHROMIUM`) through `executable_path`; it never downloads a browser (no
`playwright install`). Outside CI a machine without Chromium skips these tests with the reason;
in CI (`CI=true`, where `.ci/run` installs Debian's chromium) a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The system Chromium: `$TERRARIUM_CHROMIUM`, `/usr/bin/chromium`, or one on PATH."""
    for candidate in (
        os.environ.get("TERRARIUM_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require_chromium() -> str:
    """The Chromium path; skips (outside CI) or fails (in CI) when there is none."""
    path = chromium_path()
    if path is None:
        message = "needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"
        if in_ci():
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if in_ci():
            pytest.fail("CI=true but the playwright package is missing (pip install -e '.[dev]')")
        pytest.skip("needs the playwright package (pip install -e '.[dev]')")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A test module's headless Chromium (a `playwright.sync_api.Browser`). Per module, not per
    session: Playwright's sync API keeps an event loop running in the main thread while it is
    open, and a later test's `asyncio.run` (Dagster's automation evaluation) cannot start
    beside it."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    """A fresh tab (its own context: no cookies or storage shared between tests).

    Console errors and uncaught page errors are collected in `page.errors_seen` (a list) and
    fail the test at teardown unless the test empties it.
    """
    context = browser.new_context(viewport={"width": 1000, "height": 1200})  # type: ignore[attr-defined]
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.set_default_timeout(15_000)
    tab.errors_seen = errors  # type: ignore[attr-defined]
    try:
        yield tab
    finally:
        context.close()
    shown = [error[:300] for error in errors[:5]]
    assert not errors, f"the browser reported {len(errors)} error(s), first: {shown}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def terrarium_serve(db: Path, *extra: str, timeout: float = 60) -> Iterator[str]:
    """`terrarium serve --db DB` on a free loopback port (its `--site-url` agrees), as a process;
    yields the base URL once the site answers, stops it (SIGINT, then SIGKILL) on exit."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).with_name("terrarium")), "serve", "--db", str(db)]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--site-url", base, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(base + "/exports/", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                output = process.stdout.read() if process.stdout else ""
                raise AssertionError(f"terrarium serve exited: {output}")
            assert time.monotonic() < deadline, "terrarium serve did not come up"
            time.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
