"""The glossary's entries (`store.glossary`): creating, changing, deleting, restoring and merging
them, and reading them (`EntryQueries`).

Every change goes through `transaction()` and writes, in the same transaction, one revision per
entry touched with the full entry state before and after (`rows.EntryRows.change`). Deletes are
soft, sources are superseded (never removed): nothing is ever erased. Every public mutating method
runs in `transaction()`: alone it is atomic, inside an outer ``with store.transaction():`` (the
scene transaction) it joins it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store.base import StoreConnection, dump_json, guarded
from terrarium_dagster.store.inputs import (
    Actor,
    check_actor,
    clean_definition,
    clean_items,
    clean_name,
    clean_names,
    clean_reason,
    clean_status,
    clean_tags,
    parse_entry_id,
)
from terrarium_dagster.store.models import Entry, Provenance, ProvenanceIn
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.provenance import (
    ProvenanceRows,
    provenance_key,
    provenance_record,
)
from terrarium_dagster.store.queries import EntryQueries
from terrarium_dagster.store.rows import DEFAULT_STATE
from terrarium_dagster.store.wiki_links import any_target, tidy_links, without_links_to


def _add_names(
    term_norm: str, aliases: list[str], additions: Iterable[tuple[str, str]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Aliases plus those additions that are not already the term or an alias (normalized)."""
    taken = {normalize_term(alias) for alias in aliases} | {term_norm}
    result = list(aliases)
    added: list[tuple[str, str]] = []
    for surface, norm in additions:
        if norm in taken:
            continue
        taken.add(norm)
        result.append(surface)
        added.append((surface, norm))
    return result, added


