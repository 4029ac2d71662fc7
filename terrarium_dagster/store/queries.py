"""Reading the glossary's entries as they are now: by id (following merges), by name, by
full-text search, all of them (with their live sources for exports), and the store's own
soundness check."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from terrarium_dagster.errors import EntryNotFoundError, InputError, StoreError
from terrarium_dagster.store.base import Aggregate, StoreConnection, dump_json, guarded
from terrarium_dagster.store.fts import fts_query
from terrarium_dagster.store.inputs import parse_entry_id
from terrarium_dagster.store.models import Entry, EntryView, Provenance, SearchHit
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.provenance import provenance_record
from terrarium_dagster.store.rows import EntryRows

MAX_SEARCH_LIMIT = 200
# bm25 column weights: term, aliases, definition.
_BM25 = "bm25(entry_fts, 10.0, 5.0, 1.0)"
_MAX_REDIRECTS = 64


class EntryQueries(Aggregate):
    """The reads of `store.glossary`."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        self.rows = EntryRows(store)

    @guarded
    def get_entry(self, entry_id: int) -> Entry:
        """The entry with that id (deleted and merged ones too); EntryNotFoundError if none."""
        with self.reading():
            return self.rows.load(parse_entry_id(entry_id))

    @guarded
    def get_entries(self, entry_ids: Sequence[int]) -> list[Entry]:
        """Entries in the order asked (two queries); EntryNotFoundError if any is missing."""
        ids = [parse_entry_id(entry_id) for entry_id in entry_ids]
        with self.reading():
            found = self.rows.load_many(ids)
        missing = [entry_id for entry_id in ids if entry_id not in found]
        if missing:
            raise EntryNotFoundError(f"no entry E{missing[0]} in the glossary")
        return [found[entry_id] for entry_id in ids]

    @guarded
    def resolve_entry(self, entry_id: int) -> Entry:
        """The entry, or the entry it was merged into (following redirects)."""
        current = parse_entry_id(entry_id)
        with self.reading():
            for _ in range(_MAX_REDIRECTS):
                row = self.rows.row(current)
                if row["merged_into"] is None:
                    return self.rows.load(current)
                current = row["merged_into"]
        raise StoreError(f"entry E{entry_id} redirects through more than {_MAX_REDIRECTS} merges")

    @guarded
    def find_by_term(self, term: str) -> Entry | None:
        """The live entry whose term or alias normalizes like ``term``; a merged entry's name
        leads to the entry it was merged into. None if no live entry has that name."""
        if not isinstance(term, str):
            raise InputError(f"term must be a string, not {type(term).__name__}")
        norm = normalize_term(term)
        if not norm:
            return None
        with self.reading():
            row = self.conn.execute(
                "SELECT id FROM entry WHERE norm_term = :n AND deleted = 0 AND merged_into IS NULL "
                "UNION SELECT a.entry_id FROM alias a JOIN entry e ON e.id = a.entry_id "
                "WHERE a.norm_alias = :n AND a.deleted = 0 AND e.deleted = 0 "
                "AND e.merged_into IS NULL ORDER BY 1 LIMIT 1",
                {"n": norm},
            ).fetchone()
            if row is not None:
                return self.rows.load(row[0])
            merged = self.conn.execute(
                "SELECT id FROM entry WHERE norm_term = :n AND deleted = 0 "
                "AND merged_into IS NOT NULL "
                "UNION SELECT a.entry_id FROM alias a JOIN entry e ON e.id = a.entry_id "
                "WHERE a.norm_alias = :n AND a.deleted = 0 AND e.deleted = 0 "
                "AND e.merged_into IS NOT NULL ORDER BY 1",
                {"n": norm},
            ).fetchall()
            for candidate in merged:
                target = self.resolve_entry(candidate[0])
                if target.live:
                    return target
        return None

    @guarded
    def search(self, query: str, limit: int = 10, include_deleted: bool = False) -> list[SearchHit]:
        """Full-text search (FTS5 bm25 over term, aliases and definition, weighted 10/5/1), with
        an entry whose normalized term or alias equals the query placed first (``exact``).
        Any string is safe. Without ``include_deleted`` only live entries (not deleted, not
        merged) are returned; with it, deleted and merged ones too."""
        if not isinstance(query, str):
            raise InputError(f"search query must be a string, not {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InputError(f"search limit must be an integer, not {limit!r}")
        limit = min(limit, MAX_SEARCH_LIMIT)
        if limit < 1:
            return []
        live_only = "" if include_deleted else " AND e.deleted = 0 AND e.merged_into IS NULL"
        norm = normalize_term(query)
        expression = fts_query(query, prefix_last=True)
        with self.reading():
            exact: list[int] = []
            if norm:
                rows = self.conn.execute(
                    "SELECT e.id FROM entry e WHERE e.norm_term = :n" + live_only + " UNION "
                    "SELECT e.id FROM alias a JOIN entry e ON e.id = a.entry_id "
                    "WHERE a.norm_alias = :n AND a.deleted = 0" + live_only,
                    {"n": norm},
                ).fetchall()
                exact = sorted(row[0] for row in rows)
            scores: dict[int, float] = {}
            ranked: list[int] = []
            if expression is not None:
                rows = self.conn.execute(
                    f"SELECT f.id, f.rank FROM (SELECT rowid AS id, {_BM25} AS rank "
                    "FROM entry_fts WHERE entry_fts MATCH ?) f "
                    "JOIN entry e ON e.id = f.id WHERE 1" + live_only + " "
                    "ORDER BY f.rank, f.id LIMIT ?",
                    (expression, limit + len(exact)),
                ).fetchall()
                for row in rows:
                    scores[row[0]] = -float(row[1])
                    ranked.append(row[0])
            exact.sort(key=lambda entry_id: (-scores.get(entry_id, 0.0), entry_id))
            exact_set = set(exact)
            chosen = exact + [entry_id for entry_id in ranked if entry_id not in exact_set]
            chosen = chosen[:limit]
            entries = self.rows.load_many(chosen)
        return [
            SearchHit(
                entry=entries[entry_id],
                score=scores.get(entry_id, 0.0),
                exact=entry_id in exact_set,
            )
            for entry_id in chosen
        ]

    @guarded
    def entries(
        self, *, statuses: Iterable[str] | None = None, include_deleted: bool = False
    ) -> list[Entry]:
        """Entries in id order (merged ones included, deleted ones only if asked), with their
        aliases (two queries in all)."""
        clauses: list[str] = []
        params: list[object] = []
        if statuses is not None:
            if isinstance(statuses, str):
                statuses = [statuses]
            chosen = list(statuses)
            clauses.append("status IN (SELECT value FROM json_each(?))")
            params.append(dump_json(chosen))
        if not include_deleted:
            clauses.append("deleted = 0")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        with self.reading():
            rows = self.conn.execute(f"SELECT * FROM entry{where} ORDER BY id", params).fetchall()
            aliases = self.rows.aliases(None)
        return [self.rows.entry(row, aliases.get(row["id"], [])) for row in rows]

    @guarded
    def entries_touching(self, thread_id: int) -> list[Entry]:
        """Entries (as they are now, deleted ones included) with a revision made in that thread."""
        with self.reading():
            ids = self.rows.revised("thread_id = ?", (thread_id,))
            found = self.rows.load_many(ids)
        return [found[entry_id] for entry_id in ids]

    @guarded
    def names_like(self, query: str, limit: int = 5) -> list[str]:
        """Terms of live entries a name that matches none most likely meant, likeliest first:
        those with a word of it in a name, terms spelt alike, and only then what full-text
        search finds (a definition that mentions it)."""
        live = [entry for entry in self.entries() if entry.merged_into is None]
        words = set(normalize_term(query).split())
        found = [
            entry.term
            for entry in live
            if any(
                words & set(normalize_term(name).split()) for name in (entry.term, *entry.aliases)
            )
        ]
        terms = {normalize_term(entry.term): entry.term for entry in live}
        for close in difflib.get_close_matches(normalize_term(query), list(terms), n=limit):
            if terms[close] not in found:
                found.append(terms[close])
        if not found:
            for hit in self.search(query, limit=limit):
                if hit.entry.term not in found:
                    found.append(hit.entry.term)
        return found[:limit]

    def unknown_name(self, query: str, advice: str = "") -> str:
        """The line that says no entry is named ``query``, with ``advice`` in brackets and the
        names most likely meant (`names_like`): `why`, `lineage` and `snapshots` word it alike."""
        said = f"no glossary entry named {query.strip()!r}" + (f" ({advice})" if advice else "")
        suggestions = self.names_like(query)
        return said + (f"; did you mean: {', '.join(suggestions)}?" if suggestions else "")

    @guarded
    def live_names(self) -> list[tuple[int, str]]:
        """(entry id, name) for every term and alias of every live entry, for mention matching."""
        rows = self.conn.execute(
            "SELECT id, term FROM entry WHERE deleted = 0 AND merged_into IS NULL "
            "UNION ALL SELECT a.entry_id, a.alias FROM alias a JOIN entry e ON e.id = a.entry_id "
            "WHERE a.deleted = 0 AND e.deleted = 0 AND e.merged_into IS NULL ORDER BY 1, 2"
        ).fetchall()
        return [(row[0], row[1]) for row in rows]

    @guarded
    def integrity_problems(self) -> list[str]:
        """Invariants the store keeps, checked from scratch (read-only): foreign keys, unique
        live names, the FTS index matching the entries. One line per problem; an empty list
        means the store is sound."""
        problems: list[str] = []
        with self.reading():
            for row in self.conn.execute("PRAGMA foreign_key_check"):
                problems.append(f"foreign key: {row[0]} row {row[1]} points at a missing {row[2]}")
            owners: dict[str, int] = {}
            for entry_id, name in self.live_names():
                norm = normalize_term(name)
                if owners.setdefault(norm, entry_id) != entry_id:
                    problems.append(
                        f"name {norm!r} belongs to live entries E{owners[norm]} and E{entry_id}"
                    )
            indexed = {
                row[0]: (row[1], row[2], row[3])
                for row in self.conn.execute(
                    "SELECT rowid, term, aliases, definition FROM entry_fts"
                )
            }
            aliases = self.rows.aliases(None)
            for row in self.conn.execute("SELECT id, term, definition FROM entry"):
                expected = (row[1], " ; ".join(aliases.get(row[0], [])), row[2])
                if indexed.pop(row[0], None) != expected:
                    problems.append(f"full-text index out of date for entry E{row[0]}")
            problems.extend(f"full-text index row {rowid} has no entry" for rowid in indexed)
        return problems

    @guarded
    def entry_views(self, *, include_deleted: bool = False) -> list[EntryView]:
        """The current glossary with live provenance (what exports need), in id order."""
        with self.reading():
            entries = self.entries(include_deleted=include_deleted)
            rows = self.conn.execute(
                "SELECT * FROM provenance WHERE superseded_revision_id IS NULL "
                "ORDER BY entry_id, post_id, id"
            ).fetchall()
        provenance: dict[int, list[Provenance]] = {}
        for row in rows:
            provenance.setdefault(row["entry_id"], []).append(provenance_record(row))
        return [
            EntryView(**entry.model_dump(), provenance=provenance.get(entry.id, []))
            for entry in entries
        ]
