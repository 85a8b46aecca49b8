"""The suite's own layout: test modules share code only through tests/helpers/ (and conftest's
fixtures), never by importing one another, so that a test file can be renamed, split or deleted
without breaking another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, at any depth (function-level ones too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def imports_of_test_code(path: Path) -> list[str]:
    """The imports in path of a test module or of conftest (by module name or as tests.X)."""
    bad = []
    for line, module in imported_modules(path):
        parts = module.split(".")
        if parts[0] == "tests":
            parts = parts[1:]
        if parts and (parts[0].startswith("test_") or parts[0] == "conftest"):
            where = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path
            bad.append(f"{where}:{line}: imports {module}")
    return bad


def test_no_test_module_imports_another_test_module_or_conftest():
    files = sorted(TESTS.rglob("*.py"))
    assert any(p.name.startswith("test_") for p in files)
    bad = [found for path in files for found in imports_of_test_code(path)]
    assert not bad, "\n".join(bad)


def test_the_layout_check_finds_a_test_module_import(tmp_path):
    """The check above can fail: each way of importing test code is caught."""
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import test_data\nfrom tests.test_nmt import x\nfrom conftest import y\n"
        "def f():\n    from test_pivot import z\nfrom helpers.nmt import w\n",
        encoding="utf-8",
    )
    found = imports_of_test_code(sample)
    assert [line.split(": imports ")[1] for line in found] == [
        "test_data", "tests.test_nmt", "conftest", "test_pivot"
    ]  # fmt: skip


def test_helpers_hold_no_tests():
    """tests/helpers/ is imported, never collected: no test functions or classes there."""
    for path in sorted((TESTS / "helpers").glob("*.py")):
        assert not path.name.startswith("test_"), path.name
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name.startswith(("test", "Test"))
        ]
        assert not tests, (path.name, tests)
