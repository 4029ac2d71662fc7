"""`build_export`: the glossary (now, or as of the end of a thread) as JSON, YAML and a wiki.

Layout of ``out_dir``::

    glossary.json        format "json"
    glossary.yaml        format "yaml"
    lorebook.json        format "lorebook": a SillyTavern World Info file
    wiki/                format "wiki": Markdown pages, wiki/html/ the same pages as HTML

When ``out_dir`` ends in ``.json`` (or ``.yaml``/``.yml``) and that is the only format asked,
the export is written to that file instead. Files are replaced atomically (a temporary file or
folder beside the target, then renamed), so a failed export leaves the previous one intact.

As of a thread, the glossary is `GlossaryStore.glossary_as_of_thread`: entries, definitions,
aliases and sources as they stood at the end of that thread; nothing from later threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import InputError
from terrarium_dagster.exports.data import export_json, export_yaml
from terrarium_dagster.exports.lorebook import LOREBOOK_FILE, export_lorebook
from terrarium_dagster.exports.references import unresolved_references
from terrarium_dagster.exports.wiki import export_wiki
from terrarium_dagster.glossary.models import EntryView
from terrarium_dagster.glossary.store import GlossaryStore
from terrarium_dagster.reports import ExportReport

FORMATS: tuple[str, ...] = ("json", "yaml", "wiki", "lorebook")
JSON_FILE = "glossary.json"
YAML_FILE = "glossary.yaml"
WIKI_DIR = "wiki"


def generator_name() -> str:
    try:
        return f"terrarium-dagster {metadata.version('terrarium-dagster')}"
    except metadata.PackageNotFoundError:
        return "terrarium-dagster"


def _glossary(
    store: GlossaryStore, corpus: Corpus, as_of_thread: int | None
) -> tuple[list[EntryView], dict[str, Any], str]:
    if as_of_thread is None:
        revision = store.glossary.last_revision_id()
        meta: dict[str, Any] = {"as_of_thread": None, "as_of_thread_key": None}
        subtitle = "The current glossary."
        entries = store.glossary.entry_views()
    else:
        thread = corpus.thread(as_of_thread)
        state = store.progress.thread_state(as_of_thread)
        if state is None or state.end_revision_id is None:
            status = state.status if state else "never annotated"
            raise InputError(
                f"thread {thread.key} has not finished annotation ({status}); there is no "
                "glossary as of its end to export"
            )
        revision = state.end_revision_id
        meta = {"as_of_thread": thread.id, "as_of_thread_key": thread.key}
        subtitle = f"As of the end of thread {thread.key}: {thread.title}."
        entries = store.glossary.glossary_as_of_thread(as_of_thread)
    meta.update(
        corpus=corpus.path.name,
        generated_by=generator_name(),
        revision=revision,
        url_template=corpus.url_template,
    )
    return entries, meta, subtitle


def _single_file(out_dir: Path, formats: Sequence[str]) -> bool:
    suffixes = {"json": (".json",), "yaml": (".yaml", ".yml")}
    return len(formats) == 1 and out_dir.suffix.lower() in suffixes.get(formats[0], ())


def build_export(
    store: GlossaryStore,
    corpus: Corpus,
    out_dir: str | Path,
    *,
    formats: Sequence[str] = FORMATS,
    as_of_thread: int | None = None,
    html: bool = True,
) -> ExportReport:
    """Write the asked formats under ``out_dir`` and say what was written.

    InputError for an unknown format, or a thread that has not finished (as-of); CorpusError for
    a thread the corpus does not have.
    """
    chosen = list(dict.fromkeys(formats))
    unknown = [name for name in chosen if name not in FORMATS]
    if unknown or not chosen:
        raise InputError(
            f"unknown export format {', '.join(unknown) or '(none)'}: choose from "
            f"{', '.join(FORMATS)}"
        )
    target = Path(out_dir).expanduser()
    entries, meta, subtitle = _glossary(store, corpus, as_of_thread)
    titles = {thread.id: thread.title for thread in corpus.threads()}

    def url_for_post(thread_id: int, post_id: int) -> str | None:
        return corpus.post_url(f"{thread_id}#{post_id}")

    files: list[str] = []
    unresolved = [
        f"[[{item.target}]] on E{item.entry_id} {item.term}"
        for item in unresolved_references(entries)
    ]
    if _single_file(target, chosen):
        writer = export_json if chosen[0] == "json" else export_yaml
        writer(entries, target, meta=meta, url_for_post=url_for_post, thread_titles=titles)
        return ExportReport(
            out_dir=str(target.parent),
            files=[target.name],
            entries=sum(1 for e in entries if not e.deleted),
            as_of_thread=as_of_thread,
            unresolved_references=unresolved,
        )
    target.mkdir(parents=True, exist_ok=True)
    if "json" in chosen:
        export_json(
            entries, target / JSON_FILE, meta=meta, url_for_post=url_for_post, thread_titles=titles
        )
        files.append(JSON_FILE)
    if "yaml" in chosen:
        export_yaml(
            entries, target / YAML_FILE, meta=meta, url_for_post=url_for_post, thread_titles=titles
        )
        files.append(YAML_FILE)
    if "lorebook" in chosen:
        export_lorebook(
            entries,
            target / LOREBOOK_FILE,
            name=corpus.path.stem,
            description=f"Glossary of {corpus.path.name}. {subtitle}",
        )
        files.append(LOREBOOK_FILE)
    if "wiki" in chosen:
        report = export_wiki(
            entries,
            target / WIKI_DIR,
            url_for_post=url_for_post,
            html=html,
            thread_titles=titles,
            subtitle=subtitle,
        )
        files.extend(f"{WIKI_DIR}/{name}" for name in report.files)
    return ExportReport(
        out_dir=str(target),
        files=files,
        entries=sum(1 for e in entries if not e.deleted),
        as_of_thread=as_of_thread,
        unresolved_references=unresolved,
    )
