"""Engine reports as Dagster metadata: numbers, and the touched entries with links to their posts.

Dagster's lineage stops at partitions, so every annotation materialization carries a small table of
the entries the thread touched and a Markdown version of it whose sources are links to the posts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import dagster as dg

from terrarium_dagster.corpus.quote_links import site_entry_url, site_search_url
from terrarium_dagster.curation.decisions import CurationReport
from terrarium_dagster.reports import (
    CurationDecisionRow,
    ExportReport,
    SourceLink,
    ThreadReport,
    TouchedEntry,
)

MAX_TOUCHED_ROWS = 50
MAX_LINKED_ENTRIES = 10

TOUCHED_SCHEMA = dg.TableSchema(
    columns=[
        # the link before the columns that wrap: a table wider than the page is cut at its
        # right edge, and a URL cannot wrap
        dg.TableColumn("entry", "string", description="entry id as the agent sees it"),
        dg.TableColumn("term", "string"),
        dg.TableColumn("first_source_url", "string", description="the first source's post"),
        dg.TableColumn("change", "string", description="created, updated or deleted"),
        dg.TableColumn("status", "string"),
        dg.TableColumn(
            "sources",
            "string",
            description="its first sources: >>post_id in a quest, chapter and paragraph in a book",
        ),
    ]
)


def annotation_metadata(report: ThreadReport, *, site_url: str | None = None) -> dict[str, Any]:
    """What one thread's annotation did, for its `thread_annotations` materialization; with
    `site_url`, links to the reader's site as of this thread and to the touched entries' pages."""
    metadata: dict[str, Any] = {
        "thread_id": report.thread_id,
        "title": report.title,
        "scenes": report.scenes,
        "scenes_annotated": report.scenes_annotated,
        "already_done": report.already_done,
        "entries_created": len(report.created),
        "entries_updated": len(report.updated),
        "entries_deleted": len(report.deleted),
        **token_metadata(report),
        "compactions": report.compactions,
        "duration_s": dg.MetadataValue.float(report.duration_s),
        "completion_tokens_per_s": dg.MetadataValue.float(report.completion_tokens_per_s),
        "requests_in_flight_peak": report.in_flight_peak,
        "snapshot_id": _int_or_null(report.snapshot_id),
        "touched_entries": touched_table(report.touched),
        "lineage": dg.MetadataValue.md(touched_markdown(report.touched)),
    }
    # Clickable in the asset's page itself (table cells and Markdown need a pop-up): the entry
    # pages of the first touched entries on the reader's site, as of this thread, where each
    # source links to its post (`terrarium serve`); without a site, their first source post.
    if site_url:
        metadata.update(site_links(site_url, report.thread_key))
    for item in report.touched[:MAX_LINKED_ENTRIES]:
        label = f"{item.term} (E{item.entry_id})"
        if site_url and item.action != "deleted":
            url = site_entry_url(site_url, item.entry_id, upto=report.thread_key)
            metadata[f"entry · {label}"] = dg.MetadataValue.url(url)
            continue
        source = next((source.url for source in item.sources if source.url), None)
        if source:
            metadata[f"source · {label}"] = dg.MetadataValue.url(source)
    if report.rewound_threads:
        metadata["rewound_threads"] = dg.MetadataValue.json(list(report.rewound_threads))
    metadata["suspect"] = report.suspect is not None
    if report.suspect:
        metadata["suspect_reason"] = dg.MetadataValue.text(report.suspect)
    return metadata


DECISION_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("id", "int", description="decision id: `terrarium undo --decision ID`"),
        dg.TableColumn("term", "string"),
        dg.TableColumn("decision", "string", description="CONFIRM, REJECT, MERGE, REVISE, …"),
        dg.TableColumn("target", "string", description="the entry a MERGE went into"),
        dg.TableColumn("reasoning", "string"),
    ]
)


def site_links(site_url: str, thread_key: str | None) -> dict[str, Any]:
    """The reader's site as of the thread, and its search for any entry across threads."""
    return {
        "glossary_site": dg.MetadataValue.url(site_search_url(site_url, upto=thread_key)),
        "find_an_entry": dg.MetadataValue.url(site_search_url(site_url)),
    }


