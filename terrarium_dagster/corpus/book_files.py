"""The book files `terrarium import` reads: each format by the name `--format` gives it, with the
file suffixes read as it. One table for the importer, the command line (its `--format` choices,
and an `--out` that names a book file) and the corpus reader (a book given where a corpus
belongs); it loads nothing, so any command may import it."""

from __future__ import annotations

BOOK_FORMATS: dict[str, tuple[str, ...]] = {
    "txt": (".txt", ".text"),
    "md": (".md", ".markdown"),
    "rst": (".rst", ".rest"),
    "adoc": (".adoc", ".asciidoc", ".asc"),
    "html": (".html", ".htm", ".xhtml"),
    "epub": (".epub",),
}
BOOK_SUFFIXES = frozenset(suffix for suffixes in BOOK_FORMATS.values() for suffix in suffixes)


def format_of(suffix: str) -> str | None:
    """The format a file ending in `suffix` is read as; None when it is no book file's."""
    suffix = suffix.lower()
    return next((name for name, suffixes in BOOK_FORMATS.items() if suffix in suffixes), None)
