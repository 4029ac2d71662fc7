"""Exports of the glossary: JSON, YAML, a wiki (Markdown + HTML), lineage and the asset checks."""

from terrarium_dagster.exports.build import FORMATS, Exporter, build_export
from terrarium_dagster.exports.data import export_document
from terrarium_dagster.exports.glossary_checks import CheckResult, run_checks
from terrarium_dagster.exports.lineage import Lineage, lineage, render_lineage_text
from terrarium_dagster.exports.wiki import WikiReport, export_wiki

__all__ = [
    "FORMATS",
    "CheckResult",
    "Exporter",
    "Lineage",
    "WikiReport",
    "build_export",
    "export_document",
    "export_wiki",
    "lineage",
    "render_lineage_text",
    "run_checks",
]
