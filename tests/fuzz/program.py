"""A generated program as data: statements (a tree the reducer can prune), parameters, returned
expressions and the call sequence; rendering to module source and building each call's arguments.

The generator (`generator.py`) fills these in; the runner (`runner.py`) executes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import torch

# Every program runs in a fresh module with these globals: the sink `print` writes to, the global
# counter and log the program mutates, and tables indexed by sizes. The runner compares the
# mutable ones after each call.
PRELUDE = '''\
import io
import math

import torch
import torch.nn.functional as F

import pdyn

SINK = io.StringIO()
COUNTER = 0
LOG = []
TABLE = [3, 1, 4, 1, 5, 9, 2, 6]
NAMES = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four"}
'''

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool}


@dataclass(frozen=True)
class T:
    """A tensor argument: its shape, dtype, the seed of its values and its layout ("c" contiguous,
    "t" last two dims transposed, "s" every other element of a wider tensor). Printed as a literal."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    seed: int = 0
    layout: str = "c"

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v, d in (("dtype", self.dtype, "float32"), ("seed", self.seed, 0),
                                                      ("layout", self.layout, "c")) if v != d)
        return f"T({self.shape!r}{extra})"

    def build(self) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed)
        shape = list(self.shape)
        if self.layout == "t" and len(shape) >= 2:
            shape[-1], shape[-2] = shape[-2], shape[-1]
        if self.layout == "s" and shape:
            shape[-1] *= 2
        base = _values(tuple(shape), self.dtype, gen)
        if self.layout == "t" and len(shape) >= 2:
            return base.transpose(-1, -2)
        if self.layout == "s" and shape:
            return base[..., ::2]
        return base


def _values(shape: tuple[int, ...], dtype: str, gen: torch.Generator) -> torch.Tensor:
    if dtype == "int64":
        return torch.randint(-4, 6, shape, generator=gen)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randn(shape, generator=gen, dtype=DTYPES[dtype])


def build_args(call: tuple[Any, ...]) -> list[Any]:
    """Fresh argument objects for one call (built anew for eager and for pdyn: no sharing)."""
    return [_build(a) for a in call]


def _build(spec: Any) -> Any:
    if isinstance(spec, T):
        return spec.build()
    if isinstance(spec, list):
        return [_build(v) for v in spec]
    if isinstance(spec, dict):
        return {k: _build(v) for k, v in spec.items()}
    if isinstance(spec, tuple):
        return tuple(_build(v) for v in spec)
    return spec


def literal(value: Any) -> str:
    """Python source for an argument spec; floats keep -0.0, nan and inf readable."""
    if isinstance(value, float):
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


@dataclass
class Stmt:
    """One statement: a simple line, or a block header (`if ...:`, `for ...:`) with a body and an
    optional else branch. The reducer deletes statements and hoists bodies."""

    text: str
    body: list[Stmt] = field(default_factory=list)
    orelse: list[Stmt] = field(default_factory=list)

    def is_block(self) -> bool:
        return self.text.endswith(":")

    def render(self, indent: int) -> list[str]:
        pad = "    " * indent
        lines = [pad + self.text]
        if not self.is_block():
            return lines
        lines += render_block(self.body, indent + 1)
        if self.orelse:
            lines.append(pad + "else:")
            lines += render_block(self.orelse, indent + 1)
        return lines


def render_block(stmts: list[Stmt], indent: int) -> list[str]:
    lines = [line for s in stmts for line in s.render(indent)]
    return lines or ["    " * indent + "pass"]


@dataclass
class Program:
    """A function `f(params)` with a body and returned expressions, plus the calls to make."""

    params: list[str]
    body: list[Stmt]
    returns: list[str]
    calls: list[tuple[Any, ...]]
    seed: int = 0
    return_style: str = "tuple"  # "tuple", "single", "dict" or "none"
    grad: bool = False  # float tensor arguments require grad; gradients are compared too (runner.py)

    def function_source(self) -> str:
        lines = [f"def f({', '.join(self.params)}):", "    global COUNTER"]
        lines += render_block(self.body, 1)
        lines.append("    " + self.return_line())
        return "\n".join(lines) + "\n"

    def return_line(self) -> str:
        if self.return_style == "none" or not self.returns:
            return "return None"
        if self.return_style == "single" or len(self.returns) == 1:
            return f"return {self.returns[0]}"
        if self.return_style == "dict":
            return "return {" + ", ".join(f"'r{i}': {r}" for i, r in enumerate(self.returns)) + "}"
        return f"return ({', '.join(self.returns)})"

    def source(self) -> str:
        return PRELUDE + "\n\n" + self.function_source()

    def with_changes(self, **changes: Any) -> Program:
        return replace(self, **changes)
