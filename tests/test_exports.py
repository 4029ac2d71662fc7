"""Exports (JSON, YAML, wiki with HTML) and the glossary checks, from a real store and corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import InputError
from terrarium_dagster.exports import build_export, export_wiki, run_checks
from terrarium_dagster.exports.wiki import slugify
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView, Provenance
from tests.support.glossary_fixtures import T1, T2, agent, src

pytest_plugins = ["tests.support.glossary_fixtures"]


def by_term(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {record["term"]: record for record in document["entries"]}


def all_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# -- JSON and YAML -------------------------------------------------------------------------------


def test_json_export_carries_every_field(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path
) -> None:
    report = build_export(store, corpus, tmp_path / "out", formats=("json",))
    assert report.files == ["glossary.json"]
    document = json.loads((tmp_path / "out" / "glossary.json").read_text(encoding="utf-8"))
    meta = document["meta"]
    assert meta["corpus"] == "quest.db"
    assert meta["as_of_thread"] is None
    assert meta["entry_count"] == len(document["entries"]) == 7
    assert meta["generated_by"].startswith("terrarium-dagster")
    terms = [record["normalized_term"] for record in document["entries"]]
    assert terms == sorted(terms)
    tithe = by_term(document)["Ember Tithe"]
    assert tithe["id"] == ids["tithe"]
    assert tithe["normalized_term"] == "ember tithe"
    assert tithe["aliases"] == ["Tithe of Embers"]
    assert tithe["status"] == "tentative" and tithe["tags"] == ["custom"]
    assert tithe["first_seen"] == {
        "post_id": 102,
        "thread_id": 100,
        "ref": "100#102",
        "url": "https://quest.example/test/100#102",
    }
    assert tithe["last_seen"]["ref"] == "200#200"
    assert tithe["merged_into"] is None
    assert tithe["references"] == [
        {"target": "Ashen Guard", "label": None, "entry_id": ids["guard"]}
    ]
    sources = {source["ref"]: source for source in tithe["sources"]}
    assert set(sources) == {"100#102", "100#103", "100#104", "200#200"}
    assert sources["100#102"]["quote"] == "The Ember Tithe is due"
    assert sources["100#102"]["thread_title"] == "The Ember Road"
    assert sources["200#200"]["url"] == "https://quest.example/test/200#200"
    merged = by_term(document)["Tithe of Embers"]
    assert (merged["status"], merged["merged_into"], merged["sources"]) == (
        "merged",
        ids["tithe"],
        [],
    )
    kethra = by_term(document)["Keth'ra"]
    # an export links only to entries it carries: "[[Salt Queen]]" names none, so it is text
    assert kethra["references"] == [
        {"target": "Tithe of Embers", "label": None, "entry_id": ids["tithe"]},
    ]
    assert "Salt Queen" in kethra["definition"] and "[[Salt Queen]]" not in kethra["definition"]
    assert by_term(document)["Door"]["status"] == "rejected"


def test_yaml_export_loads_to_the_same_data_as_json(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path
) -> None:
    build_export(store, corpus, tmp_path / "out", formats=("json", "yaml"))
    from_json = json.loads((tmp_path / "out" / "glossary.json").read_text(encoding="utf-8"))
    from_yaml = yaml.safe_load((tmp_path / "out" / "glossary.yaml").read_text(encoding="utf-8"))
    assert from_yaml == from_json


def test_export_bytes_are_stable_for_the_same_glossary(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path
) -> None:
    build_export(store, corpus, tmp_path / "a")
    build_export(store, corpus, tmp_path / "b")
    first, second = all_files(tmp_path / "a"), all_files(tmp_path / "b")
    assert first == second
    assert "glossary.json" in first and "wiki/html/index.html" in first


def test_single_file_target_for_one_format(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path
) -> None:
    report = build_export(store, corpus, tmp_path / "g.yaml", formats=("yaml",))
    assert report.files == ["g.yaml"]
    assert yaml.safe_load((tmp_path / "g.yaml").read_text(encoding="utf-8"))["meta"]


def test_unknown_format_is_an_input_error(
    store: GlossaryStore, corpus: Corpus, tmp_path: Path
) -> None:
    with pytest.raises(InputError, match="unknown export format pdf"):
        build_export(store, corpus, tmp_path / "out", formats=("pdf",))
    assert not (tmp_path / "out").exists()


# -- as of a thread ------------------------------------------------------------------------------


def test_as_of_thread_excludes_later_entries_definitions_and_sources(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path
) -> None:
    report = build_export(store, corpus, tmp_path / "out", as_of_thread=T1)
    assert report.as_of_thread == T1
    document = json.loads((tmp_path / "out" / "glossary.json").read_text(encoding="utf-8"))
    assert document["meta"]["as_of_thread"] == T1
    records = by_term(document)
    assert "Ash Fields" not in records
    tithe = records["Ember Tithe"]
    assert "Doubled" not in tithe["definition"]
    assert {s["thread_id"] for s in tithe["sources"]} == {T1}
    assert tithe["last_seen"]["ref"] == "100#104"
    wiki = tmp_path / "out" / "wiki"
    assert not (wiki / "ash-fields.md").exists()
    every_page = "".join(p.read_text(encoding="utf-8") for p in wiki.rglob("*.*"))
    assert "Ash Fields" not in every_page and "200#200" not in every_page


def test_as_of_unfinished_thread_is_an_input_error(
    store: GlossaryStore, corpus: Corpus, tmp_path: Path
) -> None:
    with pytest.raises(InputError, match="has not finished"):
        build_export(store, corpus, tmp_path / "out", as_of_thread=T2)


# -- the wiki ------------------------------------------------------------------------------------


@pytest.fixture
def wiki(store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path) -> Path:
    build_export(store, corpus, tmp_path / "out", formats=("wiki",))
    return tmp_path / "out" / "wiki"


def page(wiki: Path, slug: str) -> str:
    return (wiki / f"{slug}.md").read_text(encoding="utf-8")


def test_wiki_page_resolves_links_by_term_alias_and_label(wiki: Path) -> None:
    tithe = page(wiki, "ember-tithe")
    assert tithe.startswith("# Ember Tithe\n")
    assert "[Ashen Guard](ashen-guard.md)" in tithe
    assert "**Also known as:** Tithe of Embers" in tithe
    assert "**Status:** tentative" in tithe and "[custom](index.md#custom)" in tithe
    assert "- [100#102](https://quest.example/test/100#102) (thread “The Ember Road”): " in tithe
    assert "“The Ember Tithe is due”" in tithe
    assert "**First seen:** [100#102](" in tithe
    assert "**Last seen:** [200#200](https://quest.example/test/200#200)" in tithe
    kethra = page(wiki, "keth-ra")
    assert "[Tithe of Embers](ember-tithe.md)" in kethra  # a merged name redirects


def test_wiki_lists_unresolved_references_as_plain_text(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int], tmp_path: Path
) -> None:
    report = build_export(store, corpus, tmp_path / "out", formats=("wiki",))
    wiki = tmp_path / "out" / "wiki"
    assert report.unresolved_references == [f"[[Salt Queen]] on E{ids['kethra']} Keth'ra"]
    assert "serves the Salt Queen." in page(wiki, "keth-ra")
    assert "[[" not in page(wiki, "keth-ra")
    assert "“Salt Queen” on [Keth'ra](keth-ra.md)" in page(wiki, "unresolved")


def test_wiki_backlinks_by_reference_and_by_mention(wiki: Path) -> None:
    guard = page(wiki, "ashen-guard")
    assert "## Linked from\n\n- [Ember Tithe](ember-tithe.md)" in guard
    tithe = page(wiki, "ember-tithe")
    linked = tithe.split("## Linked from")[1].split("##")[0]
    assert "[Keth'ra](keth-ra.md)" in linked  # [[Tithe of Embers]] -> merged into Ember Tithe
    mentioned = tithe.split("## Mentioned in")[1].split("---")[0]
    assert "[Ashen Guard](ashen-guard.md)" in mentioned  # plain "Ember Tithe" in its definition


def test_wiki_index_by_tag_untagged_and_a_to_z(wiki: Path) -> None:
    index = page(wiki, "index")
    by_tag = index.split("## By tag")[1].split("## A–Z")[0]
    headings = re.findall(r"^### (.+)$", by_tag, flags=re.MULTILINE)
    assert headings == ["character", "custom", "faction", "place", "Untagged"]
    untagged = by_tag.split("### Untagged")[1]
    assert "[Caravan](caravan.md)" in untagged
    a_to_z = index.split("## A–Z")[1]
    assert re.findall(r"^### (.+)$", a_to_z, flags=re.MULTILINE)[:4] == ["A", "C", "E", "K"]
    assert "[Door]" not in index  # rejected entries have no page
    assert "- [Tithe of Embers](tithe-of-embers.md) → [Ember Tithe](ember-tithe.md)" in index


def test_wiki_redirect_page_for_merged_entry_and_no_page_for_rejected(wiki: Path) -> None:
    assert "Merged into [Ember Tithe](ember-tithe.md)." in page(wiki, "tithe-of-embers")
    redirect = (wiki / "html" / "tithe-of-embers.html").read_text(encoding="utf-8")
    assert '<meta http-equiv="refresh" content="0; url=ember-tithe.html">' in redirect
    assert not (wiki / "door.md").exists()


def test_wiki_html_pages_exist_and_every_link_resolves(wiki: Path) -> None:
    markdown_pages = {p.stem for p in wiki.glob("*.md")}
    html_pages = {p.stem for p in (wiki / "html").glob("*.html")}
    assert markdown_pages == html_pages
    for path in (wiki / "html").glob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>") and "<style>" in text
        assert '<nav><a href="index.html">' in text
        assert "<link " not in text and "<script" not in text  # no external assets
        for href in re.findall(r'href="([^"]+)"', text):
            if href.startswith("https://"):
                continue
            target, _, anchor = href.partition("#")
            assert target.endswith(".html"), (path.name, href)
            assert (wiki / "html" / target).is_file(), (path.name, href)
            if anchor:
                linked = (wiki / "html" / target).read_text(encoding="utf-8")
                assert f'id="{anchor}"' in linked, (path.name, href)
    tithe = (wiki / "html" / "ember-tithe.html").read_text(encoding="utf-8")
    assert '<a href="ashen-guard.html">Ashen Guard</a>' in tithe
    assert '<h1 id="ember-tithe">Ember Tithe</h1>' in tithe


def view(entry_id: int, term: str, definition: str = "", **extra: Any) -> EntryView:
    from terrarium_dagster.store.normalize import normalize_term

    provenance = [
        Provenance(id=entry_id, entry_id=entry_id, post_id=1, thread_id=1, quote="", revision_id=1)
    ]
    return EntryView(
        id=entry_id,
        term=term,
        norm_term=normalize_term(term),
        definition=definition,
        status=extra.pop("status", "confirmed"),
        provenance=provenance,
        **extra,
    )


def test_wiki_slugs_are_collision_safe(tmp_path: Path) -> None:
    entries = [view(1, "Keth'ra"), view(2, "Keth Ra"), view(3, "Index"), view(4, "???")]
    report = export_wiki(entries, tmp_path / "wiki", html=False)
    # "keth ra" sorts before "keth'ra": the first in term order keeps the plain slug
    assert report.pages == {2: "keth-ra", 1: "keth-ra-1", 3: "index-3", 4: "entry"}
    assert {p.name for p in (tmp_path / "wiki").iterdir()} == {
        "keth-ra.md",
        "keth-ra-1.md",
        "index-3.md",
        "entry.md",
        "index.md",
        "unresolved.md",
    }
    assert slugify("Élan’s  Forge") == "elan-s-forge"
    assert slugify("Ærendil") == "ærendil"  # letters without an ASCII form are kept


def test_wiki_html_escapes_raw_html_from_definitions(tmp_path: Path) -> None:
    entries = [view(1, "Trap", "A <script>alert(1)</script> and [x](javascript:alert(2)).")]
    export_wiki(entries, tmp_path / "wiki")
    html = (tmp_path / "wiki" / "html" / "trap.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html


def test_failed_wiki_export_leaves_the_previous_one_intact(tmp_path: Path) -> None:
    target = tmp_path / "wiki"
    export_wiki([view(1, "Ember Tithe", "A toll.")], target)
    before = all_files(target)

    def broken_url(_thread_id: int, _post_id: int, _quote: str | None = None) -> str | None:
        raise RuntimeError("template exploded")

    with pytest.raises(RuntimeError, match="template exploded"):
        export_wiki([view(1, "Ember Tithe", "A new toll.")], target, url_for_post=broken_url)
    assert all_files(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wiki"]


# -- checks --------------------------------------------------------------------------------------


def test_checks_pass_on_a_clean_glossary(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    store.glossary.create_entry(
        agent(T2), "Salt Queen", "A ruler.", provenance=[src(201, thread_id=T2)]
    )
    results = run_checks(store.glossary.entry_views(), corpus)
    assert {name: result.passed for name, result in results.items()} == {
        "sources": True,
        "unique_names": True,
        "references": True,
        "provenance_posts": True,
        "sources_unchanged": True,
    }


def test_checks_fail_with_details_on_a_corrupted_glossary(
    store: GlossaryStore, corpus: Corpus, ids: dict[str, int]
) -> None:
    orphan = store.glossary.create_entry(agent(T2), "Orphan", "No source at all.")
    revision = store.history.last_revision_id()
    with store.transaction():
        store.conn.execute(
            "INSERT INTO alias (entry_id, alias, norm_alias, deleted) "
            "VALUES (?, 'Ember Tithe', 'ember tithe', 0)",
            (ids["kethra"],),
        )
        store.conn.executemany(
            "INSERT INTO provenance (entry_id, post_id, thread_id, quote, revision_id) "
            "VALUES (?, ?, ?, '', ?)",
            [(ids["guard"], 99999, T1, revision), (ids["guard"], 200, T1, revision)],
        )
    results = run_checks(store.glossary.entry_views(), corpus)
    assert not any(result.passed for name, result in results.items() if name != "sources_unchanged")
    assert results["sources"].details["entries"] == [
        {"id": orphan.id, "term": "Orphan", "status": "tentative"}
    ]
    assert results["unique_names"].details["clashes"] == [
        {
            "name": "ember tithe",
            "entries": [
                {"id": ids["tithe"], "term": "Ember Tithe"},
                {"id": ids["kethra"], "term": "Keth'ra"},
            ],
        }
    ]
    assert results["references"].details["references"] == [
        {"entry_id": ids["kethra"], "term": "Keth'ra", "target": "Salt Queen"}
    ]
    assert results["provenance_posts"].details["rows"] == [
        {"entry_id": ids["guard"], "ref": "100#200", "problem": "post is in thread 200"},
        {"entry_id": ids["guard"], "ref": "100#99999", "problem": "no such post"},
    ]
    assert "Orphan" in results["sources"].description


def test_a_reference_to_a_name_the_curator_rejected_is_no_unresolved_reference() -> None:
    """A definition written before the curator rejected the name it links ("appears with
    [[Thark]]", Thark rejected at the chapter's end) is shown as plain text by every export: the
    check lists it apart and passes (every offline book's glossary warned of it), while a name
    that is no entry at all still fails it."""
    from terrarium_dagster.exports.glossary_checks import check_references

    views = [
        view(1, "Sarkoja", "A Thark woman; appears with [[Thark]], [[Sola]]."),
        view(2, "Sola", "A young woman."),
        view(3, "Thark", status="rejected"),
    ]
    passed = check_references(views)
    assert passed.passed and "1 name a rejected entry" in passed.description
    assert passed.details["unresolved"] == 0 and passed.details["to_rejected"] == 1
    assert passed.details["rejected_references"] == [
        {"entry_id": 1, "term": "Sarkoja", "target": "Thark"}
    ]
    views[1] = view(2, "Sola", "A young woman; appears with [[Warhoon]].")
    failed = check_references(views)
    assert not failed.passed and "[[Warhoon]] on E2" in failed.description


def test_the_wiki_lists_references_to_rejected_names_apart_from_unresolved_ones(
    tmp_path: Path,
) -> None:
    """The wiki's unresolved page says what the check says: a link to a name the curator
    rejected is listed under its own heading, not as an unresolved reference, and the index
    links the page only for references that name nothing."""
    views = [
        view(1, "Sarkoja", "A Thark woman; appears with [[Thark]], [[Sola]]."),
        view(2, "Sola", "A young woman."),
        view(3, "Thark", status="rejected"),
    ]
    report = export_wiki(views, tmp_path / "wiki", html=False)
    assert report.unresolved == []
    unresolved = (tmp_path / "wiki" / "unresolved.md").read_text(encoding="utf-8")
    head, rejected = unresolved.split("## Names the curator rejected")
    assert "Every [[reference]] in the glossary resolves to an entry." in head
    assert "Thark" not in head and "“Thark” on [Sarkoja](sarkoja.md)" in rejected
    assert "unresolved" not in (tmp_path / "wiki" / "index.md").read_text(encoding="utf-8")

    views[1] = view(2, "Sola", "A young woman; appears with [[Warhoon]].")
    report = export_wiki(views, tmp_path / "wiki", html=False)
    assert [item.target for item in report.unresolved] == ["Warhoon"]
    unresolved = (tmp_path / "wiki" / "unresolved.md").read_text(encoding="utf-8")
    head, rejected = unresolved.split("## Names the curator rejected")
    assert "“Warhoon” on [Sola](sola.md)" in head and "Warhoon" not in rejected
    assert "[1 unresolved reference](unresolved.md)" in (tmp_path / "wiki" / "index.md").read_text(
        encoding="utf-8"
    )


def test_a_definitions_post_citations_are_links_on_its_page_and_gone_from_the_index() -> None:
    """A definition citing its post (a curator's REVISE writes "(>>12)") showed "&gt;&gt;12"
    as text on its wiki page, a forum number even in a book, while the reader's site links it
    ("¶3" in a book) and the page's edition was linked: the definition's citations of the
    entry's sources are links now, as the edition's, and the index's one line drops them."""
    from terrarium_dagster.exports.wiki import render_wiki

    source = Provenance(id=1, entry_id=1, post_id=12, thread_id=10, quote="", revision_id=1)
    entry = view(1, "Orrin Vale", "The keeper of the Greywatch (>>12); met Idris >>12, >>12.")
    entry = entry.model_copy(update={"provenance": [source]})
    for book, label in (
        (True, '[¶3](/post/12 "Chapter I, paragraph 3")'),
        (False, "[&gt;&gt;12](/post/12)"),
    ):
        _report, files = render_wiki(
            [entry],
            url_for_post=lambda _thread, post, _quote=None: f"/post/{post}",
            thread_titles={10: "Chapter I"},
            book=book,
            html=False,
        )
        page = files["orrin-vale.md"].text()
        assert f"The keeper of the Greywatch ({label}); met Idris {label}, {label}." in page
        index = files["index.md"].text()
        assert "— The keeper of the Greywatch; met Idris." in index
        assert "&gt;" not in index and ">>" not in index
