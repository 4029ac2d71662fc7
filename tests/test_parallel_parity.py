"""Parallel without forgetting (issue 30): concurrency writes the serial glossary.

Every run here is the real `terrarium run` against a loopback server (`testing.batching`) that
answers with the model that forgets like a real one (`testing.forgetful`): what it writes
depends on what each request shows it. The quest is generated (`testing.recurring`): names recur
across scenes and threads, by full name and short form, each scene telling one fact of each
thing it names; its gold is the cast and the facts told. Quality is `testing.quality.quality`.

What a block writes must not depend on the order its replies arrive in: the drafts of a wave
read the glossary as the wave began (`agent/drafts.py::run_block`).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.context import prompts
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.testing.batching import BatchingServer
from terrarium_dagster.testing.forgetful import ForgetfulBackend, definition_facts
from terrarium_dagster.testing.quality import Quality, gold_of_quest, quality
from terrarium_dagster.testing.recurring import RecurringQuest, generate_recurring_quest
from tests.support.cli import TERRARIUM, run_args
from tests.support.corpus_builder import PostSpec, ThreadSpec, build_corpus
from tests.support.kill_server import KillPoint, run_kill_server
from tests.support.store_dump import store_dump

CONCURRENCY = 8
RECALL_SLACK = 0.02


@dataclass(frozen=True)
class Runs:
    quest: RecurringQuest
    serial: Path
    parallel: Path
    serial_quality: Quality
    parallel_quality: Quality


def _run(corpus: Path, db: Path, url: str, concurrency: int) -> None:
    assert main(run_args(db, corpus, agent_url=url, concurrency=concurrency)) == 0


@pytest.fixture(scope="module")
def jittery() -> Iterator[BatchingServer]:
    """Replies after random delays, so they arrive in any order."""
    with BatchingServer(backend=ForgetfulBackend(), jitter_s=0.02, seed=None) as server:
        yield server


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, jittery: BatchingServer) -> Runs:
    """The quest annotated serially and at concurrency 8 (three threads of twelve scenes)."""
    folder = tmp_path_factory.mktemp("parity")
    quest = generate_recurring_quest(folder / "quest.db", threads=3, scenes_per_thread=12, seed=3)
    serial, parallel = folder / "serial.db", folder / "parallel.db"
    _run(quest.path, serial, jittery.url, 1)
    _run(quest.path, parallel, jittery.url, CONCURRENCY)
    gold = gold_of_quest(quest)
    return Runs(
        quest, serial, parallel, quality(serial, gold, quest), quality(parallel, gold, quest)
    )


def test_the_serial_run_is_a_fair_reference(runs: Runs) -> None:
    """What the parallel run is held to: the serial run finds the cast without splitting it."""
    assert runs.serial_quality.recall >= 0.9, runs.serial_quality
    assert runs.serial_quality.splits_created == 0, runs.serial_quality.split_examples
    assert runs.serial_quality.facts_added >= 2 * len(runs.quest.things)


def test_concurrency_8_keeps_the_serial_recall_within_two_points(runs: Runs) -> None:
    assert runs.parallel_quality.recall >= runs.serial_quality.recall - RECALL_SLACK, (
        runs.parallel_quality,
        runs.serial_quality,
    )


def test_concurrency_8_splits_no_more_things_than_serial(runs: Runs) -> None:
    assert runs.parallel_quality.splits_created <= runs.serial_quality.splits_created, (
        runs.parallel_quality.split_examples
    )
    assert runs.parallel_quality.split_live <= runs.serial_quality.split_live


def test_concurrency_8_loses_no_more_facts_than_serial(runs: Runs) -> None:
    parallel, serial = runs.parallel_quality, runs.serial_quality
    assert parallel.lost_facts <= serial.lost_facts, parallel.lost_examples
    assert parallel.dropped_facts <= serial.dropped_facts, (parallel, serial)


def test_two_runs_at_concurrency_8_write_the_same_store_byte_for_byte(
    runs: Runs, jittery: BatchingServer, tmp_path: Path
) -> None:
    again = tmp_path / "again.db"
    _run(runs.quest.path, again, jittery.url, CONCURRENCY)
    assert store_dump(again) == store_dump(runs.parallel)
    assert jittery.peak_in_flight >= 4, "requests went out side by side"


def test_sigkill_at_random_points_of_a_run_at_8_resumes_to_the_uninterrupted_store(
    runs: Runs, jittery: BatchingServer, tmp_path: Path
) -> None:
    killed = tmp_path / "killed.db"
    command = [
        TERRARIUM,
        *run_args(killed, runs.quest.path, agent_url=jittery.url, concurrency=CONCURRENCY),
    ]
    with closing(sqlite3.connect(runs.parallel)) as conn:
        calls_per_run = conn.execute("SELECT COUNT(*) FROM agent_call").fetchone()[0]
    rng = random.Random(3011)
    shares = sorted(rng.uniform(0.1, 0.9) for _ in range(3))
    kills = 0
    for share in shares:
        start = jittery.chat_requests
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        target = start + max(2, int(calls_per_run * share / len(shares)))
        deadline = time.monotonic() + 60
        while jittery.chat_requests < target and process.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.005)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            kills += 1
        process.wait(timeout=30)
    assert kills >= 2, f"killed {kills} times at shares {shares}"
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert store_dump(killed) == store_dump(runs.parallel), f"killed at shares {shares}"


def test_sigkill_inside_a_block_and_inside_a_curation_resumes_to_the_uninterrupted_store(
    runs: Runs, tmp_path: Path
) -> None:
    """Deterministic kill points (the loopback kill server, answering with the same model): a
    draft's second round in the middle of a block, and the first thread's curation."""
    with closing(sqlite3.connect(runs.quest.path)) as conn:
        threads = [row[0] for row in conn.execute("SELECT id FROM thread ORDER BY id")]
    killed = tmp_path / "killed.db"
    with run_kill_server(backend=ForgetfulBackend()) as server:
        server.kill_points = [
            KillPoint("scene", threads[1], scene_number=3, round=1),
            KillPoint("curate", threads[0]),
        ]
        command = [
            TERRARIUM,
            *run_args(killed, runs.quest.path, agent_url=server.url, concurrency=CONCURRENCY),
        ]
        codes = []
        for _ in range(4):
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            server.victim = process
            codes.append(process.wait(timeout=120))
            if codes[-1] == 0:
                break
    assert codes == [-9, -9, 0], codes
    assert store_dump(killed) == store_dump(runs.parallel)


# --------------------------------------------------------------------------------------------
# Two blocks written by hand: what one block's scenes do to each other


def _scene(*sentences: str) -> list[PostSpec]:
    """A scene: one QM post of these sentences among filler, then a player's reply."""
    body = " ".join(f"The road was cold. {sentence}" for sentence in sentences)
    return [PostSpec(body + " Nobody spoke."), PostSpec("&gt;keep going", qm=False)]


