"""Shrinks a failing program while its failure signature (status and kind of difference) stays the
same, and prints the result as a ready-to-paste pytest test.

Passes, repeated until none makes progress or the budget runs out: cut the calls after the failing
one, drop earlier calls, delete statements (innermost and last first), hoist block bodies, drop
returned values, replace sub-expressions by one of their operands, drop unused parameters, and
make tensor arguments contiguous float32.
"""

from __future__ import annotations

import ast
import copy
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from tests.fuzz.program import Program, Stmt, T, literal
from tests.fuzz.runner import Outcome, run_program

Path = tuple[Any, ...]  # (index, "body" | "orelse", index, ...)


@dataclass
class Budget:
    seconds: float = 60.0
    runs: int = 400

    def __post_init__(self) -> None:
        self.start = time.monotonic()
        self.used = 0

    def left(self) -> bool:
        return self.used < self.runs and time.monotonic() - self.start < self.seconds


class Reducer:
    """Keeps the smallest program seen that still fails with `signature`."""

    def __init__(self, program: Program, outcome: Outcome, backend: str, budget: Budget, timeout: float):
        self.best, self.outcome = program, outcome
        self.signature = outcome.signature()
        self.backend, self.budget, self.timeout = backend, budget, timeout

    def attempt(self, candidate: Program) -> bool:
        if not self.budget.left() or _same(candidate, self.best):
            return False
        self.budget.used += 1
        outcome = run_program(candidate, self.backend, self.timeout)
        if outcome.signature() != self.signature:
            return False
        self.best, self.outcome = candidate, outcome
        return True

    def run(self) -> Program:
        if self.outcome.call is not None:
            self.attempt(replace(self.best, calls=self.best.calls[: self.outcome.call + 1]))
        passes: list[Callable[[Program], Iterator[Program]]] = [
            drop_calls, delete_statements, hoist_blocks, drop_returns, simplify_expressions, drop_params,
            simplify_args]
        progress = True
        while progress and self.budget.left():
            progress = False
            for make in passes:
                progress |= self.first_pass(make)
        return self.best

    def first_pass(self, make: Callable[[Program], Iterator[Program]]) -> bool:
        """Tries candidates of one pass, restarting it on the new best after each success."""
        progress, again = False, True
        while again and self.budget.left():
            again = False
            for candidate in make(self.best):
                if self.attempt(candidate):
                    progress = again = True
                    break
        return progress


def reduce_program(program: Program, outcome: Outcome, backend: str, seconds: float = 60.0,
                   timeout: float = 10.0) -> tuple[Program, Outcome]:
    reducer = Reducer(program, outcome, backend, Budget(seconds), timeout)
    reducer.run()
    return reducer.best, reducer.outcome


def _same(a: Program, b: Program) -> bool:
    return a.function_source() == b.function_source() and a.calls == b.calls


# -- passes: each yields candidates, smallest change first -----------------------------------------------


def drop_calls(p: Program) -> Iterator[Program]:
    for i in range(len(p.calls) - 1):
        yield replace(p, calls=p.calls[:i] + p.calls[i + 1:])


def _paths(stmts: list[Stmt], prefix: Path = ()) -> list[Path]:
    out: list[Path] = []
    for i, s in enumerate(stmts):
        for branch in ("body", "orelse"):
            out += _paths(getattr(s, branch), prefix + (i, branch))
        out.append(prefix + (i,))
    return out


def _container(body: list[Stmt], path: Path) -> list[Stmt]:
    for i in range(0, len(path) - 1, 2):
        body = getattr(body[path[i]], path[i + 1])
    return body


def _edit(p: Program, path: Path, fn: Callable[[list[Stmt], int], None]) -> Program:
    body = copy.deepcopy(p.body)
    fn(_container(body, path), path[-1])
    return replace(p, body=body)


def delete_statements(p: Program) -> Iterator[Program]:
    for path in reversed(_paths(p.body)):
        yield _edit(p, path, lambda stmts, i: stmts.pop(i))


def hoist_blocks(p: Program) -> Iterator[Program]:
    for path in _paths(p.body):
        stmt = _container(p.body, path)[path[-1]]
        if not stmt.is_block():
            continue
        for branch in ("body", "orelse"):
            yield _edit(p, path, lambda stmts, i, b=branch: stmts.__setitem__(slice(i, i + 1), getattr(stmts[i], b)))
        if stmt.orelse:
            yield _edit(p, path, lambda stmts, i: setattr(stmts[i], "orelse", []))


