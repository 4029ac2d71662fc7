"""`terrarium import`: a book turned into a corpus."""

from __future__ import annotations

import argparse
from typing import Any

from terrarium_dagster.cli.arguments import add_command
from terrarium_dagster.cli.common import EXIT_OK, check_writable, counted, file_path
from terrarium_dagster.corpus.book_files import BOOK_FORMATS, BOOK_SUFFIXES
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.base import refuse_side_file

#: How many of the parts an import left out its line names (`--dry-run` lists them all).
LEFT_OUT_SHOWN = 4


def add_import_parser(commands: Any) -> None:
    """Add `import`: the book and the corpus file to write."""
    importer = add_command(
        commands,
        "import",
        help="turn a book (.txt, .md, .rst, .adoc, .html, .epub) into a corpus: chapters become "
        "threads",
    )
    importer.add_argument(
        "book",
        type=file_path,
        help="plain text, Markdown, reStructuredText, AsciiDoc, HTML or EPUB file; `-` (or "
        "/dev/stdin) reads it from a pipe",
    )
    importer.add_argument(
        "--format",
        choices=sorted(BOOK_FORMATS),
        help="how to read the book (else its file's suffix says; from a pipe, an EPUB or HTML "
        "page is told by its first bytes and anything else is read as plain text)",
    )
    importer.add_argument(
        "--out", type=file_path, required=True, help="corpus SQLite file to write"
    )
    importer.add_argument(
        "--replace",
        action="store_true",
        help="write over --out when it is an earlier import (else refused)",
    )
    importer.add_argument(
        "--dry-run", action="store_true", help="show the chapters found and what was left out"
    )


def cmd_import(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.importers import import_book, is_stream, read_book

    if args.dry_run:
        book = read_book(args.book, format=args.format)
        found = counted(len(book.chapters), "chapter", "chapters")
        named = "book from the pipe" if is_stream(args.book) else args.book.name
        print(f"{book.title or named}: {found} (nothing written)")
        for note in book.notes:
            print(f"  note: {note}")
        for number, chapter in enumerate(book.chapters, start=1):
            print(f"  {number:3d}. {chapter.title} ({chapter.words} words)")
        for name in book.dropped:
            print(f"  left out: {name}")
        for section in book.reference:
            print(f"  reference, not story: {section.title} ({section.words} words)")
        if args.out.exists() and not args.replace:
            print(
                f"{args.out} exists: the import writes over it only with --replace (into a "
                "corpus that already holds this very import, it changes nothing)"
            )
        return EXIT_OK
    # an --out named as a book file is taken for one (`import BOOK --out q.txt` wrote a corpus,
    # an SQLite file, under a text file's name)
    if args.out.suffix.lower() in BOOK_SUFFIXES and not args.out.exists():  # else said below
        raise InputError(
            f"--out {args.out} names a book file ({args.out.suffix}), not a corpus: give the "
            f"corpus file to write, e.g. --out {args.out.with_suffix('.db')}"
        )
    check_writable(args.out, folder=False)
    # a corpus at store.db-wal would be store.db's log
    refuse_side_file(args.out, "--out", store=False, database=True)
    report = import_book(args.book, args.out, replace=args.replace, format=args.format)
    if report.unchanged:
        print(
            f"{report.path} already holds this import of {report.title} "
            f"({counted(report.chapters, 'chapter', 'chapters')}): nothing changed"
        )
        return EXIT_OK
    print(
        f"imported {counted(report.chapters, 'chapter', 'chapters')}, "
        f"{counted(report.paragraphs, 'paragraph', 'paragraphs')} "
        f"({counted(report.words, 'word', 'words')}) of {report.title} into {report.path}"
    )
    for note in report.notes:
        print(f"note: {note}")
    if report.left_out:
        shown = "; ".join(report.left_out[:LEFT_OUT_SHOWN])
        more = len(report.left_out) - LEFT_OUT_SHOWN
        print(
            f"left out, not story: {shown}"
            + (f"; {more} more (--dry-run lists them)" if more > 0 else "")
        )
    if report.reference:
        # what it is, named: a play's cast is no "back matter"
        shown = "; ".join(name.rstrip(".:") for name in report.sections[:LEFT_OUT_SHOWN])
        more = len(report.sections) - LEFT_OUT_SHOWN
        print(
            f"kept for reference, not story, in {report.reference}: {shown}"
            + (f"; {more} more" if more > 0 else "")
        )
    return EXIT_OK