def _filler_scenes(count: int) -> list[PostSpec]:
    return [post for _ in range(count) for post in _scene("Rain fell all night.")]


def _serial_and_parallel(
    corpus: Path, tmp_path: Path, server: BatchingServer, *, concurrency: int = CONCURRENCY
) -> tuple[Path, Path]:
    serial, parallel = tmp_path / "serial.db", tmp_path / "parallel.db"
    _run(corpus, serial, server.url, 1)
    _run(corpus, parallel, server.url, concurrency)
    return serial, parallel


def _definition_of(db: Path, term: str) -> str:
    with closing(sqlite3.connect(db)) as conn:
        row = conn.execute(
            "SELECT definition FROM entry WHERE term = ? AND status != 'merged'", (term,)
        ).fetchone()
    assert row is not None, f"no entry {term!r}"
    return str(row[0])


def _entries_naming(db: Path, names: set[str]) -> list[str]:
    """Every entry ever created under one of `names` (term or alias), merged ones too."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT DISTINCT e.id, e.term FROM entry e LEFT JOIN alias a ON a.entry_id = e.id "
            f"WHERE e.term IN ({','.join('?' * len(names))}) "
            f"OR a.alias IN ({','.join('?' * len(names))}) ORDER BY e.id",
            [*sorted(names), *sorted(names)],
        ).fetchall()
    return [f"E{entry_id} {term}" for entry_id, term in rows]


@pytest.fixture
def steady() -> Iterator[BatchingServer]:
    with BatchingServer(backend=ForgetfulBackend(), jitter_s=0.01, seed=None) as server:
        yield server


def test_two_scenes_of_one_block_that_update_one_entry_both_keep_their_addition(
    tmp_path: Path, steady: BatchingServer
) -> None:
    facts = ("Keeps a bronze lantern.", "Fears a silver bell.", "Owns a scarlet map.")
    corpus = build_corpus(
        tmp_path / "quest.db",
        [
            ThreadSpec("One", [*_scene(f"Vorn Tarkesh {facts[0].lower()}"), *_filler_scenes(1)]),
            ThreadSpec(
                "Two",
                [
                    *_scene(f"Vorn Tarkesh {facts[1].lower()}"),
                    *_scene(f"Vorn Tarkesh {facts[2].lower()}"),
                    *_filler_scenes(2),
                ],
            ),
        ],
    )
    serial, parallel = _serial_and_parallel(corpus, tmp_path, steady)
    assert all(fact in _definition_of(serial, "Vorn Tarkesh") for fact in facts)
    definition = _definition_of(parallel, "Vorn Tarkesh")
    assert all(fact in definition for fact in facts), definition


class _Delayed(ForgetfulBackend):
    """The forgetful model, answering the first round of some scenes late (seconds by scene id):
    the order replies arrive in, chosen."""

    def __init__(self, delays: dict[str, float]) -> None:
        super().__init__()
        self.delays = delays

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        if messages and messages[-1].get("role") == "user":
            first_line = str(messages[-1].get("content") or "").split("\n", 1)[0]
            delay = self.delays.get(first_line.removeprefix(prompts.SCENE_HEADING), 0.0)
            time.sleep(delay)
        return super().complete(body)


def test_the_glossary_is_the_same_whichever_draft_of_a_block_answers_first(
    tmp_path: Path,
) -> None:
    facts = ("keeps a bronze lantern", "fears a silver bell", "owns a scarlet map")
    corpus = build_corpus(
        tmp_path / "quest.db",
        [
            ThreadSpec("One", [*_scene(f"Vorn Tarkesh {facts[0]}."), *_filler_scenes(1)]),
            ThreadSpec(
                "Two",
                [
                    *_scene(f"Vorn Tarkesh {facts[1]}."),
                    *_scene(f"Vorn Tarkesh {facts[2]}."),
                    *_filler_scenes(2),
                ],
            ),
        ],
    )
    with closing(Corpus(corpus)) as reader:
        second = reader.threads()[1].id
        first_scene, second_scene = [scene.id for scene in reader.scenes(second)][:2]
    stores, definitions = [], []
    for late in (first_scene, second_scene):
        db = tmp_path / f"late-{late.replace('#', '-')}.db"
        with BatchingServer(backend=_Delayed({late: 1.5})) as server:
            _run(corpus, db, server.url, CONCURRENCY)
        stores.append(store_dump(db))
        definitions.append(_definition_of(db, "Vorn Tarkesh"))
    assert definitions[0] == definitions[1]
    assert all(fact.capitalize() in definitions[0] for fact in facts), definitions[0]
    assert stores[0] == stores[1], "the late answer changed what was written"


def test_a_later_scene_of_one_block_naming_a_thing_by_its_short_form_makes_no_second_entry(
    tmp_path: Path, steady: BatchingServer
) -> None:
    corpus = build_corpus(
        tmp_path / "quest.db",
        [
            ThreadSpec(
                "One",
                [
                    *_scene("Zodrin Vaxhal keeps a bronze lantern."),
                    *_filler_scenes(1),
                    *_scene("Zodrin fears a silver bell."),
                    *_filler_scenes(1),
                ],
            )
        ],
    )
    serial, parallel = _serial_and_parallel(corpus, tmp_path, steady)
    names = {"Zodrin Vaxhal", "Zodrin"}
    assert len(_entries_naming(serial, names)) == 1, _entries_naming(serial, names)
    assert len(_entries_naming(parallel, names)) == 1, _entries_naming(parallel, names)


def test_a_view_replaying_earlier_drafts_writes_each_update_to_the_entry_it_meant(
    tmp_path: Path,
) -> None:
    """A redraft's view replays the block's earlier drafts; an update one of them made by id
    (`E3`, an entry a draft before it created in its own view) names another entry where the
    drafts before it came out otherwise. Seen on a long thread with one lookup a scene
    (2 × 96, 2026-12-03): Sornmyl's alias and facts replayed onto Maelsyr, Maelsyr's onto
    Nouxgum, lines a redraft's committed scene message then showed; a later scene rewrote
    Maelsyr from that line and dropped its facts (2 dropped and 1 lost at 16, none serially).
    The replay writes the entry that bears the term the draft wrote (`drafts._retargeted`)."""
    quest = generate_recurring_quest(
        tmp_path / "quest.db",
        threads=1,
        scenes_per_thread=24,
        people=60,
        places=40,
        mentions_per_scene=(4, 8),
        seed=23,
    )
    gold = gold_of_quest(quest)
    owner = {
        definition_facts(f"{fact[0].upper()}{fact[1:]}.")[0]: thing.full
        for thing in quest.things
        for fact in thing.facts
    }
    with BatchingServer(backend=ForgetfulBackend(lookups=1), jitter_s=0.01, seed=None) as server:
        serial, parallel = _serial_and_parallel(quest.path, tmp_path, server, concurrency=16)
    serial_quality, parallel_quality = quality(serial, gold, quest), quality(parallel, gold, quest)
    assert parallel_quality.redrafts, "no draft was set aside: the views were never replayed"
    assert parallel_quality.lost_facts <= serial_quality.lost_facts, parallel_quality
    assert parallel_quality.dropped_facts <= serial_quality.dropped_facts, parallel_quality
    with closing(sqlite3.connect(parallel)) as conn:
        rows = conn.execute(
            "SELECT e.term, e.definition, group_concat(a.alias, '|') FROM entry e "
            "LEFT JOIN alias a ON a.entry_id = e.id AND a.deleted = 0 GROUP BY e.id"
        ).fetchall()
    foreign = []
    for term, definition, aliases in rows:
        thing = quest.thing(term).full
        if any(quest.thing(alias).full != thing for alias in (aliases or "").split("|") if alias):
            foreign.append(f"{term}: aliases {aliases}")
        for fact in definition_facts(definition or ""):
            if owner.get(fact, thing) != thing:
                foreign.append(f"{term}: {fact} (of {owner[fact]})")
    assert not foreign, foreign