class Glossary(EntryQueries):
    """The glossary's entries (`store.glossary`): its writes here, its reads in `EntryQueries`."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        self.sources = ProvenanceRows(store)

    @guarded
    def create_entry(
        self,
        actor: Actor,
        term: str,
        definition: str,
        *,
        tags: Iterable[str] = (),
        aliases: Iterable[str] = (),
        status: str = "tentative",
        provenance: Sequence[ProvenanceIn] = (),
        reason: str | None = None,
    ) -> Entry:
        """Create an entry. DuplicateTermError (naming the existing entry) when the term or an
        alias is already a name of a live entry; aliases equal to the term are dropped."""
        check_actor(actor)
        surface, norm = clean_name(term, "term")
        text = clean_definition(definition)
        chosen_status = clean_status(status)
        tag_list = clean_tags(tags)
        alias_list, alias_names = _add_names(norm, [], clean_names(aliases, "alias"))
        items = clean_items(provenance)
        reason = clean_reason(reason, required=False)
        with self.transaction():
            self.rows.check_free([(surface, norm), *alias_names], ())
            text = tidy_links(text, any_target)
            entry_id = self.insert(
                "entry",
                {
                    "term": surface,
                    "norm_term": norm,
                    "definition": text,
                    "status": chosen_status,
                    "tags": dump_json(tag_list),
                },
            )
            state = {
                **DEFAULT_STATE,
                "term": surface,
                "definition": text,
                "status": chosen_status,
                "tags": tag_list,
                "aliases": alias_list,
            }
            fresh = self.sources.new_items(entry_id, items)
            detail = {"provenance_added": len(fresh)} if fresh else None
            revision_id = self.rows.change(entry_id, None, state, actor, "create", reason, detail)
            self.sources.insert(
                entry_id, ((i.post_id, i.thread_id, i.quote, None) for i in fresh), revision_id
            )
            self.sources.refresh_seen([entry_id])
            return self.rows.load(entry_id)

    @guarded
    def update_entry(
        self,
        actor: Actor,
        entry_id: int,
        *,
        term: str | None = None,
        definition: str | None = None,
        tags: Iterable[str] | None = None,
        status: str | None = None,
        add_aliases: Iterable[str] = (),
        remove_aliases: Iterable[str] = (),
        provenance: Sequence[ProvenanceIn] = (),
        reason: str | None = None,
        action: str | None = None,
    ) -> Entry:
        """Change an entry (None/empty arguments leave a field as it is). A change that changes
        nothing writes no revision; `action` names the revision (default: `update`, or
        `provenance` when only sources were added). Deleted or merged entries are refused
        (StoreError)."""
        check_actor(actor)
        entry_id = parse_entry_id(entry_id)
        new_name = None if term is None else clean_name(term, "term")
        text = None if definition is None else clean_definition(definition)
        tag_list = None if tags is None else clean_tags(tags)
        new_status = None if status is None else clean_status(status)
        additions = clean_names(add_aliases, "alias")
        removals = clean_names(remove_aliases, "alias")
        items = clean_items(provenance)
        reason = clean_reason(reason, required=False)
        with self.transaction():
            row, old = self.rows.current_state(entry_id)
            self.rows.guard_changeable(row, "changing it")
            new = dict(old)
            to_check: list[tuple[str, str]] = []
            term_norm = normalize_term(old["term"])
            if new_name is not None:
                new["term"], new_norm = new_name
                if new_norm != term_norm:
                    to_check.append(new_name)
                term_norm = new_norm
            if text is not None:
                new["definition"] = tidy_links(text, any_target)
            if tag_list is not None:
                new["tags"] = tag_list
            if new_status is not None:
                new["status"] = new_status
            aliases = list(old["aliases"])
            for surface, norm in removals:
                position = next(
                    (i for i, alias in enumerate(aliases) if normalize_term(alias) == norm), None
                )
                if position is None:
                    raise InputError(
                        f"{surface!r} is not an alias of entry E{entry_id} {old['term']!r}"
                    )
                del aliases[position]
            aliases = [alias for alias in aliases if normalize_term(alias) != term_norm]
            new["aliases"], added = _add_names(term_norm, aliases, additions)
            to_check.extend(added)
            self.rows.check_free(to_check, {entry_id})
            fresh = self.sources.new_items(entry_id, items)
            if new == old and not fresh:
                return self.rows.load(entry_id)
            chosen = action or ("update" if new != old else "provenance")
            detail = {"provenance_added": len(fresh)} if fresh else None
            revision_id = self.rows.change(entry_id, old, new, actor, chosen, reason, detail)
            if fresh:
                self.sources.insert(
                    entry_id,
                    ((i.post_id, i.thread_id, i.quote, None) for i in fresh),
                    revision_id,
                )
                self.sources.extend_seen(entry_id, fresh)
            return self.rows.load(entry_id)

    @guarded
    def add_alias(
        self, actor: Actor, entry_id: int, alias: str, reason: str | None = None
    ) -> Entry:
        """Add one alias (a no-op if it already is the term or an alias of this entry)."""
        return self.update_entry(
            actor, entry_id, add_aliases=[alias], reason=reason, action="alias"
        )

    @guarded
    def add_provenance(
        self,
        actor: Actor,
        entry_id: int,
        items: Sequence[ProvenanceIn],
        reason: str | None = None,
    ) -> list[Provenance]:
        """Record sources of an entry; returns the live provenance rows for ``items`` (already
        recorded ones are not recorded twice and write no revision)."""
        cleaned = clean_items(items)
        entry_id = parse_entry_id(entry_id)
        with self.transaction():
            self.update_entry(
                actor, entry_id, provenance=cleaned, reason=reason, action="provenance"
            )
            by_key = {
                provenance_key(row["post_id"], row["thread_id"], row["quote"]): provenance_record(
                    row
                )
                for row in self.sources.live(entry_id)
            }
            return [by_key[provenance_key(i.post_id, i.thread_id, i.quote)] for i in cleaned]

    @guarded
    def delete_entry(self, actor: Actor, entry_id: int, reason: str) -> Entry:
        """Soft-delete an entry (its rows, aliases and provenance stay; its names become free)."""
        check_actor(actor)
        entry_id = parse_entry_id(entry_id)
        why = clean_reason(reason, required=True, what="reason for the delete")
        with self.transaction():
            row, old = self.rows.current_state(entry_id)
            if row["deleted"]:
                raise StoreError(
                    f"entry E{entry_id} {row['term']!r} is already deleted ({row['delete_reason']})"
                )
            new = {**old, "deleted": True, "delete_reason": why}
            self.rows.change(entry_id, old, new, actor, "delete", why)
            return self.rows.load(entry_id)

    @guarded
    def restore_entry(self, actor: Actor, entry_id: int, reason: str | None = None) -> Entry:
        """Undo a soft delete. DuplicateTermError if another live entry took one of its names."""
        check_actor(actor)
        entry_id = parse_entry_id(entry_id)
        why = clean_reason(reason, required=False)
        with self.transaction():
            row, old = self.rows.current_state(entry_id)
            if not row["deleted"]:
                raise StoreError(f"entry E{entry_id} {row['term']!r} is not deleted")
            if row["merged_into"] is None:
                names = [(old["term"], normalize_term(old["term"]))]
                names += [(alias, normalize_term(alias)) for alias in old["aliases"]]
                self.rows.check_free(names, {entry_id})
            new = {**old, "deleted": False, "delete_reason": None}
            self.rows.change(entry_id, old, new, actor, "restore", why)
            return self.rows.load(entry_id)

    @guarded
    def merge_entries(self, actor: Actor, source_id: int, target_id: int, reason: str) -> Entry:
        """Merge ``source`` into ``target``: the source's term and aliases become aliases of the
        target, its tags join the target's, its live provenance rows are superseded and copied
        onto the target; the source becomes status 'merged' with ``merged_into`` = target (a
        redirect). Two revisions ('merged_into' on the source, 'merge' on the target) share a
        group id. Returns the target."""
        check_actor(actor)
        source_id, target_id = parse_entry_id(source_id), parse_entry_id(target_id)
        why = clean_reason(reason, required=True, what="reason for the merge")
        if source_id == target_id:
            raise InputError(f"cannot merge entry E{source_id} into itself")
        with self.transaction():
            source_row, old_source = self.rows.current_state(source_id)
            target_row, old_target = self.rows.current_state(target_id)
            self.rows.guard_changeable(source_row, "merging it")
            self.rows.guard_changeable(target_row, "merging into it")
            names = [(old_source["term"], normalize_term(old_source["term"]))]
            names += [(alias, normalize_term(alias)) for alias in old_source["aliases"]]
            target_aliases, _ = _add_names(
                normalize_term(old_target["term"]), old_target["aliases"], names
            )
            new_target = {
                **old_target,
                "aliases": target_aliases,
                "tags": clean_tags([*old_target["tags"], *old_source["tags"]]),
                # the source's names are the target's now: its definition no longer lists
                # them as other things (its company); the revision keeps the old text
                "definition": without_links_to(
                    old_target["definition"], [name for name, _ in names]
                ),
            }
            new_source = {**old_source, "status": "merged", "merged_into": target_id}
            moving = self.sources.live(source_id)
            # The target cites a post once: a moved row for a post it already cites is
            # superseded with the source's rows (kept, not copied), so a merge never lists one
            # post twice among the target's sources.
            target_posts = {row["post_id"] for row in self.sources.live(target_id)}
            copies: list[tuple[int, int, str, int | None]] = []
            for row in moving:
                if row["post_id"] not in target_posts:
                    target_posts.add(row["post_id"])
                    copies.append((row["post_id"], row["thread_id"], row["quote"], row["id"]))
            source_revision = self.rows.change(
                source_id,
                old_source,
                new_source,
                actor,
                "merged_into",
                why,
                {"target": target_id, "provenance_moved": len(moving)},
            )
            self.conn.execute("UPDATE revision SET group_id = id WHERE id = ?", (source_revision,))
            target_revision = self.rows.change(
                target_id,
                old_target,
                new_target,
                actor,
                "merge",
                why,
                {"source": source_id, "provenance_added": len(copies)},
                group_id=source_revision,
            )
            self.sources.supersede((row["id"] for row in moving), source_revision)
            self.sources.insert(target_id, copies, target_revision)
            self.sources.refresh_seen([source_id, target_id])
            return self.rows.load(target_id)
