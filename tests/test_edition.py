"""The reader's edition: every entry a thread changed, rewritten from its evidence up to that
thread and nothing later, many requests in flight, exact for any reading position.

A generated quest is annotated and curated offline; its edition is then written (the offline
backend composes each entry's text from the evidence its request shows). Checked: for every
thread t, the edition as of t cites only posts of threads up to t, names no entry the reader
meets later, and quotes no later source; a thread rewrites exactly the entries it changed; the
exports carry the edition as of their thread; the site's data files up to a position hold that
position's edition and none of a later one's; a rewrite citing a post it was not shown, or
naming a later term, is refused and asked again (a loopback server answering so); and a
`terrarium edition` SIGKILLed mid-way resumes to the uninterrupted edition.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from terrarium_dagster.backends.offline import OfflineBackend
from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.edition.rewrite_prompt import CITATION, later_terms
from terrarium_dagster.engine import Engine
from terrarium_dagster.exports import build_export
from terrarium_dagster.exports.references import is_page_entry
from terrarium_dagster.exports.site import site_parts
from terrarium_dagster.status import store_status
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import TERRARIUM, run_args, terrarium
from tests.support.kill_server import KillPoint, run_kill_server
from tests.support.serving import serving

THREADS = 5


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generated quest annotated and curated offline (no edition yet): corpus, store."""
    root = tmp_path_factory.mktemp("edition")
    corpus = generate_corpus(
        root / "quest.db", threads=THREADS, posts_per_thread=30, seed=5, vocabulary_scale=3
    )
    db = root / "store.db"
    with Engine.open(load_settings(offline=True, corpus=corpus, db=str(db))) as engine:
        for thread in engine.threads:
            engine.annotate_thread(thread.id)
            engine.curate_thread(thread.id)
    return corpus, db


