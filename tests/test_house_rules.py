"""The house rules CI enforces on the tree (read with `ast`, nothing imported): a file of pdyn/ has
at most 600 lines and a function at most 80; no module or test file is named `*_more` (a file
named after what it holds, not after when it was written); benchmarks do not import the tests."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _sources(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def long_functions(text: str, path: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`path:line name (n lines)` for each function (or method, or nested function) over `limit`
    lines, from its `def` to its last line."""
    found = []
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append(f"{path}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_file_of_pdyn_is_over_600_lines():
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _sources("pdyn")
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES]
    assert not long, f"files over {MAX_FILE_LINES} lines (split them by responsibility):\n  " + "\n  ".join(long)


def test_no_function_of_pdyn_is_over_80_lines():
    long = [f for p in _sources("pdyn") for f in long_functions(p.read_text(), str(p.relative_to(ROOT)))]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n  " + "\n  ".join(long)


@pytest.mark.parametrize("text, found", [
    ("def f():\n" + "    x = 1\n" * 79, []),
    ("def f():\n" + "    x = 1\n" * 80, ["m.py:1 f (81 lines)"]),
    ("class C:\n    async def g(self):\n" + "        x = 1\n" * 81, ["m.py:2 g (82 lines)"]),
])
def test_the_function_length_counts_from_def_to_the_last_line(text, found):
    assert long_functions(text, "m.py") == found


def test_no_file_is_named_more():
    named = [str(p.relative_to(ROOT)) for folder in ("pdyn", "tests", "benchmarks", "examples")
             for p in _sources(folder) if p.stem.endswith("_more")]
    assert not named, "files named *_more (fold each into its base file, or name it after what it holds):\n  " + \
        "\n  ".join(named)


def test_benchmarks_do_not_import_the_tests():
    """benchmarks/ and the model suite they share with tests/models (model_suite/) stand on their own."""
    bad = []
    for path in _sources("benchmarks") + _sources("model_suite"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                    if n == "tests" or n.startswith("tests.")]
    assert not bad, "benchmarks import from tests/ (move what both need to a module both import):\n  " + \
        "\n  ".join(bad)
