"""How a run's glossary scores against the gold of a generated quest, for the throughput and
concurrency tests and the benchmark; not used by the product.

`score` (recall of the synthetic quest's invented terms and duplicate live entries) is the old
measure; `quality` the one of issue 30: recall and split referents as `terrarium score` counts
them, splits created over the whole run, facts lost by later writes, fact recall against a
recurring quest's told facts, and redrafts where the store records them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from terrarium_dagster.exports.score import GoldList, GoldTerm
from terrarium_dagster.exports.score import score as score_report
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.testing.forgetful import definition_facts
from terrarium_dagster.testing.recurring import RecurringQuest
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


# --------------------------------------------------------------------------------------------
# The concurrency measures (issue 30): recall, split entities, lost facts, redrafts


@dataclass(frozen=True)
class Quality:
    """How a run's store compares with the gold of its quest (see `quality`)."""

    recall: float  # gold things found as a live entry's term or alias (`terrarium score`)
    live_entries: int
    split_live: int  # gold things on more than one live entry at the end (`terrarium score`)
    splits_created: int  # entries created for a thing that already had one, over the whole run
    facts_added: int  # distinct (entry, fact) a scene added to a definition
    lost_facts: int  # of those, missing from the definition the entry ends with
    dropped_facts: int  # facts an agent's rewrite left out of a definition that had them
    fact_recall: float | None  # facts the story told that the things' live entries hold
    redrafts: int | None  # scenes whose draft was set aside and decided again
    lost_examples: tuple[str, ...] = ()
    split_examples: tuple[str, ...] = ()

    def line(self) -> str:
        fact_recall = "" if self.fact_recall is None else f", fact recall {self.fact_recall:.3f}"
        redrafts = "" if self.redrafts is None else f", {self.redrafts} redrafts"
        return (
            f"recall {self.recall:.3f}, {self.live_entries} live entries, "
            f"splits {self.splits_created} created / {self.split_live} live, "
            f"lost facts {self.lost_facts}/{self.facts_added} "
            f"({self.dropped_facts} dropped by rewrites){fact_recall}{redrafts}"
        )


def gold_of_terms(terms: Iterable[str]) -> GoldList:
    """A gold list of plain terms (the synthetic quest's vocabulary: no short forms)."""
    return GoldList(terms=[GoldTerm(term=term) for term in sorted(terms)])


def gold_of_quest(quest: RecurringQuest) -> GoldList:
    """The gold list of a recurring quest: each thing's full name, its short form an alias."""
    return GoldList(
        terms=[GoldTerm(term=thing.full, aliases=[thing.short]) for thing in quest.things]
    )


def _definition(value: str | None) -> str:
    if not value:
        return ""
    return str(json.loads(value).get("definition") or "")


def quality(db: Path, gold: GoldList, quest: RecurringQuest | None = None) -> Quality:
    """Measure the store at `db` against `gold` (and the facts of `quest`, when given).

    - recall and live splits: `terrarium score`'s (`exports.score.score`);
    - splits created: per gold thing, the entries whose creation named it (by term or alias,
      normalized) beyond the first, whatever curation merged later;
    - lost facts: a fact is a sentence or `;` clause of a definition
      (`forgetful.definition_facts`); each one an agent's revision added to an entry (not in
      the definition before it) counts once per entry, and is lost when no fact of the
      definition the entry ends in (following merges) holds it, whole words. Entries deleted or
      rejected in the end are left out. (The offline backend refines its leads, "a name in the
      story" becoming "a place": those count as lost too; compare levels, not models);
    - dropped facts: facts of a definition that an agent's update replaced with one lacking
      them, each time it happened, even if a later scene wrote the fact again (a lost fact
      that recurs in the story heals by the end; a dropped one is still counted);
    - fact recall (with `quest`): the facts the story told of each thing found among the
      sentences of the live entries that name it;
    - redrafts: scenes whose draft was set aside and decided again (the `redrafts` of the
      threads' answer tallies).
    """
    with closing(GlossaryStore(db, read_only=True)) as store:
        report = score_report(store, gold)
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        entries = {
            row[0]: (row[1], row[2], row[3], row[4], bool(row[5]))
            for row in conn.execute(
                "SELECT id, term, definition, status, merged_into, deleted FROM entry"
            )
        }
        revisions = conn.execute(
            "SELECT entry_id, action, old_value, new_value FROM revision "
            "WHERE actor_kind = 'agent' AND entry_id IS NOT NULL ORDER BY id"
        ).fetchall()
        aliases: dict[int, list[str]] = {}
        for entry_id, alias in conn.execute("SELECT entry_id, alias FROM alias WHERE deleted = 0"):
            aliases.setdefault(entry_id, []).append(alias)
        redrafts = 0  # the scenes' answer tallies (thread_state extra) count them
        for (extra,) in conn.execute("SELECT extra FROM thread_state"):
            answers = (json.loads(extra or "{}") or {}).get("answers") or {}
            redrafts += int(answers.get("redrafts") or 0)

    def final(entry_id: int) -> int:
        seen = {entry_id}
        while (target := entries[entry_id][3]) is not None and target not in seen:
            seen.add(target)
            entry_id = target
        return entry_id

    # lost facts
    added: dict[tuple[int, str], int] = {}
    for entry_id, action, old_value, new_value in revisions:
        if action not in ("create", "update") or new_value is None:
            continue
        before = set(definition_facts(_definition(old_value)))
        for fact in definition_facts(_definition(new_value)):
            if fact not in before:
                added.setdefault((entry_id, fact), entry_id)
    dropped = 0
    for _entry_id, action, old_value, new_value in revisions:
        if action == "update" and old_value is not None and new_value is not None:
            after = definition_facts(_definition(new_value))
            dropped += sum(
                1
                for fact in definition_facts(_definition(old_value))
                if not any(f" {fact} " in f" {kept} " for kept in after)
            )
    lost: list[str] = []
    counted_facts = 0
    for (entry_id, fact), _ in added.items():
        end = final(entry_id)
        term, definition, status, _merged, deleted = entries[end]
        if deleted or status == "rejected":
            continue
        counted_facts += 1
        if not any(f" {fact} " in f" {kept} " for kept in definition_facts(definition)):
            lost.append(f"E{entry_id}→E{end} {term}: {fact}")

    # splits created: which gold thing each created entry named
    owner: dict[str, int] = {}
    for index, item in enumerate(gold.terms):
        for name in (item.term, *item.aliases):
            owner.setdefault(normalize_term(name), index)
    created: dict[int, set[int]] = {}
    for entry_id, action, _old, new_value in revisions:
        if action != "create" or new_value is None:
            continue
        value = json.loads(new_value)
        names = [value.get("term") or "", *(value.get("aliases") or [])]
        for name in names:
            index = owner.get(normalize_term(name))
            if index is not None:
                created.setdefault(index, set()).add(entry_id)
                break
    splits = [
        f"{gold.terms[index].term}: {len(ids)} entries created"
        for index, ids in sorted(created.items())
        if len(ids) > 1
    ]

    fact_recall: float | None = None
    if quest is not None:
        live = [
            (entry_id, term, definition)
            for entry_id, (term, definition, status, _m, deleted) in entries.items()
            if not deleted and status not in ("merged", "rejected")
        ]
        told = found = 0
        for thing in quest.things:
            keys = {normalize_term(name) for name in thing.names}
            held: set[str] = set()
            for entry_id, term, definition in live:
                names = {normalize_term(name) for name in (term, *aliases.get(entry_id, []))}
                if keys & names:
                    held.update(definition_facts(definition))
            for fact in thing.told:
                told += 1
                found += _fact_sentence(fact) in held
        fact_recall = round(found / told, 4) if told else None

    return Quality(
        recall=report.recall,
        live_entries=report.live_entries,
        split_live=report.split_referents,
        splits_created=sum(len(ids) - 1 for ids in created.values()),
        facts_added=counted_facts,
        lost_facts=len(lost),
        dropped_facts=dropped,
        fact_recall=fact_recall,
        redrafts=redrafts,
        lost_examples=tuple(lost[:10]),
        split_examples=tuple(splits[:10]),
    )


def _fact_sentence(predicate: str) -> str:
    """A gold fact ("keeps a bronze lantern") as `definition_facts` normalizes a sentence."""
    return definition_facts(predicate[0].upper() + predicate[1:] + ".")[0]
