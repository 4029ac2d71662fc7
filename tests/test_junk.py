"""Few junk entries and the story's terms kept, on a real novel with the offline backend.

Chapters I-X of *A Princess of Mars* (a real public novel, `tests/data/books/`) are imported and
annotated offline; the live entries are scored against a gold list written by hand for those
chapters (`princess-of-mars-gold.yaml`): recall is the share of gold terms that are a live
entry's term or alias, junk the share of live entries that are neither a gold term nor one the
list accepts (ordinary words like "evidently" or "enclosure", descriptions like
"paint-streaked", real-world names in passing like "Sioux" or "Civil War").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import NamedTuple

import yaml

from terrarium_dagster.cli import main
from terrarium_dagster.exports.score import load_gold, score
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import Entry
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import ordinary_reason
from tests.support.cli import run_args

BOOKS = Path(__file__).parent / "data" / "books"
NOVEL = BOOKS / "princess-of-mars-ch1-10.txt"
GOLD = BOOKS / "princess-of-mars-gold.yaml"


class _Judged(NamedTuple):
    live: int
    junk: list[str]  # live entries that are neither a gold term nor one the list accepts
    referents: list[set[str]]  # each gold term's normalized names
    found: list[set[str]]  # those that are a live entry's term or alias
    seconds: list[str]  # live entries after the first for one gold referent

    @property
    def share(self) -> float:
        return len(self.junk) / self.live

    @property
    def share_with_seconds(self) -> float:
        """Junk counting a second entry for one referent as junk too."""
        return (len(self.junk) + len(self.seconds)) / self.live


def _in_glossary(db: Path) -> list[Entry]:
    """The entries a reader finds in the glossary: not deleted, merged away or rejected."""
    with GlossaryStore(db) as store:
        return [
            entry
            for entry in store.glossary.entries()
            if not entry.deleted and entry.status not in ("merged", "rejected")
        ]


def _judged(db: Path, gold_path: Path) -> _Judged:
    """The live entries judged against a hand-written gold list."""
    gold = yaml.safe_load(gold_path.read_text(encoding="utf-8"))
    referents = [
        {normalize_term(name) for name in (item["term"], *item.get("aliases", []))}
        for item in gold["terms"]
    ]
    accepted = {normalize_term(name) for name in gold["acceptable"]}
    live = _in_glossary(db)
    names = {entry.id: {normalize_term(n) for n in (entry.term, *entry.aliases)} for entry in live}
    known = set().union(*referents) | accepted
    junk = sorted(entry.term for entry in live if not names[entry.id] & known)
    found = [ref for ref in referents if any(ref & entry_names for entry_names in names.values())]
    seconds = [
        entry.term
        for ref in referents
        for entry in sorted((e for e in live if names[e.id] & ref), key=lambda e: e.id)[1:]
    ]
    return _Judged(len(live), junk, referents, found, seconds)


def test_offline_junk_is_at_most_a_tenth_of_live_entries_and_recall_is_kept(
    tmp_path: Path,
) -> None:
    corpus, db = tmp_path / "mars.db", tmp_path / "store.db"
    assert main(["import", str(NOVEL), "--out", str(corpus)]) == 0
    with sqlite3.connect(corpus) as conn:
        assert conn.execute("SELECT count(*) FROM thread").fetchone()[0] == 10
    assert main(run_args(db, corpus)) == 0
    judged = _judged(db, GOLD)
    assert judged.share <= 0.10, judged.junk
    # Recall as before the junk rules (14 of 17: jed, jeddak and Helium stand only in titles
    # or once in these chapters).
    missed = [sorted(r)[0] for r in judged.referents if r not in judged.found]
    assert len(judged.found) >= 14, missed
    with GlossaryStore(db) as store:
        rejected = {e.term for e in store.glossary.entries() if e.status == "rejected"}
        report = score(store, load_gold(GOLD))
    # Real-world names mentioned in passing are rejected by the curator, not left live.
    assert {"Sioux", "Colt", "Shetland", "Civil War"} <= rejected, rejected
    # Still split (was 4): "Captain Jack Carter of Virginia" beside "John Carter", and
    # "Tharkian" beside "Thark" (never in one scene, nor shown to the curator together).
    assert report.split_referents <= 2, report.split_examples


def test_a_second_novel_keeps_junk_at_most_a_tenth_and_one_entry_per_referent(
    tmp_path: Path,
) -> None:
    """The FOREWORD and chapters III-IV of *The Gods of Mars* (`gods-of-mars-iii-iv.txt`,
    gold list `gods-of-mars-iii-iv-gold.yaml`): the forms of one name are one entry ("Valley
    Dor" and "Valley of Dor", "Lost Sea of Korus" and "Korus", "Thark" and "Tharkian", "John
    Carter" and "Captain John Carter"), and `terrarium score` counts what is still split."""
    corpus, db = tmp_path / "gods.db", tmp_path / "store.db"
    assert main(["import", str(BOOKS / "gods-of-mars-iii-iv.txt"), "--out", str(corpus)]) == 0
    assert main(run_args(db, corpus)) == 0
    gold_path = BOOKS / "gods-of-mars-iii-iv-gold.yaml"
    judged = _judged(db, gold_path)
    # left: the hotel of "hotel Raleigh Richmond", and "River of Mystery", the Iss's other name,
    # which no rule can tie (before these rules: 8 of 32, 7 of them second entries)
    assert judged.share_with_seconds <= 0.10, (judged.junk, judged.seconds)
    # Recall as before these rules (17 of 23: Helium stands only in titles; the Tree of Life,
    # the plant men, the banths, Otz and "jeddak" are not proposed or are rejected).
    missed = [sorted(r)[0] for r in judged.referents if r not in judged.found]
    assert len(judged.found) >= 17, missed
    with GlossaryStore(db) as store:
        report = score(store, load_gold(gold_path))
    assert report.split_referents <= 1, report.split_examples  # was 6


def test_the_time_machine_offline_keeps_no_cut_word_and_one_entry_per_idea(
    tmp_path: Path,
) -> None:
    """*The Time Machine*, chapters I, II, XVI and the Epilogue (`time-machine-pandoc.epub`):
    "perhaps" is no entry "perhap", and "Fourth Dimension", "Four Dimensions",
    "Four-Dimensioned", "Four-Dimensional" are the names of one entry."""
    corpus, db = tmp_path / "time.db", tmp_path / "store.db"
    assert main(["import", str(BOOKS / "time-machine-pandoc.epub"), "--out", str(corpus)]) == 0
    assert main(run_args(db, corpus)) == 0
    live = _in_glossary(db)
    names = {e.term: {normalize_term(n) for n in (e.term, *e.aliases)} for e in live}
    assert not any({"perhap", "perhaps"} & found for found in names.values()), names
    forms = {"fourth dimension", "four dimensions", "four dimensioned", "four dimensional"}
    owners = [term for term, found in names.items() if found & forms]
    assert len(owners) == 1, owners
    assert not [term for term in names if ordinary_reason(term)], names
