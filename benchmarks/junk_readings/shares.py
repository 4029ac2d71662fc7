"""Junk shares of offline glossaries of novels, by the readings in this folder.

    python benchmarks/junk_readings/shares.py --dump STORE            # the live entries, to read
    python benchmarks/junk_readings/shares.py STORE:BOOK [STORE:BOOK ...]

Each `BOOK.judge` here holds one reader's verdict on every live entry of the store built from
that novel (`JUDGE.md`: term, junk, or second entry for one referent). A store built by other
code is scored by term: an entry whose term no verdict names is listed as unread (read it and
add its line), and counted as a term meanwhile.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
from pathlib import Path

HERE = Path(__file__).resolve().parent


def live_entries(store: Path) -> list[tuple[int, str, str, str, str, str]]:
    """(id, term, aliases, status, tags, definition) of every live entry, by id."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        aliases: dict[int, list[str]] = {}
        for entry_id, alias in db.execute("SELECT entry_id, alias FROM alias WHERE deleted = 0"):
            aliases.setdefault(entry_id, []).append(alias)
        rows = db.execute(
            "SELECT id, term, status, tags, definition FROM entry WHERE deleted = 0 "
            "AND status NOT IN ('merged', 'rejected') ORDER BY id"
        ).fetchall()
    finally:
        db.close()
    return [
        (entry_id, term, "; ".join(aliases.get(entry_id, [])), status, tags, definition)
        for entry_id, term, status, tags, definition in rows
    ]


def readings(book: str, folder: Path = HERE) -> dict[str, tuple[str, str]]:
    """The reading of `book`: term -> (verdict, reason); the verdict is term, junk or second."""
    found: dict[str, tuple[str, str]] = {}
    for line in (folder / f"{book}.judge").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        found[fields[1]] = (fields[2], fields[3] if len(fields) > 3 else "")
    return found


def verdicts(book: str) -> dict[str, str]:
    """The reading of `book`: term -> term, junk or second."""
    return {term: verdict for term, (verdict, _reason) in readings(book).items()}


_FIRST = re.compile(r"\bE([1-9][0-9]*)\b")


def firsts(book: str, folder: Path = HERE) -> dict[str, str]:
    """For each entry the reading of `book` calls a second, the term of the first entry its reason
    names by id ("E17 (King of Bohemia)"), when that id is a line of the reading."""
    lines = (folder / f"{book}.judge").read_text(encoding="utf-8").splitlines()
    by_id = {
        fields[0]: fields[1]
        for fields in (line.split("\t") for line in lines if line.startswith("E"))
        if len(fields) > 1
    }
    found: dict[str, str] = {}
    for term, (verdict, reason) in readings(book, folder).items():
        named = _FIRST.search(reason)
        if verdict == "second" and named and f"E{named.group(1)}" in by_id:
            found[term] = by_id[f"E{named.group(1)}"]
    return found


def scored(store: Path, book: str, folder: Path = HERE) -> list[tuple[str, str | None]]:
    """(term, verdict) of every live entry of `store`, by id; None for a term no line names.

    A second entry is second to an entry of the store the readings were made on. Where a store
    has no live entry for that first one (none by its term, none holding it as an alias), the
    first of its seconds here is the referent's entry, and takes the first one's verdict (term
    or junk: "Crusoe" where "Robinson Kreutznaer" is let go); the others stay second."""
    read, first_of = readings(book, folder), firsts(book, folder)
    live = live_entries(store)
    named = {term: entry_id for entry_id, term, *_ in live}
    for entry_id, _term, aliases, *_ in live:
        for alias in filter(None, aliases.split("; ")):
            named.setdefault(alias, entry_id)
    standing: set[str] = set()  # firsts whose place a second of this store has taken
    found: list[tuple[str, str | None]] = []
    for entry_id, term, *_rest in live:
        verdict = read.get(term, (None, ""))[0]
        first = first_of.get(term)
        if verdict == "second" and first is not None and first not in standing:
            holder = named.get(first)
            if holder is None or holder == entry_id:
                standing.add(first)
                verdict = read.get(first, ("second", ""))[0]
        found.append((term, verdict))
    return found


def share(store: Path, book: str, folder: Path = HERE) -> tuple[int, int, list[str]]:
    """(live entries, junk and second entries, terms no verdict names)."""
    live = junk = 0
    unread: list[str] = []
    for term, verdict in scored(store, book, folder):
        if verdict is None:
            unread.append(term)
        live += 1
        junk += verdict in ("junk", "second")
    return live, junk, unread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="print a store's live entries to read")
    parser.add_argument("scored", nargs="*", help="STORE:BOOK (BOOK names BOOK.judge here)")
    args = parser.parse_args()
    if args.dump:
        for entry_id, term, aliases, status, tags, definition in live_entries(args.dump):
            print(f"E{entry_id}\t{term}\t{aliases}\t{status}\t{tags}\t{definition[:140]}")
        return
    total_live = total_junk = 0
    for item in args.scored:
        store, _, book = item.rpartition(":")
        live, junk, unread = share(Path(store), book)
        total_live, total_junk = total_live + live, total_junk + junk
        note = f"  unread: {', '.join(unread)}" if unread else ""
        print(f"{book}: {live} live, {junk} junk or second, {100 * junk / max(live, 1):.0f}%{note}")
    if len(args.scored) > 1:
        print(f"all: {total_live} live, {total_junk}, {100 * total_junk / max(total_live, 1):.1f}%")


if __name__ == "__main__":
    main()
