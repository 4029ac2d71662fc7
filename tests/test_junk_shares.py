"""The junk readings' scorer (benchmarks/junk_readings/shares.py) on a real store.

A reading calls an entry `second` to the first entry it names by id in the store it was made
on. When a later store has no live entry for that first one, the first of its seconds stands
for the referent and takes the first one's verdict; the rest stay second.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from terrarium_dagster.store import Actor, GlossaryStore

AGENT = Actor("agent", run_id="run-1", thread_id=100, scene_id="100#101")
CURATOR = Actor("curator", run_id="run-1", thread_id=100)
SHARES = Path(__file__).resolve().parent.parent / "benchmarks" / "junk_readings" / "shares.py"

READING = "\n".join(
    (
        "E1\tWonderful Wizard of Oz\tterm\tthe Wizard",
        "E2\tGreat Wizard\tsecond\tE1 (the Wizard)",
        "E3\tGreat Oz\tsecond\tE1 (the Wizard)",
        "E4\tKing of the Winged Monkeys\tterm\tspeaks",
        "E5\tMonkey King\tsecond\tE4 (King of the Winged Monkeys)",
        "E6\tWildcat\tjunk\tan ordinary word",
        "E7\tCaptain Speedy\tsecond\tread later: Andrew Speedy, the captain",
        "# oz: 7 live",
    )
)


def _shares() -> ModuleType:
    spec = importlib.util.spec_from_file_location("junk_shares", SHARES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _store(path: Path, terms: list[str], *, aliases: dict[str, list[str]] | None = None) -> Path:
    with GlossaryStore(path) as store:
        for term in terms:
            store.glossary.create_entry(
                AGENT, term, "A name.", aliases=(aliases or {}).get(term, [])
            )
    return path


def test_a_second_whose_first_is_live_stays_second(tmp_path: Path) -> None:
    (tmp_path / "oz.judge").write_text(READING, encoding="utf-8")
    store = _store(
        tmp_path / "a.db",
        ["Wonderful Wizard of Oz", "Great Wizard", "Great Oz", "Wildcat", "Captain Speedy"],
    )
    shares = _shares()
    assert shares.scored(store, "oz", tmp_path) == [
        ("Wonderful Wizard of Oz", "term"),
        ("Great Wizard", "second"),
        ("Great Oz", "second"),
        ("Wildcat", "junk"),
        ("Captain Speedy", "second"),
    ]
    assert shares.share(store, "oz", tmp_path) == (5, 4, [])


def test_the_first_second_stands_for_a_first_no_longer_live(tmp_path: Path) -> None:
    """Without "Wonderful Wizard of Oz", "Great Wizard" is the Wizard's entry (a term) and
    "Great Oz" a second of it; "Monkey King" is the King's only entry; a reason naming no id
    ("read later: Andrew Speedy") keeps its verdict; a first held as an alias of another
    entry is live there, and the rejected or merged are not live."""
    (tmp_path / "oz.judge").write_text(READING, encoding="utf-8")
    store = _store(tmp_path / "b.db", ["Great Wizard", "Great Oz", "Monkey King", "Captain Speedy"])
    shares = _shares()
    assert shares.scored(store, "oz", tmp_path) == [
        ("Great Wizard", "term"),
        ("Great Oz", "second"),
        ("Monkey King", "term"),
        ("Captain Speedy", "second"),
    ]
    assert shares.share(store, "oz", tmp_path) == (4, 2, [])
    held = _store(
        tmp_path / "c.db",
        ["Wildcat", "Great Wizard", "Great Oz"],
        aliases={"Wildcat": ["Wonderful Wizard of Oz"]},
    )
    assert [verdict for _, verdict in shares.scored(held, "oz", tmp_path)] == [
        "junk",
        "second",
        "second",
    ]
    own = _store(
        tmp_path / "d.db",
        ["Great Oz", "Great Wizard"],
        aliases={"Great Oz": ["Wonderful Wizard of Oz"]},
    )
    assert [verdict for _, verdict in shares.scored(own, "oz", tmp_path)] == ["term", "second"]
    with GlossaryStore(own) as opened:
        first = opened.glossary.find_by_term("Great Oz")
        assert first is not None
        opened.glossary.update_entry(CURATOR, first.id, status="rejected")
    assert shares.scored(own, "oz", tmp_path) == [("Great Wizard", "term")]
