"""A text file's text (`decoded`): UTF-8, else the encoding its Project Gutenberg header
declares, else what `guess_decoding` makes of it, with a note saying so; a file that is no text
at all (an SQLite database, UTF-16, NUL bytes) is refused."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from terrarium_dagster.errors import InputError

_DECLARED = re.compile(rb"^Character set encoding:[ \t]*([^\r\n]+)", re.M | re.I)
_NAMED_APART = re.compile(r"\(([^()]+)\)")  # "ISO-646-US (US-ASCII)": another name of it


def decoded(path: Path, name: str | None = None) -> tuple[str, str | None]:
    """A text file's text and, when it had to be guessed, a note that says how: UTF-8, else the
    encoding its Project Gutenberg header declares ("Character set encoding: ISO-8859-1", as
    Gutenberg's 8-bit editions say), else what `guess_decoding` makes of it. Without DOS's
    end-of-file mark (Ctrl-Z, U+001A), which closes many 1990s editions (The Scarlet Letter's
    scrlt11.txt) on a line of its own and is no text: it had been a paragraph of the last
    chapter, a post showing nothing. `name` names the text in the note (a book piped in is read
    from a scratch file: "standard input", not the scratch file's name); the file's by default."""
    text, note = _text_of(path, name or path.name)
    return text.replace("\x1a", ""), note


def _text_of(path: Path, name: str) -> tuple[str, str | None]:
    raw = path.read_bytes()
    _refuse_binary(raw, path)
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    declared = _DECLARED.search(raw[:20_000])
    if declared is None:
        return guess_decoding(raw, name, "declares no encoding")
    declared_name = declared.group(1).decode("ascii", errors="replace").strip()
    codec = declared_codec(declared_name)
    if codec is None:
        raise InputError(
            f"{path} is not UTF-8 text and declares {declared_name}, an encoding Python does not "
            "know: convert it to UTF-8 (iconv -f CP1252 -t UTF-8 for most 8-bit texts)"
        )
    try:
        return raw.decode(codec), None
    except UnicodeDecodeError:  # "ASCII" over a few 8-bit bytes, as old Gutenberg texts say
        return guess_decoding(raw, name, f"is not the {declared_name} it declares")


def declared_codec(name: str) -> str | None:
    """The codec a header's encoding line names, as Gutenberg's headers write it: "ISO-8859-1",
    "ISO 8859-1" (Python reads the space), "ISO-646-US (US-ASCII)" (the name in parentheses
    when the first is not one Python knows); None when no name it gives is one."""
    names = [_NAMED_APART.sub("", name).strip(), *_NAMED_APART.findall(name)]
    for candidate in names:
        try:
            return codecs.lookup(candidate.strip()).name
        except LookupError:
            continue
    return None


def _refuse_binary(raw: bytes, path: Path) -> None:
    """A file that is not text at all (a corpus or a store renamed .txt, UTF-16) is refused in
    one line: read as Windows-1252 it was 'imported' as a chapter of binary noise."""
    if raw.startswith(b"SQLite format 3\x00"):
        raise InputError(
            f"{path} is an SQLite database (a corpus or an annotator store?), not a book: give "
            "the book's text, Markdown, reStructuredText, AsciiDoc, HTML or EPUB file"
        )
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"{path} is UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8) and import that"
        )
    if b"\x00" in raw[:65_536]:
        raise InputError(
            f"{path} is not a text file (it holds NUL bytes): give the book's text, Markdown, "
            "AsciiDoc, HTML or EPUB file"
        )


def guess_decoding(raw: bytes, name: str, problem: str) -> tuple[str, str]:
    """Text that is not what it says it is (or says nothing): UTF-8 with its few broken bytes
    replaced when most of what lies above ASCII is UTF-8, else Windows-1252, the 8-bit
    encoding old Project Gutenberg texts were written in (a superset of Latin-1's letters;
    Latin-1 itself for the five bytes it leaves undefined). The note says which was chosen
    and over how many bytes, so an accent read wrongly is never a silent choice. `name` names
    the text in the note."""
    as_utf8 = raw.decode("utf-8", errors="replace")
    broken = as_utf8.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
    decoded_well = sum(1 for char in as_utf8 if char > "\x7f" and char != "\ufffd")
    if decoded_well > broken:
        return as_utf8.lstrip("\ufeff"), (
            f"{name} is not all UTF-8 and {problem}: read as UTF-8, its {broken} broken "
            "sequence(s) replaced by U+FFFD"
        )
    above_ascii = sum(1 for byte in raw if byte > 0x7F)
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text, (
        f"{name} is not UTF-8 and {problem}: read as Windows-1252 "
        f"({_counted_bytes(above_ascii)} above ASCII; convert it with iconv if that is wrong)"
    )


def _counted_bytes(number: int) -> str:
    return f"{number} byte" if number == 1 else f"{number} bytes"
