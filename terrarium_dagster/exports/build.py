"""`build_export`: the glossary (now, or as of the end of a thread) as JSON, YAML and a wiki.

Layout of ``out_dir``::

    glossary.json        format "json"
    glossary.yaml        format "yaml"
    <story>.json         format "lorebook": a SillyTavern World Info file, named after the
                         story (SillyTavern names the world after the file)
    wiki/                format "wiki": Markdown pages, wiki/html/ the same pages as HTML

When ``out_dir`` ends in the format's extension (``.json`` for JSON and the lorebook,
``.yaml``/``.yml`` for YAML) and that is the only format asked, the export is written to that
file instead (what `terrarium export --out FILE` does for its single-file formats). Files are
replaced atomically (a temporary file or folder beside the target, then renamed), so a failed
export leaves the previous one intact.

As of a thread, the glossary is `GlossaryStore.glossary_as_of_thread`: entries, definitions,
aliases and sources as they stood at the end of that thread; nothing from later threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import chapter_title, is_book, story_name
from terrarium_dagster.corpus.units import thread_name
from terrarium_dagster.errors import InputError
from terrarium_dagster.exports.data import (
    export_document,
    json_document_text,
    json_fragment,
    yaml_document_text,
    yaml_fragment,
)
from terrarium_dagster.exports.edition_views import with_editions
from terrarium_dagster.exports.entry_records import (
    Chapters,
    entry_record,
    exported_entries,
    glossary_document,
)
from terrarium_dagster.exports.files import (
    MANIFEST_FILE,
    Base,
    FolderWriter,
    Manifest,
    PlannedFile,
    manifest_text,
    read_manifest,
    refuse_foreign_folder,
    staged_directory,
    write_or_link,
    write_text_atomic,
)
from terrarium_dagster.exports.lorebook import (
    lorebook_entries,
    lorebook_file,
    lorebook_fragment,
    lorebook_template,
    lorebook_text,
)
from terrarium_dagster.exports.references import (
    NameIndex,
    find_references,
    is_page_entry,
    linked_views,
    unresolved_references,
)
from terrarium_dagster.exports.wiki import WikiCache, WikiFile, content_key, render_wiki
from terrarium_dagster.reports import ExportReport
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView

FORMATS: tuple[str, ...] = ("json", "yaml", "wiki", "lorebook")
JSON_FILE = "glossary.json"
YAML_FILE = "glossary.yaml"
WIKI_DIR = "wiki"


def generator_name() -> str:
    try:
        return f"terrarium-dagster {metadata.version('terrarium-dagster')}"
    except metadata.PackageNotFoundError:
        return "terrarium-dagster"


SINGLE_FILE_SUFFIXES: dict[str, tuple[str, ...]] = {
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "lorebook": (".json",),
}


def _single_file(out_dir: Path, formats: Sequence[str]) -> bool:
    return len(formats) == 1 and out_dir.suffix.lower() in SINGLE_FILE_SUFFIXES.get(formats[0], ())


def _chosen_formats(formats: Sequence[str]) -> list[str]:
    chosen = list(dict.fromkeys(formats))
    unknown = [name for name in chosen if name not in FORMATS]
    if unknown or not chosen:
        raise InputError(
            f"unknown export format {', '.join(unknown) or '(none)'}: choose from "
            f"{', '.join(FORMATS)}"
        )
    return chosen


@dataclass(slots=True)
class _Record:
    """An entry's exported record, as JSON and YAML fragments, and what it was made from."""

    entry: EntryView
    resolved: tuple[int | None, ...]
    json: str
    yaml: str


def _wiki_file(path: Path) -> bool:
    """Whether `path`, in the wiki's folder, is what the wiki export writes there: its
    Markdown pages and `html/` with the same pages as HTML."""
    if path.name == "html" and path.is_dir():
        return all(part.suffix in (".html", ".css") for part in path.iterdir())
    return path.suffix == ".md" and path.is_file()


def glossary_size(entries: Sequence[EntryView]) -> int:
    """How many entries the glossary has, counted as the wiki counts its pages (not deleted,
    merged away or rejected): the one number every report of an export gives."""
    return sum(1 for entry in entries if is_page_entry(entry))


