"""The layering contract in pyproject.toml (`[tool.importlinter]`), checked with import-linter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_imports_point_down_and_only_defs_imports_dagster() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 9 kept, 0 broken." in done.stdout
    assert "No import circle in context/ (type-only imports included) KEPT" in done.stdout
    assert "No import circle in store/ (type-only imports included) KEPT" in done.stdout
    assert "No import circle in agent/ (type-only imports included) KEPT" in done.stdout
    assert "No import circle in model/ (type-only imports included) KEPT" in done.stdout
    assert "No import circle in corpus/importers/ (type-only imports included) KEPT" in done.stdout
    assert "terms/ imports one way: candidates, text_search, english KEPT" in done.stdout


def test_no_test_module_imports_another() -> None:
    """Shared test code lives in tests/support/; a test module never imports another one."""
    offenders: list[str] = []
    for path in sorted((REPO / "tests").glob("test_*.py")) + sorted(
        (REPO / "benchmarks").glob("*.py")
    ):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            offenders += [
                f"{path.relative_to(REPO)} imports {name}"
                for name in names
                if name.startswith("tests.test_")
            ]
    assert offenders == []