def curation_metadata(
    report: CurationReport,
    decisions: Sequence[CurationDecisionRow] = (),
    *,
    site_url: str | None = None,
    thread_key: str | None = None,
) -> dict[str, Any]:
    """The curator's decisions on one thread's tentative entries, as a readable table; with
    `site_url`, links to the reader's site (as of the thread, its search across every thread)
    and to the decided entries' pages."""
    metadata: dict[str, Any] = {
        "thread_id": report.thread_id,
        "reviewed": len(report.reviewed),
        "confirmed": len(report.confirmed),
        "rejected": len(report.rejected),
        "merged": len(report.merged),
        "revised": len(report.revised),
        "left_tentative": len(report.left_tentative),
        "problems": len(report.problems),
        "decisions": dg.MetadataValue.table(
            [
                dg.TableRecord(
                    {
                        "id": row.decision_id,
                        "term": row.term,
                        "decision": row.decision,
                        "target": row.target,
                        "reasoning": row.reasoning,
                    }
                )
                for row in decisions[:MAX_TOUCHED_ROWS]
            ],
            schema=DECISION_SCHEMA,
        ),
        **token_metadata(report),
    }
    if site_url:
        metadata.update(site_links(site_url, thread_key))
        linked: dict[int, str] = {}
        for row in decisions:
            # a MERGE's entry is gone into its target: link where the name now lives
            entry_id = row.target_entry_id if row.decision == "MERGE" else row.entry_id
            target = row.target if row.decision == "MERGE" else row.term
            if entry_id is None or row.decision == "REJECT" or entry_id in linked:
                continue
            if len(linked) == MAX_LINKED_ENTRIES:
                break
            linked[entry_id] = target
            metadata[f"entry · {target}"] = dg.MetadataValue.url(
                site_entry_url(site_url, entry_id, upto=thread_key)
            )
    if report.problems:
        metadata["problem_list"] = dg.MetadataValue.md(
            "\n".join(f"- {_cell(problem)}" for problem in report.problems)
        )
    return metadata


def export_metadata(report: ExportReport, out_dir: Path, *, site_url: str) -> dict[str, Any]:
    """Where a thread's export is: an http link (`terrarium serve`), the folder, its files."""
    base = f"{site_url}/exports/{quote(out_dir.name)}/"
    metadata: dict[str, Any] = {
        "export": dg.MetadataValue.url(base),
        "path": dg.MetadataValue.path(str(out_dir)),
        "entries": report.entries,
        "files": len(report.files),
        "file_list": dg.MetadataValue.json(sorted(report.files)),
        "unresolved_references": dg.MetadataValue.json(list(report.unresolved_references)),
        **site_links(site_url, out_dir.name),
    }
    index = _wiki_index(out_dir, report.files)
    if index is not None:
        metadata["wiki_index"] = dg.MetadataValue.url(
            base + quote(index.relative_to(out_dir).as_posix())
        )
    return metadata


def token_metadata(report: Any) -> dict[str, Any]:
    """Model calls and tokens, with the share of prompt tokens served from the prefix cache."""
    prompt = int(report.prompt_tokens)
    cached = int(report.cached_tokens)
    return {
        "model_calls": int(report.calls),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "completion_tokens": int(report.completion_tokens),
        "cache_hit_rate": dg.MetadataValue.float(round(cached / prompt, 4) if prompt else 0.0),
    }


def touched_table(touched: Sequence[TouchedEntry]) -> dg.TableMetadataValue:
    rows = [
        dg.TableRecord(
            {
                "entry": f"E{item.entry_id}",
                "term": item.term,
                "first_source_url": _post_address(
                    next((source.url for source in item.sources if source.url), "")
                ),
                "change": item.action,
                "status": item.status,
                "sources": "; ".join(source.label for source in item.sources),
            }
        )
        for item in touched[:MAX_TOUCHED_ROWS]
    ]
    return dg.MetadataValue.table(rows, schema=TOUCHED_SCHEMA)


def _post_address(url: str) -> str:
    """A post's link without the quote to highlight (`?q=`): short enough for a table cell
    (a long quote made the table wider than the page, which clipped this column)."""
    return url.split("?q=", 1)[0]


def touched_markdown(touched: Sequence[TouchedEntry]) -> str:
    """A Markdown table of the touched entries whose sources link to the posts."""
    if not touched:
        return "No glossary entries were touched."
    lines = [
        "| entry | term | status | change | sources |",
        "|---|---|---|---|---|",
    ]
    for item in touched[:MAX_TOUCHED_ROWS]:
        lines.append(
            f"| E{item.entry_id} | {_cell(item.term)} | {item.status} | {item.action} "
            f"| {source_links(item.sources)} |"
        )
    hidden = len(touched) - MAX_TOUCHED_ROWS
    if hidden > 0:
        lines.append("")
        lines.append(f"… and {hidden} more (see `terrarium lineage TERM` or the export).")
    return "\n".join(lines)


def source_links(sources: Iterable[SourceLink]) -> str:
    parts = [
        f"[{_cell(source.label)}]({source.url})" if source.url else _cell(source.label)
        for source in sources
    ]
    return "; ".join(parts) or "—"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _int_or_null(value: int | None) -> Any:
    return dg.MetadataValue.null() if value is None else value


def _wiki_index(out_dir: Path, files: Sequence[str]) -> Path | None:
    for name in ("wiki/html/index.html", "wiki/index.html", "wiki/index.md"):
        candidate = out_dir / name
        if name in files or candidate.is_file():
            return candidate
    return None