def _copy(db: Path, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(db, to)
    return to


@pytest.fixture(scope="module")
def written(quest: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quest's store with its whole edition written in-process at concurrency 4."""
    corpus, db = quest
    store = _copy(db, tmp_path_factory.mktemp("written") / "store.db")
    settings = load_settings(offline=True, corpus=corpus, db=str(store), concurrency=4)
    with Engine.open(settings) as engine:
        reports = engine.write_edition(engine.threads[-1].id)
        assert [r.thread_id for r in reports] == [t.id for t in engine.threads]
        assert all(r.rewritten > 0 and r.kept == 0 for r in reports), reports
        assert max(r.peak_in_flight for r in reports) == 4
    return store


def _thread_texts(corpus: Corpus, upto: int) -> str:
    """Every post text of the threads at positions up to `upto`, normalized."""
    return " ".join(
        normalize_term(post.text)
        for thread in corpus.threads()[: upto + 1]
        for post in corpus.posts(thread.id)
    )


def test_an_edition_as_of_every_thread_holds_nothing_from_a_later_thread(
    quest: tuple[Path, Path], written: Path
) -> None:
    corpus_path, _ = quest
    with Corpus(corpus_path) as corpus, GlossaryStore(written, read_only=True) as store:
        threads = corpus.threads()
        position_of = {t.id: t.position for t in threads}
        newest = store.history.glossary_as_of(
            store.history.last_revision_id(), include_deleted=True
        )
        all_names = {name for v in newest for name in (v.term, *v.aliases)}
        for thread in threads:
            edition = store.editions.as_of(thread.position)
            live = [
                v
                for v in store.history.glossary_as_of_thread(thread.id)
                if is_page_entry(v) and v.provenance
            ]
            assert live and {v.id for v in live} <= set(edition), "every live entry has one"
            known = {
                normalize_term(name)
                for v in store.history.glossary_as_of_thread(thread.id, include_deleted=True)
                for name in (v.term, *v.aliases)
            }
            read = _thread_texts(corpus, thread.position)
            later_names = [
                n
                for n in all_names
                if normalize_term(n) not in known and f" {normalize_term(n)} " not in f" {read} "
            ]
            later_quotes = {
                item.quote
                for v in newest
                for item in v.provenance
                if position_of[item.thread_id] > thread.position and len(item.quote) > 30
            }
            for entry_id, text in edition.items():
                assert text.position <= thread.position
                for post_id in {int(n) for n in CITATION.findall(text.text)}:
                    post = corpus.post(post_id)
                    assert post is not None and position_of[post.thread_id] <= thread.position
                    assert post_id in text.posts, "cites only posts its request showed"
                assert not later_terms(text.text, later_names), (entry_id, text.text)
                assert not [q for q in later_quotes if q in text.text and q not in read]
            if thread.position == 0:
                assert later_names and later_quotes, "the quest has later names and quotes"


def test_a_thread_rewrites_exactly_the_entries_it_changed(written: Path) -> None:
    with GlossaryStore(written, read_only=True) as store:
        states = store.progress.thread_states()
        previous_end = 0
        store_of: dict[int, list[object]] = {}
        for state in states:
            assert state.end_revision_id is not None
            changed, _ = store.history.changes_between(previous_end, state.end_revision_id)
            expected = {v.id for v in changed if is_page_entry(v)}
            rewritten = store.editions.of_thread(state.thread_id)
            store_of[state.thread_id] = list(rewritten)
            assert {t.entry_id for t in rewritten} == expected
            assert all(t.outcome == "written" and t.request for t in rewritten)
            before = store.editions.as_of(state.position - 1) if state.position else {}
            after = store.editions.as_of(state.position)
            for entry_id, text in before.items():  # the others keep their text
                if entry_id not in expected:
                    assert after[entry_id] == text
            previous_end = state.end_revision_id
        calls = store.conn.execute(
            "SELECT COUNT(*) FROM agent_call WHERE purpose = 'edition'"
        ).fetchone()[0]
        assert calls == sum(t.attempts for t in store.editions.all_current())
    shown = {
        row["thread_id"]: row["edition_entries"] for row in store_status(str(written))["threads"]
    }
    assert shown == {s.thread_id: len(store_of[s.thread_id]) for s in states}


def test_exports_carry_the_edition_as_of_their_thread(
    quest: tuple[Path, Path], written: Path, tmp_path: Path
) -> None:
    corpus_path, _ = quest
    with Corpus(corpus_path) as corpus, GlossaryStore(written, read_only=True) as store:
        thread = corpus.threads()[1]
        build_export(store, corpus, tmp_path, as_of_thread=thread.id)
        expected = store.editions.as_of(thread.position)
    records = json.loads((tmp_path / "glossary.json").read_text())["entries"]
    with_text = [r for r in records if r["edition"]]
    assert with_text and all(r["edition"] == expected[r["id"]].text for r in with_text)
    yaml_text = (tmp_path / "glossary.yaml").read_text()
    assert "edition:" in yaml_text
    lorebooks = [
        json.loads(path.read_text())
        for path in tmp_path.glob("*.json")
        if path.name != "glossary.json" and not path.name.startswith(".")
    ]
    contents = [e["content"] for book in lorebooks for e in book["entries"].values()]
    assert contents and not [c for c in contents if ">>" in c or "**" in c]
    pages = [p.read_text() for p in (tmp_path / "wiki").glob("*.md")]
    assert [p for p in pages if "## Working definition" in p and "[Working definition]" in p]


def test_the_site_up_to_a_position_holds_that_positions_edition_and_no_later_one(
    quest: tuple[Path, Path], written: Path
) -> None:
    corpus_path, _ = quest
    with Corpus(corpus_path) as corpus, GlossaryStore(written, read_only=True) as store:
        parts = site_parts(store, corpus)
        for position in range(len(parts)):
            shown: dict[int, Any] = {}  # what the page builds from the files up to the position
            for part in parts[: position + 1]:
                for entry_id, version in part.versions.items():
                    shown[int(entry_id)] = version
            expected = store.editions.as_of(position)
            later = {
                t.text
                for p in range(position + 1, len(parts))
                for t in store.editions.of_thread(corpus.threads()[p].id)
            } - {t.text for t in expected.values()}
            received = json.dumps([p.document() for p in parts[: position + 1]])
            for entry_id, text in expected.items():
                if entry_id in shown and not shown[entry_id].get("absent"):
                    assert shown[entry_id]["edition"] == text.text
            assert not [t for t in later if json.dumps(t)[1:-1] in received]


class _Refusing(BaseHTTPRequestHandler):
    """The offline backend over HTTP, except that the first edition request of each entry is
    answered with a citation of a post it was not shown or a name of a later thread (`always`:
    every answer to an edition request, asked again or not)."""

    backend = OfflineBackend()
    first: ClassVar[set[str]] = set()
    always = False
    bad = ("**X** is a place. It burns in >>1.", "**X** is a place. It meets {name} later.")
    later_name = ""

    def log_message(self, format: str, *args: object) -> None:
        return

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        response = self.backend.handle_request(httpx.Request("GET", f"http://x{self.path}"))
        self._send(response.status_code, response.content)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = httpx.Request("POST", f"http://x{self.path}", content=body)
        response = self.backend.handle_request(request)
        payload = json.loads(body)
        task = next(
            (
                str(m.get("content"))
                for m in payload.get("messages", [])
                if str(m.get("content") or "").startswith("# Task: edition")
            ),
            "",
        )
        last = str(payload.get("messages", [{}])[-1].get("content") or "")
        entry = re.search(r"^entry (E\d+):", task, re.MULTILINE)
        if entry and (self.always or (last == task and entry.group(1) not in self.first)):
            type(self).first.add(entry.group(1))
            answer = json.loads(response.content)
            kind = 0 if self.always else int(entry.group(1)[1:]) % 2
            wrong = self.bad[kind].format(name=self.later_name)
            answer["choices"][0]["message"]["content"] = wrong
            self._send(200, json.dumps(answer).encode())
            return
        self._send(response.status_code, response.content)


def test_a_rewrite_citing_an_unshown_post_or_a_later_name_is_refused_and_asked_again(
    quest: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus_path, db = quest
    store_path = _copy(db, tmp_path / "store.db")
    with Corpus(corpus_path) as corpus, GlossaryStore(store_path, read_only=True) as store:
        first = store.progress.thread_states()[0]
        known = {
            normalize_term(name)
            for v in store.history.glossary_as_of_thread(first.thread_id, include_deleted=True)
            for name in (v.term, *v.aliases)
        }
        read = f" {_thread_texts(corpus, 0)} "
        later = sorted(
            v.term
            for v in store.glossary.entry_views()
            if normalize_term(v.term) not in known and f" {normalize_term(v.term)} " not in read
        )
    _Refusing.first = set()
    _Refusing.later_name = later[0]
    with serving(_Refusing) as url:
        settings = load_settings(corpus=corpus_path, db=str(store_path), agent_url=url)
        with Engine.open(settings) as engine:
            (report,) = engine.write_edition(first.thread_id)
    assert report.kept == 0 and report.rewritten > 0
    assert len(report.refusals) == report.rewritten  # each entry refused once, then taken
    reasons = {"was not shown" in r for r in report.refusals}
    assert reasons == {True, False}  # both kinds refused
    assert all("was not shown" in r or "later thread" in r for r in report.refusals)
    with GlossaryStore(store_path, read_only=True) as store:
        texts = store.editions.of_thread(first.thread_id)
        assert all(t.attempts == 2 and ">>1 " not in t.text for t in texts)
        assert not [t for t in texts if later[0] in t.text]


def _edition_command(url: str, corpus: Path, db: Path, as_of: str) -> list[str]:
    return [
        TERRARIUM,
        "edition",
        "--agent-url",
        url,
        "--corpus",
        str(corpus),
        "--db",
        str(db),
        "--concurrency",
        "4",
        "--as-of-thread",
        as_of,
    ]


def _run_until_done(server: Any, command: list[str], attempts: int) -> list[int]:
    codes: list[int] = []
    for _ in range(attempts):
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        server.victim = process
        try:
            _, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        codes.append(process.returncode)
        assert process.returncode in (0, -9), err
        if process.returncode == 0:
            return codes
    raise AssertionError(f"no edition finished in {attempts} attempts: {codes}")


@pytest.fixture
def kill_server() -> Iterator[Any]:
    with run_kill_server() as server:
        yield server


def test_a_sigkill_during_an_edition_resumes_to_the_same_edition(
    quest: tuple[Path, Path], written: Path, tmp_path: Path, kill_server: Any
) -> None:
    corpus_path, db = quest
    with Corpus(corpus_path) as corpus:
        last = corpus.threads()[-1].key
    with GlossaryStore(written, read_only=True) as store:
        per_thread = [
            len(store.editions.of_thread(s.thread_id)) for s in store.progress.thread_states()
        ]
    killed = _copy(db, tmp_path / "killed.db")
    # killed twice: inside the second thread's requests, then inside the fourth's
    kill_server.kill_points = [
        KillPoint(kind="edition", occurrence=per_thread[0] + per_thread[1] // 2),
        KillPoint(kind="edition", occurrence=sum(per_thread[:3]) + 2),
    ]
    codes = _run_until_done(
        kill_server, _edition_command(kill_server.url, corpus_path, killed, last), 4
    )
    assert codes == [-9, -9, 0], codes
    with (
        GlossaryStore(killed, read_only=True) as resumed,
        GlossaryStore(written, read_only=True) as whole,
    ):
        done = [t.key() for t in resumed.editions.all_current()]
        assert done == [t.key() for t in whole.editions.all_current()]
        threads = resumed.conn.execute("SELECT COUNT(*) FROM edition_thread").fetchone()[0]
        assert threads == THREADS  # each thread's edition committed once


def test_an_edition_before_curation_is_one_line_and_creates_nothing(
    quest: tuple[Path, Path], tmp_path: Path
) -> None:
    """Before its thread is curated an edition is refused in one line; where there is no store
    at all (a mistyped --db) it says so (it made a store there, said the thread was pending,
    and removed the store)."""
    corpus_path, _ = quest
    with Corpus(corpus_path) as corpus:
        first = corpus.threads()[0].key
    db = tmp_path / "new.db"
    edition = ["edition", "--offline", "--corpus", str(corpus_path), "--db", str(db)]
    done = terrarium(*edition, "--as-of-thread", first)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("terrarium: error")]
    assert errors == [f"terrarium: error: no annotator store at {db} (run `terrarium run` first)"]
    assert not list(tmp_path.glob("new.db*")), "no store is left behind"
    begun = terrarium(*run_args(db, corpus_path, max_scenes=1))
    assert begun.returncode == 0, begun.stderr
    files = sorted(tmp_path.glob("new.db*"))
    done = terrarium(*edition, "--as-of-thread", first)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("terrarium: error")]
    assert len(errors) == 1 and first in errors[0] and "curated" in errors[0]
    assert sorted(tmp_path.glob("new.db*")) == files


def test_an_entry_refused_every_time_keeps_its_previous_text(
    quest: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus_path, db = quest
    store_path = _copy(db, tmp_path / "store.db")
    settings = load_settings(offline=True, corpus=corpus_path, db=str(store_path))
    with Engine.open(settings) as engine:
        first, second = engine.threads[0], engine.threads[1]
        engine.write_edition(first.id)
    _Refusing.first, _Refusing.always = set(), True
    try:
        with serving(_Refusing) as url:
            settings = load_settings(corpus=corpus_path, db=str(store_path), agent_url=url)
            with Engine.open(settings) as engine:
                *_, report = engine.write_edition(second.id)
    finally:
        _Refusing.always = False
    assert report.rewritten == 0 and report.kept > 0
    with GlossaryStore(store_path, read_only=True) as store:
        before = store.editions.as_of(first.position)
        views = {v.id: v for v in store.history.glossary_as_of_thread(second.id)}
        texts = store.editions.of_thread(second.id)
        assert texts and all(t.outcome == "kept" and t.attempts == 3 for t in texts)
        for text in texts:  # the previous edition, or the working definition for a new entry
            expected = before[text.entry_id].text if text.entry_id in before else None
            assert text.text == (expected or views[text.entry_id].definition)
        assert any(t.entry_id in before for t in texts)


def test_a_thread_annotated_again_has_its_edition_written_again_and_the_old_one_kept(
    quest: tuple[Path, Path], written: Path, tmp_path: Path
) -> None:
    corpus_path, _ = quest
    store_path = _copy(written, tmp_path / "store.db")
    settings = load_settings(offline=True, corpus=corpus_path, db=str(store_path))
    with Engine.open(settings) as engine:
        last = engine.threads[-1]
        before = engine.store.editions.of_thread(last.id)
        engine.annotate_thread(last.id, rewind=True)
        engine.curate_thread(last.id)
        assert engine.store.editions.thread(last.id) is None  # stale: the thread changed
        assert engine.store.editions.as_of(last.position - 1)  # earlier threads stand
        reports = engine.write_edition(last.id)
        assert [r.already_done for r in reports] == [True] * (len(reports) - 1) + [False]
        after = engine.store.editions.of_thread(last.id)
        assert after and {t.revision_id for t in after} != {t.revision_id for t in before}
        rows = engine.store.conn.execute(
            "SELECT COUNT(*) FROM edition WHERE thread_id = ?", (last.id,)
        ).fetchone()[0]
        assert rows == len(before) + len(after)  # the stale edition is kept on record