class Exporter:
    """Exports of one store and corpus, each costing about what changed since the previous one.

    `build_export` is one call of a fresh exporter. A long-lived one (a Dagster run exporting
    thread after thread, a benchmark) keeps what it rendered: the glossary as of the last thread
    (updated from the revisions between two threads, not rebuilt), each entry's JSON and YAML
    fragments and lorebook entry, and the wiki's pages, so that only the entries that changed,
    and the pages whose links or backlinks changed, are rendered again. Files whose content hash
    is unchanged are kept from the export being replaced (the folder's own: the same files, not
    written again) or else linked from a ``base`` folder (an earlier export with its manifest)
    instead of written. The files are the same, byte for byte, as a fresh export's.
    """

    def __init__(self, store: GlossaryStore, corpus: Corpus) -> None:
        self.store = store
        self.corpus = corpus
        self.titles = {thread.id: thread.title for thread in corpus.threads()}
        self.book = is_book(corpus)  # an imported book: chapters and paragraphs, not posts
        # how the JSON and YAML name a book's paragraphs (None: a quest's posts)
        self.chapters = Chapters(corpus.threads()) if self.book else None
        self._views: dict[int, EntryView] = {}
        self._boundary: int | None = None
        self._records: dict[int, _Record] = {}
        self._references: dict[str, tuple[str, ...]] = {}
        self._lore: dict[int, tuple[EntryView, str]] = {}
        self._wiki = WikiCache()
        self._written: tuple[Path, Manifest, str] | None = None

    def url_for_post(self, thread_id: int, post_id: int, quote: str | None = None) -> str | None:
        return self.corpus.post_url(f"{thread_id}#{post_id}", quote=quote)

    # -- the glossary ------------------------------------------------------------------------

    def _entries_as_of(self, boundary: int) -> list[EntryView]:
        if self._boundary is None:
            views = self.store.history.glossary_as_of(boundary)
            self._views = {view.id: view for view in views}
        elif boundary != self._boundary:
            changed, gone = self.store.history.changes_between(self._boundary, boundary)
            for view in changed:
                if view.deleted:
                    self._views.pop(view.id, None)
                else:
                    self._views[view.id] = view
            for entry_id in gone:
                self._views.pop(entry_id, None)
        self._boundary = boundary
        return [self._views[entry_id] for entry_id in sorted(self._views)]

    def _glossary(self, as_of_thread: int | None) -> tuple[list[EntryView], dict[str, Any], str]:
        if as_of_thread is None:
            revision = self.store.history.last_revision_id()
            meta: dict[str, Any] = {"as_of_thread": None, "as_of_thread_key": None}
            subtitle = "The current glossary."
            entries = self.store.glossary.entry_views()
        else:
            thread = self.corpus.thread(as_of_thread)
            state = self.store.progress.thread_state(as_of_thread)
            if state is None or state.end_revision_id is None:
                status = state.status if state else "never annotated"
                # as `status` and `--as-of-thread ch2` name it
                named = thread_name(thread.key, book=self.book, labelled=True)
                raise InputError(
                    f"{named} has not finished annotation ({status}); there is no glossary as "
                    "of its end to export: finish it with `terrarium run`, or give an earlier "
                    "--as-of-thread"
                )
            revision = state.end_revision_id
            meta = {"as_of_thread": thread.id, "as_of_thread_key": thread.key}
            subtitle = (
                f"As of the end of the chapter “{chapter_title(thread.title)}”."
                if self.book
                else f"As of the end of thread {thread.key}"
                + (f": {thread.title}." if thread.title else ".")
            )
            entries = self._entries_as_of(revision)
        position = None if as_of_thread is None else self.corpus.thread(as_of_thread).position
        entries = with_editions(self.store, entries, position)
        meta.update(
            corpus=self.corpus.path.name,
            generated_by=generator_name(),
            revision=revision,
            url_template=self.corpus.url_template,
        )
        if self.book:  # whose glossary it is (a quest's corpus file name says it already)
            meta["book"] = story_name(self.corpus)
        return entries, meta, subtitle

    # -- the files ---------------------------------------------------------------------------

    def _records_for(self, entries: Sequence[EntryView], index: NameIndex) -> list[_Record]:
        chosen = linked_views(exported_entries(entries))  # as every export shows definitions
        records: dict[int, _Record] = {}
        references: dict[str, tuple[str, ...]] = {}
        for entry in chosen:
            targets = references.get(entry.definition)
            if targets is None:
                targets = self._references.get(entry.definition)
                if targets is None:
                    targets = tuple(r.target for r in find_references(entry.definition))
                references[entry.definition] = targets
            resolved = tuple(index.resolve(target) for target in targets)
            cached = self._records.get(entry.id)
            if cached is None or cached.resolved != resolved or not _same(cached.entry, entry):
                record = entry_record(
                    entry,
                    index,
                    url_for_post=self.url_for_post,
                    thread_titles=self.titles,
                    chapters=self.chapters,
                ).model_dump(mode="json")
                cached = _Record(entry, resolved, json_fragment(record), yaml_fragment(record))
            records[entry.id] = cached
        self._records = records
        self._references = references
        return [records[entry.id] for entry in chosen]

    def _lorebook_fragments(self, entries: Sequence[EntryView]) -> list[str]:
        fragments: list[str] = []
        kept: dict[int, tuple[EntryView, str]] = {}
        for uid, entry in enumerate(lorebook_entries(entries)):
            cached = self._lore.get(entry.id)
            if cached is None or not _same(cached[0], entry):
                cached = (entry, lorebook_template(entry))
            kept[entry.id] = cached
            fragments.append(lorebook_fragment(uid, entry, cached[1]))
        self._lore = kept
        return fragments

    def export(
        self,
        out_dir: str | Path,
        *,
        formats: Sequence[str] = FORMATS,
        as_of_thread: int | None = None,
        html: bool = True,
        base: Path | None = None,
        final_dir: Path | None = None,
    ) -> ExportReport:
        """Write the asked formats under ``out_dir`` and say what was written (see
        `build_export`). ``final_dir``: where ``out_dir`` will be moved once written (a staging
        folder); the export there (else in ``out_dir``) is the one replaced, and its unchanged
        files are kept, linked into ``out_dir`` when it is a staging folder: an export that
        changed nothing leaves every file as it was. ``base``: another earlier export folder
        (the previous thread's) whose unchanged files are linked when the replaced one does not
        have them."""
        chosen = _chosen_formats(formats)
        target = Path(out_dir).expanduser()
        if "wiki" in chosen:  # its folder is replaced whole: never one holding anything else,
            # refused before any of the export is worked out (as the site is)
            refuse_foreign_folder(target / WIKI_DIR, _wiki_file, "the wiki")
        entries, meta, subtitle = self._glossary(as_of_thread)
        index = NameIndex(exported_entries(entries))
        unresolved = [
            f"[[{item.target}]] on E{item.entry_id} {item.term}"
            for item in unresolved_references(entries, index)
        ]
        if _single_file(target, chosen):
            size = glossary_size(entries)
            counts: dict[str, int]
            if chosen[0] == "lorebook":
                story = story_name(self.corpus)
                fragments = self._lorebook_fragments(entries)
                text = lorebook_text(story, f"Glossary of {story}. {subtitle}", fragments)
                write_text_atomic(target, text)
                counts = {"held": len(fragments), "left_out": size - len(fragments)}
            else:
                export_document(
                    entries,
                    target,
                    data_format="json" if chosen[0] == "json" else "yaml",
                    meta=meta,
                    url_for_post=self.url_for_post,
                    thread_titles=self.titles,
                    chapters=self.chapters,
                )
                held = exported_entries(entries)
                merged = sum(1 for entry in held if entry.merged_into is not None)
                rejected = len(held) - size - merged
                counts = {"held": len(held), "merged": merged, "rejected": rejected}
            return ExportReport(
                out_dir=str(target.parent),
                files=[target.name],
                entries=size,
                as_of_thread=as_of_thread,
                unresolved_references=unresolved,
                **counts,
            )
        planned: dict[str, PlannedFile] = {}
        if "json" in chosen or "yaml" in chosen:
            records = self._records_for(entries, index)
            header = glossary_document([], meta=meta)["meta"]
            header["entry_count"] = len(records)
            header = {key: header[key] for key in sorted(header)}
        if "json" in chosen:
            planned[JSON_FILE] = _whole(json_document_text(header, [r.json for r in records]))
        if "yaml" in chosen:
            planned[YAML_FILE] = _whole(yaml_document_text(header, [r.yaml for r in records]))
        if "lorebook" in chosen:
            story = story_name(self.corpus)
            planned[lorebook_file(story)] = _whole(
                lorebook_text(
                    story,
                    f"Glossary of {story}. {subtitle}",
                    self._lorebook_fragments(entries),
                )
            )
        wiki_files: dict[str, WikiFile] = {}
        if "wiki" in chosen:
            _report, wiki_files = render_wiki(
                entries,
                url_for_post=self.url_for_post,
                html=html,
                thread_titles=self.titles,
                subtitle=subtitle,
                book=self.book,
                cache=self._wiki,
                index=index,
            )
        manifest, manifest_written = self._write(
            target, planned, wiki_files, final_dir or target, base, html=html
        )
        files = [*planned, *(f"{WIKI_DIR}/{name}" for name in wiki_files)]
        self._written = ((final_dir or target).resolve(), manifest, manifest_written)
        return ExportReport(
            out_dir=str(target),
            files=files,
            entries=glossary_size(entries),
            as_of_thread=as_of_thread,
            unresolved_references=unresolved,
        )

    def _earlier(self, folder: Path | None) -> Base | None:
        """The export in ``folder`` with its manifest; None when there is none."""
        if folder is None or not folder.is_dir():
            return None
        if self._written is not None and self._trusted(folder):
            return Base(folder, self._written[1], trusted=True)
        manifest = read_manifest(folder)
        return None if manifest is None else Base(folder, manifest)

    def _trusted(self, folder: Path | None) -> bool:
        """Whether ``folder`` holds what this exporter wrote last (its files need no checking):
        the folder it named, still holding the manifest it wrote (not, say, the previous export
        left in place by a swap that failed)."""
        if folder is None or self._written is None:
            return False
        where, _manifest, text = self._written
        if where != folder.resolve():
            return False
        try:
            return (folder / MANIFEST_FILE).read_text(encoding="utf-8") == text
        except OSError:
            return False

    def _write(
        self,
        target: Path,
        planned: dict[str, PlannedFile],
        wiki_files: dict[str, WikiFile],
        final_dir: Path,
        base: Path | None,
        *,
        html: bool,
    ) -> tuple[Manifest, str]:
        """Write the files into ``target`` (``final_dir`` itself, or a staging folder that will
        replace it), keeping the unchanged files of the export in ``final_dir``, else linking
        those of ``base``."""
        replaced = self._earlier(final_dir)
        other = None if base is not None and base.resolve() == final_dir.resolve() else base
        bases = [found for found in (replaced, self._earlier(other)) if found is not None]
        in_place = target.resolve() == final_dir.resolve()
        target.mkdir(parents=True, exist_ok=True)
        keys = {name: file.key for name, file in planned.items()}
        keys.update({f"{WIKI_DIR}/{name}": file.key for name, file in wiki_files.items()})
        # A manifest must never describe files it does not: gone until the new one is written,
        # unless the export is what the folder already holds, path for path and key for key
        # (every file written then has the key the manifest gives it).
        manifest_file = target / MANIFEST_FILE
        if not (
            in_place
            and replaced is not None
            and {path: key for path, (key, _size) in replaced.manifest.items()} == keys
        ):
            manifest_file.unlink(missing_ok=True)
        writer = FolderWriter(target, bases)
        for name, file in planned.items():
            writer.put(name, file, atomic=True)
        if wiki_files:
            with staged_directory(target / WIKI_DIR) as staging:
                if html:
                    (staging / "html").mkdir()
                wiki = FolderWriter(
                    staging,
                    [
                        Base(base.folder / WIKI_DIR, _under(base.manifest, WIKI_DIR), base.trusted)
                        for base in bases
                    ],
                )
                for name, wiki_file in wiki_files.items():
                    wiki.put(name, PlannedFile(wiki_file.key, wiki_file.text))
            writer.manifest.update({f"{WIKI_DIR}/{k}": v for k, v in wiki.manifest.items()})
        text = manifest_text(writer.manifest)
        if in_place:
            write_text_atomic(manifest_file, text)  # left as it is when it already says this
        else:
            write_or_link(manifest_file, text.encode("utf-8"), final_dir / MANIFEST_FILE)
        return writer.manifest, text


def _under(manifest: Manifest, folder: str) -> Manifest:
    prefix = f"{folder}/"
    return {
        path[len(prefix) :]: value for path, value in manifest.items() if path.startswith(prefix)
    }


def _same(cached: EntryView, entry: EntryView) -> bool:
    return cached is entry or cached == entry


def _whole(text: str) -> PlannedFile:
    return PlannedFile(content_key(text), lambda: text)


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
    a thread the corpus does not have. An export already in ``out_dir`` (its manifest) lets
    unchanged files stay as they are.
    """
    return Exporter(store, corpus).export(
        out_dir, formats=formats, as_of_thread=as_of_thread, html=html
    )
