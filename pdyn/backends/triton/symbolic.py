"""Symbolic sizes for the Triton backend, as the tracer stamped them (pdyn/shapes/graph_meta.py): every
node's sympy sizes, the strides of inputs whose guard fixes them, and the Python expression over
the call's arguments that binds each size symbol. Nothing here re-derives a size: what the entry's
guards check holds on every call the backend sees.

Owns: reading the stamps into a `SymbolicGraph`, the loop index symbols, the index helpers
(floor division and modulo of non-negative indices) and the printers for sizes (wrapper) and
indices (kernels), both over pdyn's sympy functions.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
import torch.fx

from pdyn.shapes.graph_meta import EXPR, SIZE_NODE, SIZES, STRIDES, SYMBOLS, GraphSymbols
from pdyn.sources import Source
from pdyn.shapes.shape_env import FloorDiv, ShapeEnv, evaluate, to_python

INDEX_PREFIXES = ("x", "r")


def index_var(prefix: str, i: int) -> sympy.Symbol:
    """Loop index symbols: x0, x1 (output dims) and r0, r1 (reduced dims); never collide with
    pdyn's size symbols (s*), stride symbols (a*_st*) or kernel size args (ks*)."""
    return sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True)


def sym_expr(value: Any) -> sympy.Expr:
    """A size (int or sympy) as sympy."""
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, (bool, int)):
        return sympy.Integer(int(value))
    raise TypeError(f"not a size: {value!r}")


def floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return a if b == 1 else FloorDiv(a, b)


