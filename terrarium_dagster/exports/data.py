"""The glossary as JSON and YAML: the same document, byte-stable for the same glossary."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from terrarium_dagster.exports.files import write_text_atomic
from terrarium_dagster.exports.records import UrlForPost, glossary_document
from terrarium_dagster.glossary.models import EntryView


def json_text(document: Mapping[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def yaml_text(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(
        dict(document), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )


def export_json(
    entries: Sequence[EntryView],
    path: str | Path,
    *,
    meta: Mapping[str, Any],
    url_for_post: UrlForPost | None = None,
    thread_titles: Mapping[int, str] | None = None,
) -> Path:
    """Write ``{"meta": ..., "entries": [...]}`` as indented UTF-8 JSON; returns the path."""
    return _export(json_text, entries, path, meta, url_for_post, thread_titles)


def export_yaml(
    entries: Sequence[EntryView],
    path: str | Path,
    *,
    meta: Mapping[str, Any],
    url_for_post: UrlForPost | None = None,
    thread_titles: Mapping[int, str] | None = None,
) -> Path:
    """Write the same document as `export_json`, as YAML (safe_load gives equal data)."""
    return _export(yaml_text, entries, path, meta, url_for_post, thread_titles)


def _export(
    render: Callable[[Mapping[str, Any]], str],
    entries: Sequence[EntryView],
    path: str | Path,
    meta: Mapping[str, Any],
    url_for_post: UrlForPost | None,
    thread_titles: Mapping[int, str] | None,
) -> Path:
    document = glossary_document(
        entries, meta=meta, url_for_post=url_for_post, thread_titles=thread_titles
    )
    target = Path(path)
    write_text_atomic(target, render(document))
    return target
