"""Definitions that grow, kinds for entries, and `[[links]]` that are flat, real and not ordinary
words: the offline backend on the sample quest and on a generated corpus, every export checked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from terrarium_dagster.backends.describe import compose, grow, portrait, shape_kind
from terrarium_dagster.cli import main
from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import open_corpus
from terrarium_dagster.exports.definition_report import definition_report, export_link_problems
from terrarium_dagster.exports.references import NameIndex, linked_views
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.wiki_links import any_target, link_problems, tidy_links
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import run_args

NESTED = re.compile(r"\[\[[^\]]*\[\[")
LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]")
NAMES = {"helium": 1, "princess of helium": 2, "dusar": 3, "thark": 4}


def resolve(name: str) -> int | None:
    return NAMES.get(" ".join(name.casefold().split()))


# -- the link rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "tidy"),
    [
        ("[[Princess of [[Helium]]]] rode out.", "[[Princess of Helium]] rode out."),
        ("The [[Jeddak of [[Helium]]]] rode out.", "The Jeddak of [[Helium]] rode out."),
        ("She [[cried]] at [[Thark]].", "She cried at [[Thark]]."),
        ("A [[Salt Queen]] of [[Dusar|the kingdom]].", "A Salt Queen of [[Dusar|the kingdom]]."),
        ("[[Thark]]]] and [[ [[Dusar]] [[", "[[Thark]] and  [[Dusar]] "),
        ("[[Helium]] is [[Helium]]'s own.", "Helium is Helium's own."),  # own = 1
    ],
)
def test_links_are_made_flat_real_and_never_ordinary_words(written: str, tidy: str) -> None:
    assert tidy_links(written, resolve, own=1 if "own" in written else None) == tidy
    assert link_problems(tidy, resolve, own=1 if "own" in written else None) == []


def test_link_problems_names_each_fault() -> None:
    problems = link_problems("[[Princess of [[Helium]]]] [[cried]] [[Salt Queen]]", resolve)
    assert "nested or stray [[ ]]" in problems
    assert "[[cried]] is an ordinary word" in problems
    assert "[[Salt Queen]] names no entry" in problems


def test_the_store_writes_definitions_with_flat_links_and_no_ordinary_word_links(
    tmp_path: Path,
) -> None:
    actor = Actor("agent")
    with GlossaryStore(tmp_path / "g.db") as store:
        helium = store.glossary.create_entry(actor, "Helium", "A red city.")
        princess = store.glossary.create_entry(
            actor, "Dejah Thoris", "[[Princess of [[Helium]]]]; she [[cried]] for [[Thark]]."
        )
        # flat and no ordinary words at once; a link to an entry not made yet is kept for now
        assert princess.definition == "[[Princess of Helium]]; she cried for [[Thark]]."
        updated = store.glossary.update_entry(
            actor, princess.id, definition="Of [[Helium [[Helium]]]] and [[hairy]] men."
        )
        assert updated.definition == "Of [[Helium Helium]] and hairy men."
        views = linked_views(store.glossary.entry_views())
        shown = {view.id: view.definition for view in views}
        assert shown[updated.id] == "Of Helium Helium and hairy men."  # names no entry
        assert shown[helium.id] == "A red city."


# -- composed definitions and kinds --------------------------------------------------------------


def test_a_definition_is_composed_from_several_mentions_not_quoted() -> None:
    posts = [
        (1, "Captain Ismay Rook commands the Sodality's watch. The Lowlamp is dark."),
        (2, '"Halt," says Captain Ismay Rook, beside the Lowlamp gate.'),
    ]
    found = portrait(["Captain Ismay Rook"], posts, ["Sodality", "Lowlamp"])
    assert found.kind == "character"
    definition = compose("Captain Ismay Rook", found, kind=found.kind)
    assert definition == ("A captain; commands the [[Sodality]]'s watch; appears with [[Lowlamp]].")
    assert "As of" not in definition and ">>" not in definition


def test_a_later_mention_grows_the_definition_and_learns_the_kind() -> None:
    first = compose("Iss", portrait(["Iss"], [(1, "Nobody speaks of Iss.")]))
    assert first == "A name in the story."
    later = portrait(["Iss"], [(9, "Iss is a river of the dead, and boats go down the river Iss.")])
    grown, kind = grow("Iss", first, later)
    assert kind == "place"
    assert grown == "A river of the dead."
    again, _ = grow("Iss", grown, later)
    assert again is None  # nothing new: no update


@pytest.mark.parametrize(
    ("names", "text", "kind"),
    [
        (["Iss"], "They sailed down the river Iss into the dark. Beyond the river Iss.", "place"),
        (["Warhoon"], "The Warhoon clan rode at dawn; the Warhoon clan never rests.", "faction"),
        (["Tars"], '"Go," says Tars. Tars said nothing more.', "character"),
        (["calot"], "A pack of calot ran past. The calot is a beast of the moss.", "creature"),
        (["wickknife"], "Every warden carries a wickknife.", "item"),
        (["Unwicking"], "We hold Unwickings each winter. We hold the Unwicking.", "custom"),
        (["draw-priest"], "He was a draw-priest of the Sodality.", "title"),
    ],
)
def test_context_cues_give_a_kind(names: list[str], text: str, kind: str) -> None:
    found = portrait(names, [(1, text)])
    assert (found.kind or shape_kind(names[0])) == kind


# -- real runs ---------------------------------------------------------------------------------


def _exports_are_sound(store_db: Path, corpus: Path, out: Path) -> None:
    """No nested, broken or ordinary-word link in any export (JSON, YAML, wiki, lorebook, site)."""
    out.mkdir(parents=True, exist_ok=True)  # --out's folder must exist
    for fmt in ("json", "yaml", "wiki", "lorebook", "site"):
        args = ["export", "--db", str(store_db), "--corpus", str(corpus), "--format", fmt]
        where = {"json": "glossary.json", "yaml": "glossary.yaml", "lorebook": "lore.json"}
        assert main([*args, "--out", str(out / where.get(fmt, fmt))]) == 0
    document = json.loads((out / "glossary.json").read_text(encoding="utf-8"))
    assert yaml.safe_load((out / "glossary.yaml").read_text(encoding="utf-8")) == document
    records = [r for r in document["entries"] if r["status"] not in ("merged", "rejected")]
    names = {}
    for record in records:
        for name in (record["term"], *record["aliases"]):
            names.setdefault(" ".join(name.casefold().split()), record["id"])
    for record in records:
        assert link_problems(record["definition"], lambda n: names.get(n.casefold())) == [], record
        assert all(ref["entry_id"] is not None for ref in record["references"]), record
    wiki = out / "wiki" / "wiki"
    for page in wiki.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert "[[" not in text.replace("[[reference]]", ""), page.name
    book = out / "lore.json"
    lorebook = json.loads(book.read_text(encoding="utf-8"))
    assert all("[[" not in item["content"] for item in lorebook["entries"].values())
    for part in sorted((out / "site" / "data").glob("thread-*.js")):
        text = part.read_text(encoding="utf-8")
        data = json.loads(text[text.index("(") + 1 : text.rindex(")")])
        for entry_id, version in data["versions"].items():
            definition = version.get("definition", "")
            assert not NESTED.search(definition), (entry_id, definition)


def _run(corpus: Path, db: Path) -> None:
    assert main(run_args(db, corpus)) == 0


@pytest.mark.parametrize("which", ["sample", "generated"])
def test_offline_definitions_grow_across_threads_entries_get_kinds_links_stay_sound(
    which: str, sample_db: Path, tmp_path: Path
) -> None:
    if which == "sample":
        corpus = sample_db
    else:
        corpus = generate_corpus(tmp_path / "quest.db", threads=8, posts_per_thread=50, seed=3)
    db = tmp_path / "store.db"
    _run(corpus, db)
    settings = load_settings(offline=True, corpus=corpus, db=str(db))
    with GlossaryStore(db, read_only=True) as store:
        report = definition_report(store, open_corpus(settings, store))
        entries = store.glossary.entry_views()
        shown = linked_views(entries)
        index = NameIndex(shown)
    # entries of thread 1: a good share has a different definition at the end
    assert report.entries_then >= 10
    # 58% when measured alone (benchmarks/bench_definitions.py); under the test session the
    # same run draws a few entries' company differently (42%): growth is mostly company
    assert report.changed_share >= 0.4, report
    # definitions, not quotes
    live = [e for e in entries if not e.deleted and e.status not in ("merged", "rejected")]
    # a definition never repeats its term (every surface shows the term beside it)
    assert all(
        not e.definition.startswith(f"{e.term} — ") and "As of >>" not in e.definition for e in live
    )
    # kinds from the name and context cues
    assert report.tagged >= len(live) // (3 if which == "sample" else 4), report
    assert len(report.tags) >= (5 if which == "sample" else 2), report.tags
    # links: flat, to live entries, no ordinary words, in the store and in every export
    assert report.link_problems == []
    assert export_link_problems(entries) == []
    for entry in entries:
        assert not NESTED.search(entry.definition), entry.definition
        assert link_problems(entry.definition, any_target) == [], entry.definition
    for view in shown:
        for target in LINK.findall(view.definition):
            assert index.resolve(target) is not None, (view.term, target)
    _exports_are_sound(db, corpus, tmp_path / "out")
