"""What callers hand the glossary store, checked before anything is written: who is acting
(`Actor`), entry ids (`parse_entry_id`), names, definitions, tags, statuses, sources, reasons and
revision boundaries. Each check raises `InputError` with one line naming what is wrong."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from terrarium_dagster.errors import InputError
from terrarium_dagster.store.models import ProvenanceIn
from terrarium_dagster.store.normalize import normalize_term

ActorKind = Literal["agent", "curator", "user", "rollback", "system"]
ACTOR_KINDS: tuple[str, ...] = ("agent", "curator", "user", "rollback", "system")
SETTABLE_STATUSES: tuple[str, ...] = ("tentative", "confirmed", "rejected")

MAX_NAME_CHARS = 200
MAX_TAG_CHARS = 64
MAX_DEFINITION_CHARS = 20_000
_WRAPPING_QUOTES = '"“”„«»'
_ENTRY_REF = re.compile(r"\s*\[?\s*[Ee]?\s*(\d{1,12})\s*\]?\s*")


@dataclass(frozen=True)
class Actor:
    """Who made a change; recorded on every revision."""

    kind: ActorKind
    run_id: str | None = None
    thread_id: int | None = None
    scene_id: str | None = None
    snapshot_id: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ACTOR_KINDS:
            raise InputError(f"actor kind {self.kind!r} is not one of {', '.join(ACTOR_KINDS)}")


def positive_id(value: object, match: Callable[[str], re.Match[str] | None]) -> int | None:
    """A positive id: an int, or a string `match` reads with the number as its first group;
    None for anything else (a bool is no id)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    if isinstance(value, str):
        found = match(value)
        if found and int(found.group(1)) > 0:
            return int(found.group(1))
    return None


def parse_entry_id(value: object) -> int:
    """The one reading of an entry id, for the store, the tools and the command line:
    ``12``, ``"12"``, ``"E12"``, ``"e12"``, ``" [E12] "`` -> 12. InputError otherwise."""
    entry_id = positive_id(value, _ENTRY_REF.fullmatch)
    if entry_id is not None:
        return entry_id
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
    raise InputError(f"{shown} is not an entry id (a positive number or E<number>, like E12)")


def check_actor(actor: object) -> Actor:
    if not isinstance(actor, Actor):
        raise InputError(f"actor must be an Actor, not {type(actor).__name__}")
    return actor


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co"})  # control, format, surrogate, private use


def clean_name(name: object, what: str) -> tuple[str, str]:
    """(surface form, normalized form) of a term or alias."""
    if not isinstance(name, str):
        raise InputError(f"{what} must be a string, not {type(name).__name__}")
    printable = "".join(
        c if c.isspace() or unicodedata.category(c) not in _INVISIBLE else ""
        for c in name  # NUL and other control characters go; whitespace is folded below
    )
    surface = " ".join(printable.split()).strip(_WRAPPING_QUOTES).strip()
    if len(surface) > MAX_NAME_CHARS:
        raise InputError(f"{what} {surface[:40]!r}... is longer than {MAX_NAME_CHARS} characters")
    norm = normalize_term(surface)
    if not norm:
        raise InputError(f"{what} {name!r} has no letters or digits to name anything")
    return surface, norm


def clean_names(names: object, what: str) -> list[tuple[str, str]]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InputError(f"{what}es must be a list of strings, not {type(names).__name__}")
    return [clean_name(name, what) for name in names]


def clean_definition(definition: object) -> str:
    if not isinstance(definition, str):
        raise InputError(f"definition must be a string, not {type(definition).__name__}")
    text = definition.strip()
    if len(text) > MAX_DEFINITION_CHARS:
        raise InputError(f"definition is longer than {MAX_DEFINITION_CHARS} characters")
    return text


def clean_tags(tags: object) -> list[str]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise InputError(f"tags must be a list of strings, not {type(tags).__name__}")
    cleaned: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        if not isinstance(tag, str):
            raise InputError(f"tag {tag!r} is not a string")
        text = " ".join(tag.split())
        if not text:
            continue
        if len(text) > MAX_TAG_CHARS:
            raise InputError(f"tag {text[:30]!r}... is longer than {MAX_TAG_CHARS} characters")
        if text.casefold() not in seen:
            seen.add(text.casefold())
            cleaned.append(text)
    return cleaned


def clean_status(status: object) -> str:
    if status not in SETTABLE_STATUSES:
        raise InputError(
            f"status {status!r} is not one of {', '.join(SETTABLE_STATUSES)} "
            "(an entry becomes 'merged' only through a merge)"
        )
    return str(status)


def clean_items(items: object) -> list[ProvenanceIn]:
    if isinstance(items, str | dict) or not isinstance(items, Iterable):
        raise InputError("provenance must be a list of ProvenanceIn (post_id, thread_id, quote)")
    cleaned: list[ProvenanceIn] = []
    for item in items:
        try:
            cleaned.append(ProvenanceIn.model_validate(item))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "item"
            raise InputError(f"bad provenance {item!r}: {where}: {problem['msg']}") from exc
    return cleaned


def clean_reason(reason: object, *, required: bool, what: str = "reason") -> str | None:
    if reason is None and not required:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"a non-empty {what} is required")
    return reason.strip()


def clean_boundary(revision_id: object) -> int:
    if isinstance(revision_id, bool) or not isinstance(revision_id, int) or revision_id < 0:
        raise InputError(f"revision id must be a non-negative integer, not {revision_id!r}")
    return revision_id
