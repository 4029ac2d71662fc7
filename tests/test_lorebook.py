"""`terrarium export --format lorebook`: a SillyTavern World Info file, as of a thread."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import story_name
from terrarium_dagster.exports.lorebook import lore_content, lorebook, plain_definition
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView

NUMBER = (int, float)
MAYBE_NUMBER = (int, float, type(None))
MAYBE_BOOL = (bool, type(None))
# SillyTavern's World Info entry as its new-entry template defines it (`newWorldInfoEntryDefinition`
# in public/scripts/world-info.js; the World Info page of its docs): each field and the JSON
# types it takes. `uid` and `displayIndex` are the book's, `extensions` a free object.
ST_ENTRY_FIELDS: dict[str, Any] = {
    "key": list, "keysecondary": list, "comment": str, "content": str, "constant": bool,
    "vectorized": bool, "selective": bool, "selectiveLogic": int, "addMemo": bool,
    "order": NUMBER, "position": int, "disable": bool, "ignoreBudget": bool,
    "excludeRecursion": bool, "preventRecursion": bool, "matchPersonaDescription": bool,
    "matchCharacterDescription": bool, "matchCharacterPersonality": bool,
    "matchCharacterDepthPrompt": bool, "matchScenario": bool, "matchCreatorNotes": bool,
    "delayUntilRecursion": NUMBER, "probability": NUMBER, "useProbability": bool,
    "depth": NUMBER, "outletName": str, "group": str, "groupOverride": bool,
    "groupWeight": NUMBER, "scanDepth": MAYBE_NUMBER, "caseSensitive": MAYBE_BOOL,
    "matchWholeWords": MAYBE_BOOL, "useGroupScoring": MAYBE_BOOL, "automationId": str,
    "role": int, "sticky": MAYBE_NUMBER, "cooldown": MAYBE_NUMBER, "delay": MAYBE_NUMBER,
    "triggers": list, "uid": int, "displayIndex": int, "extensions": dict,
}  # fmt: skip


def _book(path: Path) -> tuple[Path, dict[str, Any]]:
    return path, json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def store(offline_sample_store: Path, tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    shutil.copyfile(offline_sample_store, db)
    return db


def test_the_lorebook_has_one_entry_per_live_term_keyed_by_term_and_aliases(
    store: Path, sample_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "lore" / "world.json"  # --out is the file, in a folder that exists
    out.parent.mkdir()
    args = ["export", "--format", "lorebook", "--out", str(out), "--db", str(store)]
    assert main([*args, "--corpus", str(sample_db)]) == 0
    assert main([*args, "--corpus", str(sample_db)]) == 0  # again: the same file, replaced
    assert [path.name for path in out.parent.iterdir()] == ["world.json"]
    _path, book = _book(out)
    with Corpus(sample_db) as corpus:
        story = story_name(corpus)
    assert book["name"] == story  # the world's name
    assert isinstance(book["entries"], dict) and book["entries"]
    with GlossaryStore(store) as glossary:
        live = [e for e in glossary.glossary.entries() if e.status not in ("rejected", "merged")]
    terms = {entry["comment"] for entry in book["entries"].values()}
    assert terms <= {e.term for e in live} and len(terms) >= 0.8 * len(live)
    for uid, entry in book["entries"].items():
        assert entry["uid"] == int(uid)
        assert entry["key"] and "[[" not in entry["content"] and entry["content"]


def test_a_lorebook_as_of_a_thread_holds_nothing_from_later_threads(
    store: Path, sample_db: Path, tmp_path: Path
) -> None:
    with Corpus(sample_db) as corpus:
        first = corpus.threads()[0]
    out = tmp_path / "lore.json"
    args = ["export", "--format", "lorebook", "--out", str(out), "--db", str(store)]
    assert main([*args, "--corpus", str(sample_db), "--as-of-thread", first.key]) == 0
    _path, book = _book(out)
    with GlossaryStore(store) as glossary:
        then = {view.term for view in glossary.history.glossary_as_of_thread(first.id)}
        now = {entry.term for entry in glossary.glossary.entries()}
    terms = {entry["comment"] for entry in book["entries"].values()}
    assert terms <= then and terms < now


def test_links_become_plain_names() -> None:
    text = "Keeper of the [[Ninefold Lantern]] in [[Orrowmere|the lake city]]."
    assert plain_definition(text) == "Keeper of the Ninefold Lantern in the lake city."


def _activated(book: dict[str, Any], text: str) -> set[str]:
    """Which entries SillyTavern's World Info would insert for `text`, as its docs describe the
    scan: keys matched case-insensitively unless the entry says `caseSensitive` (whole words
    when `matchWholeWords`, a key of several words as a phrase), then recursion: the inserted
    contents are scanned again, except those of entries with `preventRecursion`, and entries
    with `excludeRecursion` are not activated so."""
    entries = book["entries"]

    def fires(entry: dict[str, Any], haystack: str) -> bool:
        exact = entry["caseSensitive"] is True  # else the global setting: off by default
        lowered = haystack if exact else haystack.lower()
        for key in entry["key"]:
            needle = key if exact else key.lower()
            if entry["matchWholeWords"] and len(needle.split()) == 1:
                if re.search(rf"(?:^|\W){re.escape(needle)}(?:$|\W)", lowered):
                    return True
            elif needle in lowered:
                return True
        return False

    active = {uid for uid, entry in entries.items() if fires(entry, text)}
    frontier = set(active)
    for _step in range(20):  # SillyTavern's recursion, with its default on
        scanned = " ".join(
            entries[uid]["content"] for uid in frontier if not entries[uid]["preventRecursion"]
        )
        frontier = {
            uid
            for uid, entry in entries.items()
            if uid not in active and not entry["excludeRecursion"] and fires(entry, scanned)
        }
        if not frontier:
            break
        active |= frontier
    return active


def test_the_lorebook_is_a_sillytavern_world_that_helps_a_chat_instead_of_flooding_it(
    store: Path, sample_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "lore.json"
    args = ["export", "--format", "lorebook", "--out", str(out), "--db", str(store)]
    assert main([*args, "--corpus", str(sample_db)]) == 0
    _path, book = _book(out)
    entries = book["entries"]
    for entry in entries.values():  # every field of SillyTavern's entry, of its type
        assert set(entry) == set(ST_ENTRY_FIELDS), set(entry) ^ set(ST_ENTRY_FIELDS)
        for name, kinds in ST_ENTRY_FIELDS.items():
            assert isinstance(entry[name], kinds), (name, entry[name])
        assert entry["matchWholeWords"] is True and entry["preventRecursion"] is True
        assert "appears with" not in entry["content"], entry["content"]
    # The most mentioned first: uids, the editor's order and `order` all agree.
    ranked = sorted(entries.values(), key=lambda e: e["uid"])
    counts = [e["extensions"]["terrarium"]["mentions"] for e in ranked]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    assert [e["order"] for e in ranked] == sorted((e["order"] for e in ranked), reverse=True)
    assert [e["displayIndex"] for e in ranked] == [e["uid"] for e in ranked]

    # A message naming four entries inserts those four, recursion on (SillyTavern's default).
    four = ranked[:4]
    message = "Tonight " + ", ".join(e["key"][0] for e in four) + " met at the gate."
    assert _activated(book, message) == {str(e["uid"]) for e in four}
    # The whole definitions (with their company lists) and recursion left to the defaults
    # would pull in many more: what the book is guarded against.
    with GlossaryStore(store) as glossary:
        definitions = {e.id: e.definition for e in glossary.glossary.entries()}
    unguarded = {
        "entries": {
            uid: {
                **entry,
                "preventRecursion": False,
                "content": plain_definition(
                    definitions[entry["extensions"]["terrarium"]["entry_id"]]
                ),
            }
            for uid, entry in entries.items()
        }
    }
    assert len(_activated(unguarded, message)) > 2 * len(four)
    # Keys are whole words: a short name does not fire inside another word, and no key is a
    # common English word.
    for entry in entries.values():
        for key in entry["key"]:
            if len(key.split()) == 1:
                assert not _activated({"entries": {"0": entry}}, f"un{key.lower()}ed re{key}s")
    prose = (
        "She always withdrew to the scarlet door and would miss the evening bells; "
        "evidently the earthly work of the day was done, and she could rest."
    )
    assert _activated(book, prose) == set()


def test_lore_content_drops_the_company_list() -> None:
    text = "Saxirn — a place; so named by the ferrymen; appears with [[Silent Host]], [[Surhold]]."
    assert lore_content(text) == "Saxirn — a place; so named by the ferrymen."
    assert lore_content("Surhold — a place; appears with [[Saxirn]].") == "Surhold — a place."
    assert lore_content("A [[Lowlamp]] lantern. It appears with the tide.") == (
        "A Lowlamp lantern. It appears with the tide."
    )


def _view(entry_id: int, term: str, *aliases: str) -> EntryView:
    return EntryView(
        id=entry_id,
        term=term,
        norm_term=term.lower(),
        definition=f"{term} of the story.",
        status="confirmed",
        aliases=list(aliases),
    )


def test_a_name_that_is_a_common_word_is_a_key_matched_as_written() -> None:
    """The Wonderful Wizard of Oz offline: "Dorothy", "Toto" and "Scarecrow" were left out of
    the book (each a word English knows, Zipf 3.1 to 3.8, and no other name), and "Darcy" and
    "Lydia" lost their keys in Pride and Prejudice, so a chat naming them fired nothing. A
    capitalised name is a key now, matched case-sensitively; an ordinary lowercase word, a word
    that opens sentences, a title alone and the most frequent words are still no keys."""
    views = [
        _view(1, "Dorothy"),
        _view(2, "Scarecrow"),
        _view(3, "Darcy", "Mr. Darcy"),
        _view(4, "Well", "Lord"),
        _view(5, "scarlet"),
        _view(6, "Will"),
        _view(7, "Ninefold Lantern"),
    ]
    book = lorebook(views, name="Oz", description="")
    keys = {entry["comment"]: entry["key"] for entry in book["entries"].values()}
    assert keys == {
        "Dorothy": ["Dorothy"],
        "Scarecrow": ["Scarecrow"],
        "Darcy": ["Darcy", "Mr. Darcy"],
        "Ninefold Lantern": ["Ninefold Lantern"],
    }
    sensitive = {e["comment"]: e["caseSensitive"] for e in book["entries"].values()}
    assert sensitive == {
        "Dorothy": True,
        "Scarecrow": True,
        "Darcy": True,
        "Ninefold Lantern": None,  # no common word among its keys: SillyTavern's setting
    }
    uid = {entry["comment"]: uid for uid, entry in book["entries"].items()}
    said = "The Scarecrow bowed to Dorothy, and Darcy smiled."
    assert _activated(book, said) == {uid["Scarecrow"], uid["Dorothy"], uid["Darcy"]}
    prose = "A scarecrow stood in the field; well, the darcy of it all was scarlet and still."
    assert _activated(book, prose) == set()


def test_a_name_with_an_apostrophe_fires_as_typed_and_as_printed() -> None:
    """Frankenstein offline: "Plutarch’s Lives" (the book's curly apostrophe) was the entry's
    only key, and SillyTavern matches keys letter for letter, so a chat typing "Plutarch's
    Lives" never fired it (nor the sample quest's "Dakh'ren" a reply writing "Dakh’ren")."""
    book = lorebook(
        [_view(1, "Plutarch’s Lives"), _view(2, "Dakh'ren", "Oru’vael")], name="F", description=""
    )
    keys = {entry["comment"]: entry["key"] for entry in book["entries"].values()}
    assert keys == {
        "Plutarch’s Lives": ["Plutarch’s Lives", "Plutarch's Lives"],
        "Dakh'ren": ["Dakh'ren", "Dakh’ren", "Oru’vael", "Oru'vael"],
    }
    uid = {entry["comment"]: uid for uid, entry in book["entries"].items()}
    assert _activated(book, "I read Plutarch's Lives.") == {uid["Plutarch’s Lives"]}
    assert _activated(book, "Dakh’ren nodded.") == {uid["Dakh'ren"]}
    assert _activated(book, "Oru'vael laughed.") == {uid["Dakh'ren"]}


def test_post_citations_are_not_lore() -> None:
    """A definition citing its posts ("(>>12)", a curator's REVISE) put ">>12" into the chat's
    prompt: a post number means nothing there, and the edition's were already dropped."""
    assert lore_content("The keeper of the Greywatch (>>12); met Idris >>12, >>40.") == (
        "The keeper of the Greywatch; met Idris."
    )
    assert lore_content("A smith (>>3, >>7). Lives in Hathe >>9.") == "A smith. Lives in Hathe."