def moddim(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """a % b for index arithmetic (both ≥ 0)."""
    return sympy.Integer(0) if b == 1 else sympy.Mod(a, b)


class KernelPrinter(sympy.printing.str.StrPrinter):
    """Index expressions as Triton text; every operand of // and % is a non-negative index or size,
    so Triton's truncating division equals floor division here."""

    def _print_FloorDiv(self, expr: sympy.Expr) -> str:
        a, b = expr.args
        return f"({self._operand(a)} // {self._operand(b)})"

    def _print_CeilDiv(self, expr: sympy.Expr) -> str:
        a, b = expr.args
        return f"(({self._operand(a)} + {self._operand(b)} - 1) // {self._operand(b)})"

    def _print_Mod(self, expr: sympy.Expr) -> str:
        a, b = expr.args
        return f"({self._operand(a)} % {self._operand(b)})"

    def _print_Pow(self, expr: sympy.Expr, rational: bool = False) -> str:
        base, exp = expr.args
        if exp.is_Integer and int(exp) > 0:
            return "*".join([self._operand(base)] * int(exp))
        raise TypeError(f"no Triton text for index {expr}")

    def _print_Min(self, expr: sympy.Expr) -> str:
        return self._nested("tl.minimum", expr.args)

    def _print_Max(self, expr: sympy.Expr) -> str:
        return self._nested("tl.maximum", expr.args)

    def _nested(self, fn: str, args: tuple[sympy.Expr, ...]) -> str:
        text = self.doprint(args[0])
        for a in args[1:]:
            text = f"{fn}({text}, {self.doprint(a)})"
        return text

    def _operand(self, e: sympy.Expr) -> str:
        text = self.doprint(e)
        return text if e.is_Atom or e.func.__name__ in ("FloorDiv", "CeilDiv", "Mod") else f"({text})"

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return expr.name


KERNEL_PRINTER = KernelPrinter({"order": "none"})  # terms as built: the index first


def pexpr(expr: Any) -> str:
    """A size as a Python expression over the wrapper's bound symbols (pdyn's guard printer)."""
    return to_python(sympy.sympify(expr))


@dataclass
class SymbolicGraph:
    """The tracer's stamps, per node: example value (a fake on the example's sizes, for dtype and
    device), sympy sizes, a size node's value; and how the wrapper binds each size symbol."""

    values: dict[torch.fx.Node, Any]
    sizes: dict[torch.fx.Node, Any]
    exprs: dict[torch.fx.Node, sympy.Expr]
    input_strides: dict[torch.fx.Node, tuple[sympy.Expr, ...] | None]
    bindings: list[tuple[sympy.Symbol, str]]  # symbol, Python expression over the call's args
    hints: dict[sympy.Symbol, int] = field(default_factory=dict)
    facts: list[sympy.Basic] = field(default_factory=list)  # hold on every call (the guards say so)
    sources: list[Source] = field(default_factory=list)     # each placeholder's source

    def hints_env(self) -> ShapeEnv:
        """pdyn's ShapeEnv over the example's sizes, for the shape functions that ask for hints."""
        return ShapeEnv(hints=dict(self.hints))

    def hint(self, expr: sympy.Expr, fallback: int = 8192) -> int:
        """A size's value in the example call (a size with no hint gets `fallback`)."""
        try:
            return int(evaluate(sympy.sympify(expr), self.hints))
        except (TypeError, ValueError, KeyError):
            return fallback


class NotSymbolic(Exception):
    """The graph carries no stamps the backend can use (not traced by pdyn, or a node unstamped)."""


def read_stamps(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> SymbolicGraph:
    symbols = gm.meta.get(SYMBOLS)
    if not isinstance(symbols, GraphSymbols):
        raise NotSymbolic("the graph has no sizes from pdyn's tracer")
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise NotSymbolic(f"{len(placeholders)} placeholders but {len(example_inputs)} inputs")
    graph = SymbolicGraph({}, {}, {}, {}, _bindings(symbols), dict(symbols.hints), list(symbols.facts),
                          list(symbols.sources))
    for node in gm.graph.nodes:
        _read_node(graph, node)
    for node, value in zip(placeholders, example_inputs):
        graph.values.setdefault(node, value)
        graph.input_strides[node] = node.meta.get(STRIDES)
        if isinstance(value, torch.Tensor) and node not in graph.sizes:
            raise NotSymbolic(f"input {node.name} has no stamped sizes")
    return graph


def _bindings(symbols: GraphSymbols) -> list[tuple[sympy.Symbol, str]]:
    out = []
    for symbol, b in symbols.bindings.items():
        out.append((symbol, f"a{b.placeholder}" if b.dim is None else f"a{b.placeholder}.shape[{b.dim}]"))
    return out


def _read_node(graph: SymbolicGraph, node: torch.fx.Node) -> None:
    meta = node.meta
    if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) \
            and isinstance(graph.values.get(node.args[0]), (tuple, list)) and isinstance(node.args[1], int):
        parent, i = node.args
        graph.values[node] = graph.values[parent][i]
        items = graph.sizes.get(parent)
        if isinstance(items, tuple) and i < len(items) and items[i] is not None:
            graph.sizes[node] = items[i]
        return
    if "example_value" in meta:
        graph.values[node] = meta["example_value"]
    if meta.get(SIZES) is not None:
        graph.sizes[node] = meta[SIZES]
    if meta.get(EXPR) is not None:
        graph.exprs[node] = meta[EXPR]


def is_size_node(node: torch.fx.Node) -> bool:
    """A node computing a size from other sizes (`x.size(1) * 2`), not a tensor."""
    return bool(node.meta.get(SIZE_NODE)) or (node.op == "placeholder" and EXPR in node.meta)


def multiple_of_16(expr: sympy.Expr) -> bool:
    """Whether a size is a multiple of 16 for every value of its symbols: each term of its
    expansion an integer coefficient divisible by 16 times integer-valued factors (a product of
    sizes, floor divisions, powers with non-negative exponents). False when unsure."""
    for term in sympy.Add.make_args(sympy.expand(sympy.sympify(expr))):
        coeff, rest = term.as_coeff_Mul()
        if not coeff.is_Integer or int(coeff) % 16:
            return False
        for factor in sympy.Mul.make_args(rest):
            base, exp = factor.as_base_exp()
            if not (exp.is_Integer and int(exp) >= 0 and base.is_integer is True):
                return False
    return True