def drop_returns(p: Program) -> Iterator[Program]:
    if p.return_style == "none":
        return
    yield replace(p, return_style="none", returns=[])
    for i in range(len(p.returns)):
        if len(p.returns) > 1:
            yield replace(p, returns=p.returns[:i] + p.returns[i + 1:])
    if p.return_style != "single" and len(p.returns) == 1:
        yield replace(p, return_style="single")


def simplify_expressions(p: Program) -> Iterator[Program]:
    for path in _paths(p.body):
        stmt = _container(p.body, path)[path[-1]]
        for text in expression_variants(stmt.text):
            yield _edit(p, path, lambda stmts, i, t=text: setattr(stmts[i], "text", t))
    for k, ret in enumerate(p.returns):
        for text in expression_variants(ret):
            yield replace(p, returns=p.returns[:k] + [text] + p.returns[k + 1:])


def expression_variants(text: str) -> list[str]:
    """`text` with one sub-expression replaced by one of its operands (`a + b` -> `a`, `f(x)` -> `x`)."""
    block = text.endswith(":")
    try:
        tree = ast.parse(text + " pass" if block else text)
    except SyntaxError:
        return []
    out = []
    nodes = _expressions(tree)
    for k, node in enumerate(nodes):
        for j, child in enumerate(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)):
            new = copy.deepcopy(tree)
            target = _expressions(new)[k]
            replacement = [c for c in ast.iter_child_nodes(target) if isinstance(c, ast.expr)][j]
            if isinstance(getattr(target, "ctx", None), ast.Store) or isinstance(replacement, ast.FormattedValue):
                continue
            if _swap(new, target, replacement):
                rendered = ast.unparse(new).splitlines()[0]
                if rendered != text:
                    out.append(rendered)
    return list(dict.fromkeys(out))


def _expressions(tree: ast.AST) -> list[ast.expr]:
    """Sub-expressions in walk order; f-string pieces stay whole (their parts are not expressions)."""
    whole = (ast.JoinedStr, ast.FormattedValue)
    return [n for n in ast.walk(tree) if isinstance(n, ast.expr) and not isinstance(n, whole)]


def _swap(tree: ast.AST, target: ast.AST, replacement: ast.AST) -> bool:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, name, replacement)
                return True
            if isinstance(value, list) and any(v is target for v in value):
                value[[id(v) for v in value].index(id(target))] = replacement
                return True
    return False


def drop_params(p: Program) -> Iterator[Program]:
    text = p.function_source().split("\n", 1)[1]
    for i, name in enumerate(p.params):
        if not _mentions(text, name):
            yield replace(p, params=p.params[:i] + p.params[i + 1:], calls=[c[:i] + c[i + 1:] for c in p.calls])


def _mentions(text: str, name: str) -> bool:
    import re

    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def simplify_args(p: Program) -> Iterator[Program]:
    for c, call in enumerate(p.calls):
        for a, arg in enumerate(call):
            if not isinstance(arg, T):
                continue
            plainer = [replace(arg, layout="c"), replace(arg, dtype="float32"), replace(arg, seed=0)]
            for plain in plainer:
                if plain != arg and (plain.dtype != arg.dtype) <= (arg.dtype == "float64"):
                    yield replace(p, calls=p.calls[:c] + [call[:a] + (plain,) + call[a + 1:]] + p.calls[c + 1:])


# -- the pytest test ----------------------------------------------------------------------------------------


def as_pytest(program: Program, outcome: Outcome, backend: str, name: str) -> str:
    """A self-contained test function (plus its imports) that fails while the bug is there."""
    source = "\n".join("        " + line if line else "" for line in program.function_source().splitlines())
    calls = "\n".join(f"        {literal(tuple(call))}," for call in program.calls)
    detail = outcome.detail.replace('"""', "'''")
    imports = "import math\n\n" if "math." in calls else ""
    return f'''{imports}from tests.fuzz.program import T
from tests.fuzz.runner import assert_matches_eager


def {name}():
    """{outcome.status} at call {outcome.call} (backend {backend}, seed {program.seed}):
    {detail}
    """
    source = """
{source}
    """
    calls = [
{calls}
    ]
    assert_matches_eager(source, calls, backend={backend!r}{', grad=True' if program.grad else ''})
'''
