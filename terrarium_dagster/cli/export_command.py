"""`terrarium export`: the glossary as JSON, YAML, a lorebook, a wiki or the reader's site."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from terrarium_dagster.cli.arguments import add_command, add_corpus, add_store, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK, check_writable, counted, file_path, resolve_thread
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.base import refuse_side_file


def add_export_parser(commands: Any) -> None:
    """Add `export`: the format, where it goes, the thread it is as of."""
    export = add_command(
        commands,
        "export",
        help="write the glossary as JSON, YAML, a SillyTavern lorebook, a wiki or the reader's "
        "site",
        description="Now, or as of a thread with --as-of-thread. --out ending in "
        "the format's extension is that file (json: .json, yaml: .yaml or .yml, lorebook: "
        ".json; another format's, as in wiki.md, is refused); anything else is a folder: json, "
        "yaml and lorebook write glossary.json, "
        "glossary.yaml or <story>.json in it, wiki its pages in FOLDER/wiki/ (HTML in "
        "FOLDER/wiki/html/), site the reader's site. Written again, it is replaced (a site or "
        "wiki folder holding anything else is refused).",
    )
    add_corpus(export)
    add_store(export, site=True)
    export.add_argument(
        "--format",
        choices=("json", "yaml", "wiki", "lorebook", "site"),
        required=True,
        help="json, yaml, lorebook: one file; wiki, site: a folder of pages",
    )
    export.add_argument(
        "--out",
        type=file_path,
        required=True,
        help="a file with the format's extension (json, yaml, lorebook), else a folder",
    )
    export.add_argument(
        "--as-of-thread",
        help="thread id, key or ch3 (its number in story order): the glossary as it stood then "
        "(not with --format site: the site holds every thread, the reader picks)",
    )


def cmd_export(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import story_name
    from terrarium_dagster.engine import open_corpus, open_store
    from terrarium_dagster.exports import build_export
    from terrarium_dagster.exports.site import build_site

    settings = settings_from_args(args)
    _check_export_out(args.format, args.out)
    with open_store(settings, read_only=True) as store, open_corpus(settings, store) as corpus:
        if args.format == "site":
            if args.as_of_thread is not None:
                raise InputError("--as-of-thread: the site holds every thread (the reader picks)")
            with _writing(args.out):
                site = build_site(store, corpus, args.out)
            print(f"wrote the reader's site ({site.summary()}) to {site.out_dir}")
            return EXIT_OK
        as_of = None
        if args.as_of_thread is not None:  # '' too: no thread is named so, said as for any
            as_of = resolve_thread(corpus, args.as_of_thread, option="--as-of-thread").id
        out = _export_file(args.format, args.out, story_name(corpus))
        with _writing(args.out), _folders_kept_only_if_written(out):
            out.parent.mkdir(parents=True, exist_ok=True)
            report = build_export(store, corpus, out, formats=(args.format,), as_of_thread=as_of)
    print(_export_line(args.format, out, report))
    return EXIT_OK


@contextmanager
def _folders_kept_only_if_written(out: Path) -> Iterator[None]:
    """An export refused once it has begun (a thread not finished) leaves no folder it made
    for `out` behind: nothing written means nothing, not an empty folder."""
    made = [folder for folder in (out, *out.parents) if not folder.exists()]
    try:
        yield
    except BaseException:
        for folder in made:  # the deepest first; only what is still empty
            with suppress(OSError):
                folder.rmdir()
        raise


@contextmanager
def _writing(out: Path) -> Iterator[None]:
    """A place the checks let through but the system refuses (a read-only or pseudo filesystem,
    a full disk): one line naming --out, not a traceback (the writes are atomic: nothing half
    written is left)."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write there: {exc.strerror or exc}") from None


def _export_line(format_name: str, out: Path, report: Any) -> str:
    """What the export wrote, counting what the file holds."""
    if format_name == "wiki":
        return f"wrote the wiki ({report.entries} entries) to {out / 'wiki'}"
    if format_name == "lorebook":
        left = f"; {report.left_out} without a key that can fire left out" * bool(report.left_out)
        return f"wrote {counted(report.held, 'lorebook entry', 'lorebook entries')} to {out}{left}"
    besides = [
        f"{count} {what}"
        for count, what in ((report.rejected, "rejected"), (report.merged, "merged away"))
        if count
    ]
    kept = f" ({report.entries} in the glossary, {', '.join(besides)})" if besides else ""
    return f"exported {counted(report.held, 'entry', 'entries')}{kept} to {out}"


_EXPORT_FILE_SUFFIXES = {"json": (".json",), "yaml": (".yaml", ".yml"), "lorebook": (".json",)}
_OUT_EXAMPLES = {
    "json": "glossary.json",
    "yaml": "glossary.yaml",
    "lorebook": "world.json",
    "wiki": "wiki",
    "site": "site",
}
_FILE_LIKE_SUFFIXES = (".json", ".yaml", ".yml", ".md", ".html", ".htm", ".txt", ".zip")


def _export_file(format_name: str, out: Path, story: str) -> Path:
    """Where a single-file format is written: `out` itself when it ends in the format's
    extension, else its file in the folder `out` (the name a folder export gives it)."""
    from terrarium_dagster.exports.build import JSON_FILE, YAML_FILE
    from terrarium_dagster.exports.lorebook import lorebook_file

    suffixes = _EXPORT_FILE_SUFFIXES.get(format_name)
    if suffixes is None or out.suffix.lower() in suffixes:
        return out
    name = {"json": JSON_FILE, "yaml": YAML_FILE}.get(format_name) or lorebook_file(story)
    return out / name


def _check_export_out(format_name: str, out: Path) -> None:
    """`--out` ending in the format's extension is that file; anything else is a folder (the
    single-file formats write their file in it; wiki and site their pages): checked before
    anything is read or written. A folder named like a store's side file (`store.db-wal`,
    `store.db-lease`) would stand in that file's way: refused by the one rule."""
    refuse_side_file(out, "--out", store=False)
    if str(out) == "-":  # standard output, as other tools read it: not a folder named "-"
        example = _OUT_EXAMPLES.get(format_name, "exports")
        raise InputError(
            f"--out -: export writes a file or a folder, not standard output; give a path "
            f"(e.g. --out {example})"
        )
    suffixes = _EXPORT_FILE_SUFFIXES.get(format_name)
    if suffixes is not None:
        if out.suffix.lower() in suffixes and out.is_dir():
            raise InputError(
                f"--out {out} is a folder, though its name ends in {out.suffix}: give the file's "
                f"path, e.g. {out / out.name}"
            )
        if out.suffix.lower() in suffixes:
            check_writable(out, folder=False)
            return
        if out.suffix.lower() in _FILE_LIKE_SUFFIXES:
            raise InputError(
                f"--out {out}: --format {format_name} writes a {' or '.join(suffixes)} file; "
                f"give a path ending in {suffixes[0]}, or a folder"
            )
        check_writable(out, folder=True)
        return
    if out.suffix.lower() in _FILE_LIKE_SUFFIXES and not out.exists():
        raise InputError(
            f"--out {out}: --format {format_name} writes a folder of pages; give a folder name "
            f"(e.g. {out.with_suffix('')})"
        )
    check_writable(out, folder=True)
