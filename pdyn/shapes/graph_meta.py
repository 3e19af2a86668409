"""What the tracer tells a backend about its graph, beyond the fx graph itself: each node's
symbolic sizes, the strides of inputs whose guard fixes them, and where each size symbol is read
from at run time. A backend reads these instead of re-deriving sizes (one symbolic world).

Stamped while tracing (`OutputGraph` calls the `stamp_*` functions) and finished once the trace is
done (`finish`, called by compile_frame before the backend), when unifications and pinned sizes
are known and every stamped expression is rewritten in the trace's final symbols.

    node.meta["pdyn_sizes"]    a tensor's sizes (tuple of sympy); for a tuple result, one entry per
                               item (None for an item that is no tensor)
    node.meta["pdyn_strides"]  a tensor input's strides where its TensorGuard fixes them, else None
    node.meta["pdyn_expr"]     a size node's value (an int-valued sympy expression)
    gm.meta["pdyn_symbols"]    GraphSymbols
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch
import torch.fx

from pdyn.sources import Source
from pdyn.shapes.shape_env import ShapeEnv

SIZES = "pdyn_sizes"
STRIDES = "pdyn_strides"
EXPR = "pdyn_expr"
SYMBOLS = "pdyn_symbols"
SIZE_NODE = "pdyn_sym"  # set by SymIntVariable on the nodes that compute sizes
UNBACKED = "pdyn_unbacked"  # on a node whose result gives data-dependent sizes: (symbol, item, dim)


@dataclass(frozen=True)
class SymbolBinding:
    """Where a symbol's value is read in a call of the graph: `placeholder`'s size `dim`, or the
    int placeholder itself (dim None). `source` names that input for people and guards."""

    placeholder: int
    dim: int | None
    source: Source


@dataclass
class GraphSymbols:
    """The size symbols of one graph: how to read each from the graph's inputs, its value in the
    example call, and the facts the trace's guards keep true (so a backend may assume them)."""

    bindings: dict[sympy.Symbol, SymbolBinding]
    hints: dict[sympy.Symbol, int]
    facts: list[sympy.Basic] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)  # the source of each placeholder, in order


def contiguous_strides(sizes: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    strides: list[sympy.Expr] = []
    acc: sympy.Expr = sympy.Integer(1)
    for size in reversed(sizes):
        strides.append(acc)
        acc = acc * size
    return tuple(reversed(strides))


def stamp_input(node: torch.fx.Node, value: torch.Tensor, sizes: tuple[sympy.Expr, ...]) -> None:
    """A tensor input: its sizes, and its strides where the TensorGuard pins them: all of them
    when every size is static, the contiguous ones when it is guarded contiguous
    (variables/builder.py makes that guard from the same facts)."""
    node.meta[SIZES] = tuple(sizes)
    if all(s.is_Integer for s in sizes):
        node.meta[STRIDES] = tuple(sympy.Integer(s) for s in value.stride())
    elif value.is_contiguous():
        node.meta[STRIDES] = contiguous_strides(tuple(sizes))
    else:
        node.meta[STRIDES] = None


def stamp_unbacked(node: torch.fx.Node, symbol: sympy.Symbol, dim: int | None) -> None:
    """Where a backend reads data-dependent size `symbol` once `node` has run: a getitem of a
    tuple or list result names its producer and the item."""
    item = None
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) and isinstance(node.args[1], int):
        node, item = node.args[0], node.args[1]
    node.meta.setdefault(UNBACKED, []).append((symbol, item, dim))


def stamp_int_input(node: torch.fx.Node, expr: sympy.Expr) -> None:
    node.meta[EXPR] = expr


def stamp_result(node: torch.fx.Node, example: Any, sizes: list[tuple[sympy.Expr, ...]]) -> None:
    """An op's result: `sizes` holds the symbolic sizes of its tensor outputs in order."""
    pending = list(sizes)
    if isinstance(example, torch.Tensor):
        node.meta[SIZES] = pending[0] if pending else None
    elif isinstance(example, (tuple, list)):
        node.meta[SIZES] = tuple(pending.pop(0) if isinstance(v, torch.Tensor) and pending else None
                                 for v in example)


def stamp_size_node(node: torch.fx.Node, expr: sympy.Basic, example: Any) -> None:
    """A node that computes a size, when it is made: its example, and its expression where it is
    an int (a float-valued size has its example only: a backend computes it with Python)."""
    node.meta[SIZE_NODE] = True
    node.meta.setdefault("example_value", example)
    if type(example) is int:
        node.meta[EXPR] = expr


def stamp_size_arguments(fx_args: Any, symbolic: Any, example: Any) -> None:
    """The value of each size node among an op's arguments (`fx_args` as recorded, `symbolic` and
    `example` the same arguments as the shape rule and the fake run saw them). A float-valued
    size node gets its example only: a backend computes it with Python."""
    if isinstance(fx_args, torch.fx.Node):
        if fx_args.meta.get(SIZE_NODE):
            fx_args.meta.setdefault("example_value", example)
            if type(example) is int and isinstance(symbolic, sympy.Basic):
                fx_args.meta[EXPR] = symbolic
    elif isinstance(fx_args, (tuple, list)) and isinstance(symbolic, (tuple, list)) \
            and isinstance(example, (tuple, list)) and len(fx_args) == len(symbolic) == len(example):
        for a, s, e in zip(fx_args, symbolic, example):
            stamp_size_arguments(a, s, e)
    elif isinstance(fx_args, dict) and isinstance(symbolic, dict) and isinstance(example, dict):
        for k, a in fx_args.items():
            if k in symbolic and k in example:
                stamp_size_arguments(a, symbolic[k], example[k])
    elif isinstance(fx_args, slice) and isinstance(symbolic, slice) and isinstance(example, slice):
        for part in ("start", "stop", "step"):
            stamp_size_arguments(getattr(fx_args, part), getattr(symbolic, part), getattr(example, part))


def finish(gm: torch.fx.GraphModule, env: ShapeEnv, sources: list[Source]) -> None:
    """Rewrite every stamp in the trace's final symbols and record where each live symbol is read
    (`sources`: each placeholder's source, in placeholder order)."""
    simplify: Callable[[Any], Any] = lambda e: _map(e, env.simplify)  # noqa: E731
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node in gm.graph.nodes:
        for key in (SIZES, STRIDES, EXPR):
            if node.meta.get(key) is not None:
                node.meta[key] = simplify(node.meta[key])
    index = {source: i for i, source in enumerate(sources)}
    bindings: dict[sympy.Symbol, SymbolBinding] = {}
    for sym in env.live_symbols():
        for origin in env.origins[sym]:
            i = index.get(origin.base)
            if i is None or i >= len(placeholders):
                continue
            is_tensor = isinstance(placeholders[i].meta.get("example_value"), torch.Tensor)
            if is_tensor == (origin.dim is not None):
                bindings[sym] = SymbolBinding(i, origin.dim, origin.base)
                break
    facts = [f for f in (env.simplify(g.expr) for g in env.guards)
             if not isinstance(f, sympy.logic.boolalg.BooleanAtom)]
    gm.meta[SYMBOLS] = GraphSymbols(bindings, dict(env.hints), facts, list(sources))


def _map(value: Any, fn: Callable[[sympy.Basic], Any]) -> Any:
    if isinstance(value, sympy.Basic):
        return fn(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map(v, fn) for v in value)
    return value
