"""Freeing a wrapper's buffers after their last use: `del` lines in the body of `call`, so a graph's
peak memory is what is live at once, not every buffer it ever made (a training graph's forward
makes many intermediates the backward does not keep; its backward, one gradient per value).

The body is the wrapper's lines after the size bindings: top-level statements at one indent, some
of them an `if`/`else` over phased launches (deeper lines and `else:` belong to the statement
above them). A name is deleted after the last statement that mentions it, where every path
through its statements defined it (a buffer made in one branch only dies with the call).
Returned names are never deleted, nor parameters, unless the call is boxed (`call(args)`, which
empties the caller's list: a training graph's backward, whose saved inputs then die as they are
used). `del` drops this frame's reference only: a tensor something else holds lives on.
"""

from __future__ import annotations

import re

INDENT = "    "
NAME = re.compile(r"\b[A-Za-z_]\w*\b")
ASSIGN = re.compile(r"\s*([A-Za-z_]\w*) = ")
TEMPORARY = re.compile(r"(buf|t|chk)\d+\w*")   # the lowering's buffer and torch-call names


def _statements(body: list[str]) -> list[list[str]]:
    """Top-level statements: a line at one indent starts one, unless it is an `else:`/`elif`."""
    out: list[list[str]] = []
    for line in body:
        top = line.startswith(INDENT) and not line.startswith(INDENT * 2)
        if top and not line.strip().startswith(("else", "elif")) or not out:
            out.append([line])
        else:
            out[-1].append(line)
    return out


def _names(lines: list[str]) -> set[str]:
    return {n for line in lines for n in NAME.findall(line.split("#")[0])}


def _surely_defined(statement: list[str]) -> set[str]:
    """Names every path through the statement assigns: a flat line's target, or a name assigned
    in each branch of an if/else."""
    if len(statement) == 1:
        m = ASSIGN.match(statement[0])
        return {m.group(1)} if m else set()
    branches: list[set[str]] = []
    for line in statement:
        if line.startswith(INDENT) and not line.startswith(INDENT * 2):  # `if ...:` / `else:`
            branches.append(set())
        elif branches and (m := ASSIGN.match(line)):
            branches[-1].add(m.group(1))
    has_else = any(line.strip().startswith("else") for line in statement)
    return set.intersection(*branches) if branches and has_else else set()


def free_dead(body: list[str], keep: set[str], owned: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """`body` with `del` lines after each temporary's last use (`keep`: parameters, outputs;
    `owned`: parameters the wrapper holds the only reference of, a boxed call's)."""
    statements = _statements(body)
    if not statements:
        return body
    defined: set[str] = set(owned)
    last: dict[str, int] = {}
    for i, statement in enumerate(statements):
        defined |= _surely_defined(statement)
        for name in _names(statement):
            last[name] = i
    dying: dict[int, list[str]] = {}
    for name, i in last.items():
        if name in defined and name not in keep and (TEMPORARY.fullmatch(name) or name in owned) \
                and i < len(statements) - 1:
            dying.setdefault(i, []).append(name)
    out: list[str] = []
    for i, statement in enumerate(statements):
        out += statement
        if i in dying:
            out.append(f"{INDENT}del {', '.join(sorted(dying[i]))}")
    return out
