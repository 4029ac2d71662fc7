"""What the curator decides and what a curation did: the curator's boundary models."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from terrarium_dagster.reports import TokenFigures
from terrarium_dagster.store.inputs import positive_id

DecisionKind = Literal["CONFIRM", "REJECT", "MERGE", "REVISE"]
DECISION_KINDS: tuple[str, ...] = ("CONFIRM", "REJECT", "MERGE", "REVISE")

#: The reason recorded for a decision given without one.
DEFAULT_REASONS = {
    "CONFIRM": "confirmed by the curator",
    "REJECT": "rejected by the curator: not a glossary term",
    "MERGE": "merged by the curator: the same thing",
    "REVISE": "definition revised by the curator",
}

_ENTRY_REF = re.compile(r"^\s*\[?\s*[Ee]?\s*(\d+)\s*\]?\s*$")


def parse_entry_ref(value: object) -> int:
    """An entry id as the model may write it: ``12``, ``"12"``, ``"E12"``, ``"[E12]"``."""
    entry_id = positive_id(value, _ENTRY_REF.match)
    if entry_id is not None:
        return entry_id
    if isinstance(value, int):  # a bool or a number below 1
        raise ValueError(f"not an entry id: {value!r}")
    raise ValueError(f"not an entry id: {value!r} (write it as E12 or 12)")


class CurateDecision(BaseModel):
    """One decision of the curator's answer.

    ``entry_id`` accepts ``12`` or ``"E12"`` and is kept as an int. The decision word is read
    case-insensitively. MERGE needs ``target_entry_id``; REVISE needs a non-empty ``definition``.
    ``reasoning`` is optional (a compact answer line gives none for CONFIRM): without one, the
    revision's reason says who decided what (`DEFAULT_REASONS`).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    entry_id: int
    decision: DecisionKind
    target_entry_id: int | None = None
    definition: str | None = None
    reasoning: str = Field(default="", validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _synonyms(cls, data: Any) -> Any:
        """Accept the few key spellings models commonly use for the same fields."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for canonical, others in (
            ("entry_id", ("id", "entry")),
            ("decision", ("action",)),
            ("target_entry_id", ("target", "target_id", "merge_into", "into")),
            ("definition", ("new_definition", "revised_definition")),
            ("reasoning", ("reason", "rationale", "why")),
        ):
            if data.get(canonical) is None:
                for other in others:
                    if data.get(other) is not None:
                        data[canonical] = data[other]
                        break
        reasoning = data.get("reasoning")
        kind = data.get("decision")
        if (reasoning is None or (isinstance(reasoning, str) and not reasoning.strip())) and (
            isinstance(kind, str) and kind.strip().upper() in DEFAULT_REASONS
        ):
            data["reasoning"] = DEFAULT_REASONS[kind.strip().upper()]
        return data

    @field_validator("entry_id", "target_entry_id", mode="before")
    @classmethod
    def _entry_ref(cls, value: object) -> object:
        if value is None or value == "":
            return None
        return parse_entry_ref(value)

    @field_validator("decision", mode="before")
    @classmethod
    def _decision_word(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("reasoning", "definition", mode="before")
    @classmethod
    def _strip_text(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _needs_by_kind(self) -> CurateDecision:
        if self.decision == "MERGE" and self.target_entry_id is None:
            raise ValueError("MERGE needs target_entry_id (the entry to merge into)")
        if self.decision == "REVISE" and not self.definition:
            raise ValueError("REVISE needs a non-empty definition")
        return self

    @property
    def ref(self) -> str:
        return f"E{self.entry_id}"


class CurationReport(TokenFigures):
    """What the curation of one thread did.

    ``reviewed``: the entries shown to the curator. ``merged``: ``(source, target)`` pairs.
    ``left_tentative``: reviewed entries no valid decision was applied to (not mentioned, or
    malformed twice) plus tentative entries beyond the review cap. ``unchanged``: tentative
    entries an earlier curation left tentative and no thread changed since (not sent again).
    ``problems``: one line per
    malformed item of the answers (after the retry). ``decision_ids``: the curator_decision rows.
    """

    thread_id: int
    reviewed: list[int] = Field(default_factory=list)
    confirmed: list[int] = Field(default_factory=list)
    rejected: list[int] = Field(default_factory=list)
    merged: list[tuple[int, int]] = Field(default_factory=list)
    revised: list[int] = Field(default_factory=list)
    left_tentative: list[int] = Field(default_factory=list)
    unchanged: list[int] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    retries: int = 0
    decision_ids: list[int] = Field(default_factory=list)


class UndoResult(BaseModel):
    """What one undo did: ``what`` names the change undone (a curator decision or a revision),
    ``undone`` its revisions, ``revision_ids`` the compensating 'undo' revisions written,
    ``decision_ids`` the curator decisions now marked undone, ``kept`` the parts of the change
    later revisions had already replaced (left as they are), ``thread_key`` the last finished
    thread whose as-of glossary now includes the undo (None when a later thread has begun)."""

    what: str
    revision_id: int
    undone: list[int]
    decision_ids: list[int] = Field(default_factory=list)
    entry_ids: list[int]
    revision_ids: list[int]
    kept: list[str] = Field(default_factory=list)
    thread_key: str | None = None
