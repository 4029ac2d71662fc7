"""The glossary as JSON and YAML: the same document, byte-stable for the same glossary.

A document is assembled from one text fragment per entry (`json_fragment`, `yaml_fragment`) and
its header, giving exactly the bytes a dump of the whole document gives; an incremental export
keeps the fragments of unchanged entries instead of dumping them again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml

from terrarium_dagster.exports.entry_records import Chapters, UrlForPost, glossary_document
from terrarium_dagster.exports.files import write_text_atomic
from terrarium_dagster.store.models import EntryView


def json_text(document: Mapping[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


# libyaml's emitter when PyYAML has it (about seven times faster than the pure-Python one, and the
# same text on the glossaries we tested); every YAML export goes through this one function.
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def yaml_text(document: Mapping[str, Any]) -> str:
    return yaml.dump(
        dict(document),
        Dumper=_DUMPER,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


_JSON_TAIL = "\n    0\n  ]\n}\n"


def json_fragment(record: Any) -> str:
    """One entry of the `entries` list as `json_text` indents it inside the document."""
    return "    " + json.dumps(record, ensure_ascii=False, indent=2).replace("\n", "\n    ")


def json_document_text(meta: Mapping[str, Any], fragments: Sequence[str]) -> str:
    """`json_text({"meta": meta, "entries": [...]})` from the entries' `json_fragment`s."""
    if not fragments:
        return json_text({"meta": meta, "entries": []})
    head = json_text({"meta": meta, "entries": [0]})
    return head[: -len(_JSON_TAIL)] + "\n" + ",\n".join(fragments) + "\n  ]\n}\n"


def yaml_fragment(record: Any) -> str:
    """One entry of the `entries` list as `yaml_text` writes it inside the document."""
    return yaml_text({"entries": [record]})[len("entries:\n") :]


def yaml_document_text(meta: Mapping[str, Any], fragments: Sequence[str]) -> str:
    """`yaml_text({"meta": meta, "entries": [...]})` from the entries' `yaml_fragment`s."""
    if not fragments:
        return yaml_text({"meta": meta, "entries": []})
    return yaml_text({"meta": meta}) + "entries:\n" + "".join(fragments)


def export_document(
    entries: Sequence[EntryView],
    path: str | Path,
    *,
    data_format: Literal["json", "yaml"],
    meta: Mapping[str, Any],
    url_for_post: UrlForPost | None = None,
    thread_titles: Mapping[int, str] | None = None,
    chapters: Chapters | None = None,
) -> Path:
    """Write ``{"meta": ..., "entries": [...]}`` as indented UTF-8 JSON or as YAML (safe_load
    gives equal data); returns the path."""
    document = glossary_document(
        entries,
        meta=meta,
        url_for_post=url_for_post,
        thread_titles=thread_titles,
        chapters=chapters,
    )
    target = Path(path)
    fragment, assemble = (
        (json_fragment, json_document_text)
        if data_format == "json"
        else (yaml_fragment, yaml_document_text)
    )
    records = document["entries"]
    write_text_atomic(target, assemble(document["meta"], [fragment(r) for r in records]))
    return target
