"""`terrarium serve`: the exports over http on loopback, started and stopped as a real process."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cli import TERRARIUM, interrupt, store_copy


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    store_dir = tmp_path / "store"
    thread = store_dir / "exports" / "t00000-123"
    (thread / "wiki" / "html").mkdir(parents=True)
    (thread / "glossary.json").write_text('{"entries": []}')
    (thread / ".export-manifest.json").write_text("{}")  # the export's own, never served
    (thread / "wiki" / "html" / "index.html").write_text("<h1>Glossary</h1>")
    # A file beside the exports that must never be served; the store itself is not written yet
    # (as under `terrarium dev` before the first run).
    (store_dir / "notes.db").write_bytes(b"SQLite format 3\x00 secret")
    return store_dir


@pytest.fixture
def served(exports: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            TERRARIUM,
            "serve",
            "--db",
            str(exports / "terrarium.db"),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "terrarium serve did not come up"
                time.sleep(0.1)
        yield base
    finally:
        assert interrupt(process) == 0


def test_serve_lists_the_exported_threads_and_serves_their_files(served: str) -> None:
    index = httpx.get(served + "/")
    assert index.status_code == 200
    assert 'href="/exports/t00000-123/wiki/html/index.html"' in index.text
    glossary = httpx.get(served + "/exports/t00000-123/glossary.json")
    assert glossary.status_code == 200 and glossary.json() == {"entries": []}
    wiki = httpx.get(served + "/exports/t00000-123/wiki/html/index.html")
    assert wiki.status_code == 200 and "<h1>Glossary</h1>" in wiki.text


def test_serve_never_serves_the_store_or_anything_outside_the_exports(served: str) -> None:
    for path in (
        "/notes.db",
        "/exports/../notes.db",
        "/exports/%2e%2e/notes.db",
        "/exports/t00000-123/../../notes.db",
    ):
        response = httpx.get(served + path)
        assert response.status_code == 404, path
        assert b"secret" not in response.content


def test_serve_refuses_a_port_it_cannot_bind_with_one_line(exports: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                TERRARIUM,
                "serve",
                "--db",
                str(exports / "terrarium.db"),
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "cannot serve" in done.stderr
    # the refusal is the only line: not 'no annotator store at ... yet' before it on stdout
    assert done.stdout == ""


def test_serve_on_an_address_this_machine_lacks_says_to_give_another_host(exports: Path) -> None:
    """`serve --host 10.1.2.3` said "stop it, or give --port another port", which fits only a
    port in use; an address no interface has, or a name that is none, asks for another --host."""
    from tests.support.cli import terrarium_main

    db = str(exports / "terrarium.db")
    for host, said in (
        ("192.0.2.1", "no interface of this machine has that address"),  # TEST-NET-1
        ("nowhere.invalid", "that name is no address of this machine"),
    ):
        done = terrarium_main("serve", "--db", db, "--host", host, "--port", str(_free_port()))
        assert done.returncode == 2, done.stderr
        line = done.stderr.strip()
        assert said in line and "give --host 127.0.0.1" in line and "\n" not in line, line
        assert "--port" not in line, line


def test_dev_refuses_a_ui_port_another_program_listens_on_before_starting_anything(
    tmp_path: Path,
) -> None:
    """`dagster dev` told of a busy UI port went on running its daemon with no UI, and
    `terrarium dev` with it: a newcomer's browser reached the other program."""
    with socket.socket() as taken, socket.socket() as free:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        free.bind(("127.0.0.1", 0))
        port, site_port = taken.getsockname()[1], free.getsockname()[1]
        free.close()
        done = subprocess.run(
            [TERRARIUM, "dev", "--offline", "--db", str(tmp_path / "t.db"), "--port", str(port),
             "--site-url", f"http://127.0.0.1:{site_port}"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert f"cannot serve the Dagster UI on 127.0.0.1:{port}" in done.stderr
    assert "give this one --port PORT" in done.stderr
    assert done.stdout == ""  # neither 'Dagster UI: http' nor 'no annotator store ... yet'


def _serve_once(db: Path, **popen: Any) -> tuple[int, str, str]:
    """`terrarium serve` of `db` until it answers, then Ctrl-C: its exit code and output."""
    port = _free_port()
    process = subprocess.Popen(
        [TERRARIUM, "serve", "--db", str(db), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        code = interrupt(process)
    out, err = process.communicate()
    return code, out, err


def test_two_stores_in_one_folder_never_share_its_exports(tmp_path: Path) -> None:
    """Two books' stores in one folder wrote their thread folders into one `exports/`, and
    `serve` of one listed the other's exports as its own. The first store to write there owns
    the folder; another is refused in one line, nothing written; a store that is gone gives
    it up."""
    first, second = tmp_path / "jekyll.db", tmp_path / "pride.db"
    marker = tmp_path / "exports" / ".terrarium-store"
    _serve_once(first)
    assert marker.read_text().strip() == str(first)
    first.write_bytes(b"SQLite format 3\x00")  # the first store exists now
    done = subprocess.run(
        [TERRARIUM, "serve", "--db", str(second), "--port", str(_free_port())],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert f"holds the exports of another store, {first}" in done.stderr
    assert marker.read_text().strip() == str(first)
    first.unlink()
    _serve_once(second)
    assert marker.read_text().strip() == str(second)


def test_serve_refuses_an_exports_folder_that_is_a_file_in_one_line(tmp_path: Path) -> None:
    """A file named `exports` beside the store: `serve` went on serving an empty site with a
    warning ("cannot write …: File exists"); it is refused in one line, the file untouched."""
    store = tmp_path / "glossary.db"
    (tmp_path / "exports").write_text("my notes")
    done = subprocess.run(
        [TERRARIUM, "serve", "--db", str(store), "--port", str(_free_port())],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert f"the exports folder {tmp_path / 'exports'} is a file" in done.stderr
    assert (tmp_path / "exports").read_text() == "my notes"


def test_hidden_files_of_the_exports_are_never_served(served: str) -> None:
    for path in ("/exports/.terrarium-store", "/exports/t00000-123/.export-manifest.json"):
        assert httpx.get(served + path).status_code == 404, path
    # nor listed: a thread's folder page links only what it serves
    listing = httpx.get(served + "/exports/t00000-123/")
    assert listing.status_code == 200
    assert 'href="glossary.json"' in listing.text and 'href="wiki/"' in listing.text
    assert ".export-manifest" not in listing.text


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_serve_stopped_by_sigterm_stops_as_ctrl_c_does(
    stop: signal.Signals, offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`terrarium serve` stopped as a container or systemd stops it (SIGTERM) exited 143 with
    nothing said. SIGTERM and Ctrl-C alike: one line saying it stopped, exit 0, and the store's
    folder holds the store and the exports it served, no WAL file of its reads."""
    store = store_copy(offline_bundled_store, tmp_path)
    port = _free_port()
    process = subprocess.Popen(
        [TERRARIUM, "serve", "--db", str(store), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/glossary-data.js", timeout=1).is_success:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        process.send_signal(stop)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, (process.returncode, err)
    assert err == ""
    assert out.splitlines()[-1] == f"stopped serving ({stop.name})"
    assert sorted(path.name for path in store.parent.iterdir()) == ["exports", store.name]
    assert not [path for path in (store.parent / "exports").iterdir() if ".new-" in path.name]


def test_a_reader_who_leaves_before_the_page_is_sent_is_no_traceback(
    exports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A browser that navigated on (a client's timeout) while a page was being sent printed a
    BrokenPipeError traceback on serve's stderr for every such request."""
    import struct
    import threading

    from terrarium_dagster.exports.serve import make_server

    big = exports / "exports" / "t00000-123" / "glossary.json"
    big.write_text('{"entries": []}' + " " * 8_000_000)
    server = make_server(exports / "exports", "127.0.0.1", 0)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        for _ in range(3):
            client = socket.create_connection(server.server_address[:2])
            client.sendall(b"GET /exports/t00000-123/glossary.json HTTP/1.1\r\nHost: x\r\n\r\n")
            client.recv(1024)  # the page has begun
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # gone, with a reset, while the rest is being sent
        assert httpx.get(f"http://127.0.0.1:{server.server_address[1]}/exports/").is_success
    finally:
        server.shutdown()
        server.server_close()
        serving.join(timeout=5)
    assert capsys.readouterr().err == ""


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_serve_started_in_the_background_by_a_script_stops_on_sigint(exports: Path) -> None:
    """`terrarium serve &` in a script (a shell without job control) inherits SIGINT ignored:
    `kill -INT` left it serving, while `run` and `dev` stopped. It stops as on Ctrl-C."""
    code, out, err = _serve_once(exports / "terrarium.db", preexec_fn=_sigint_ignored)
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "stopped serving (SIGINT)", out


def test_dev_refuses_one_port_for_the_ui_and_the_site_before_starting_anything(
    tmp_path: Path,
) -> None:
    """`terrarium dev --site-url http://127.0.0.1:3000` (the UI's port too): the reader's site
    took the port, `dagster dev`'s UI could not bind it and went on without one, and the line
    'Dagster UI: http://127.0.0.1:3000/' led to the site. Refused in one line, nothing made."""
    from tests.support.cli import terrarium_main

    port = _free_port()
    for _ in range(2):
        done = terrarium_main(
            "dev", "--offline", "--db", str(tmp_path / "t.db"), "--port", str(port),
            "--site-url", f"http://127.0.0.1:{port}", cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and done.stderr.strip().count("\n") == 0, done.stderr
        assert f"cannot share port {port}" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []
