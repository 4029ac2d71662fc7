"""`terrarium score`: how good is a glossary, measured against a gold list.

Recall (gold terms found as a live entry's term or alias), the share of live entries that are
ordinary vocabulary or plainly used real-world names (`glossary.vocabulary`), and gold referents
split across several live entries: two live entries whose names are one gold term's names. A live
name matches a gold name as the store compares names (`normalize_term`), or once the titles that
open it are set aside ("Captain Ismay Rook" is the gold "Ismay Rook"). The gold file is YAML:
`terms:` a list of `{term, aliases}` or of names alone (the bundled sample's `gold.yaml` is one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from terrarium_dagster.config import yaml_problem
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import ordinary_reason
from terrarium_dagster.terms.english import TITLES

EXAMPLES = 10


class GoldTerm(BaseModel):
    """A gold term: `{term, aliases}`, or its name alone (`- Alan Breck`: no aliases); other
    keys are the list's own notes (`kind:`, `note:`), but `alias:` is a misspelt `aliases:`,
    an error rather than aliases silently dropped; a name is never blank."""

    term: str
    aliases: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _a_name_alone(cls, value: Any) -> Any:
        if isinstance(value, dict) and "alias" in value and "aliases" not in value:
            raise ValueError("`alias:` is no key of a gold term: write its names under `aliases:`")
        return {"term": value} if isinstance(value, str) else value

    @field_validator("term")
    @classmethod
    def _a_name(cls, term: str) -> str:
        if not term.strip():
            raise ValueError("a blank term")
        return term

    @field_validator("aliases")
    @classmethod
    def _names(cls, aliases: list[str]) -> list[str]:
        if any(not alias.strip() for alias in aliases):
            raise ValueError("a blank alias")
        return aliases


class GoldList(BaseModel):
    """The gold terms, each once: a term listed twice would count twice."""

    terms: list[GoldTerm]

    @field_validator("terms", mode="before")
    @classmethod
    def _none_is_empty(cls, terms: Any) -> Any:
        return [] if terms is None else terms  # `terms:` with nothing under it: no terms

    @field_validator("terms")
    @classmethod
    def _each_once(cls, terms: list[GoldTerm]) -> list[GoldTerm]:
        seen: set[str] = set()
        for gold in terms:
            key = normalize_term(gold.term)
            if key in seen:
                raise ValueError(f"'{gold.term}' is listed twice")
            seen.add(key)
        return terms


class ScoreReport(BaseModel):
    gold_terms: int
    found: int
    recall: float
    live_entries: int
    junk: int
    junk_share: float
    split_referents: int
    missed: list[str] = Field(default_factory=list)
    junk_examples: list[str] = Field(default_factory=list)
    split_examples: list[str] = Field(default_factory=list)


def load_gold(path: Path) -> GoldList:
    try:
        document: Any = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        if not isinstance(document, dict):  # (a text file reads as one string)
            what = (
                "is empty"
                if document is None
                else "is a list without its `terms:` key"
                if isinstance(document, list)
                else "is plain text, no `terms:` key"
            )
            raise InputError(
                f"gold list {path} {what}: write `terms:` on the first line and the gold terms "
                "under it (`  - Alan Breck`, or `  - {term: ..., aliases: [...]}`)"
            )
        gold = GoldList.model_validate(document)
        if not gold.terms:  # `terms:` with nothing under it, or an empty list
            raise InputError(
                f"gold list {path} has no terms: nothing to measure; list them under `terms:`"
            )
        return gold
    except OSError as exc:
        raise InputError(f"cannot read the gold list {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read the gold list {path}: {yaml_problem(exc)}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise InputError(
            f"gold list {path} is not a `terms:` list of {{term, aliases}} or names: {where}: "
            f"{first['msg'].removeprefix('Value error, ')}"
        ) from None


def score(store: GlossaryStore, gold: GoldList) -> ScoreReport:
    live = [
        entry
        for entry in store.glossary.entries()
        if not entry.deleted and entry.status not in ("merged", "rejected")
    ]
    names: dict[str, set[int]] = {}
    for view in live:
        for name in (view.term, *view.aliases):
            for key in _keys(name):
                names.setdefault(key, set()).add(view.id)
    found = 0
    missed: list[str] = []
    split: list[str] = []
    for item in gold.terms:
        owners: set[int] = set()
        for name in (item.term, *item.aliases):
            owners |= names.get(normalize_term(name), set())
        if owners:
            found += 1
        else:
            missed.append(item.term)
        if len(owners) > 1:
            split.append(f"{item.term}: {len(owners)} entries")
    junk = [view.term for view in live if ordinary_reason(view.term)]
    total = len(gold.terms)
    return ScoreReport(
        gold_terms=total,
        found=found,
        recall=round(found / total, 4) if total else 0.0,
        live_entries=len(live),
        junk=len(junk),
        junk_share=round(len(junk) / len(live), 4) if live else 0.0,
        split_referents=len(split),
        missed=missed,
        junk_examples=junk[:EXAMPLES],
        split_examples=split[:EXAMPLES],
    )


def _keys(name: str) -> set[str]:
    """The keys under which a live entry's name matches a gold name: as the store compares
    names, and without the titles that open it ("captain ismay rook", "ismay rook")."""
    key = normalize_term(name)
    words = key.split()
    while len(words) > 1 and words[0] in TITLES:
        words = words[1:]
    return {key, " ".join(words)} - {""}


def render_score(report: ScoreReport) -> str:
    lines = [
        f"recall      {report.found}/{report.gold_terms} = {report.recall:.2f}",
        f"junk        {report.junk}/{report.live_entries} live entries = {report.junk_share:.0%}"
        " (ordinary words or plain real-world names)",
        f"split       {report.split_referents} gold "
        f"{'referent' if report.split_referents == 1 else 'referents'} on more than one entry",
    ]
    for label, items in (
        ("missed", report.missed[:EXAMPLES]),
        ("junk", report.junk_examples),
        ("split", report.split_examples),
    ):
        if items:
            lines.append(f"{label}: " + "; ".join(items))
    return "\n".join(lines)
