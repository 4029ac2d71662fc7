"""How a run's glossary scores against the invented vocabulary of a generated quest: recall of
the gold terms (by term or alias of a live entry) and duplicate live entries. For the throughput
tests and benchmark; not used by the product."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.testing.synthetic import vocabulary

LIVE = "e.deleted = 0 AND e.status NOT IN ('merged', 'rejected')"


@dataclass(frozen=True)
class Score:
    recall: float
    live_entries: int
    duplicates: int  # live entries whose normalized term another live entry has too


def vocabulary_in(corpus: Path, seed: int) -> set[str]:
    """The normalized invented terms of `generate_corpus(seed=seed)` that the corpus uses."""
    with closing(sqlite3.connect(corpus)) as conn:
        text = " ".join(row[0] for row in conn.execute("SELECT body FROM post")).lower()
    return {normalize_term(term) for term in vocabulary(seed).terms if term.lower() in text}


def score(db: Path, gold: set[str]) -> Score:
    """Recall of `gold` and duplicates among the live entries of the store at `db`."""
    with closing(sqlite3.connect(db)) as conn:
        live = [row[0] for row in conn.execute(f"SELECT e.norm_term FROM entry e WHERE {LIVE}")]
        aliases = {
            row[0]
            for row in conn.execute(
                "SELECT a.norm_alias FROM alias a JOIN entry e ON e.id = a.entry_id "
                f"WHERE a.deleted = 0 AND {LIVE}"
            )
        }
    found = gold & (set(live) | aliases)
    return Score(len(found) / max(1, len(gold)), len(live), len(live) - len(set(live)))
