"""`terrarium status`: what a store holds — threads, entries, tokens, compactions, snapshots."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from terrarium_dagster.errors import InputError
from terrarium_dagster.glossary.store import GlossaryStore


def store_status(db: str) -> dict[str, Any]:
    """A JSON-able summary of the store at `db` (which must exist: status never creates one)."""
    if db != ":memory:" and not Path(db).expanduser().is_file():
        raise InputError(f"no annotator store at {db} (run `terrarium run` first)")
    with GlossaryStore(db) as store:
        states = store.thread_states()
        entries = store.entries(include_deleted=True)
        totals = store.agent_call_totals()
        by_status = Counter("deleted" if entry.deleted else entry.status for entry in entries)
        threads = [
            {
                "thread_id": state.thread_id,
                "key": state.thread_key,
                "status": state.status,
                "scenes_done": state.scenes_done,
                "scenes_total": state.scenes_total,
                "checkpoint_id": state.checkpoint_id,
            }
            for state in sorted(states, key=lambda item: item.position)
        ]
        return {
            "db": db,
            "threads": threads,
            "threads_by_status": dict(sorted(Counter(s.status for s in states).items())),
            "entries": len(entries),
            "entries_by_status": dict(sorted(by_status.items())),
            "revisions": store.last_revision_id(),
            "calls": totals.calls,
            "prompt_tokens": totals.prompt_tokens,
            "cached_tokens": totals.cached_tokens,
            "completion_tokens": totals.completion_tokens,
            "cache_hit_rate": round(totals.cache_hit_rate, 4),
            "compactions": len(store.compactions()),
            "snapshots": len(store.checkpoints()),
        }


def render_status(report: dict[str, Any]) -> str:
    lines = [f"store {report['db']}"]
    by_status = ", ".join(f"{k} {v}" for k, v in report["threads_by_status"].items()) or "none"
    lines.append(f"threads: {len(report['threads'])} ({by_status})")
    for thread in report["threads"]:
        lines.append(
            f"  {thread['key']:<22} {thread['status']:<10} "
            f"scenes {thread['scenes_done']}/{thread['scenes_total']}"
        )
    entries = ", ".join(f"{k} {v}" for k, v in report["entries_by_status"].items()) or "none"
    lines.append(f"entries: {report['entries']} ({entries}); revisions: {report['revisions']}")
    lines.append(
        f"model calls: {report['calls']}; tokens: prompt {report['prompt_tokens']} "
        f"(cached {report['cached_tokens']}, {report['cache_hit_rate']:.0%}), "
        f"completion {report['completion_tokens']}"
    )
    lines.append(f"compactions: {report['compactions']}; snapshots: {report['snapshots']}")
    return "\n".join(lines)
