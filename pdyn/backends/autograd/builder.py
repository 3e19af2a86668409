"""The backward graph under construction: its placeholders (size symbols, output grads, saved
forward values), the nodes derivative rules emit (each stamped with pdyn's sympy sizes and a fake
example, as graph_meta stamps a traced graph), and the gradient sum per forward value.

Which forward values the backward reads as saved tensors and which it recomputes is the
partitioner's call (partition.py); this module asks it through `primal`.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import sympy
import torch
import torch.fx

from pdyn.backends.autograd.partition import NotDifferentiable, Partitioner
from pdyn.ops import canonical
from pdyn.shapes.exprs import evaluate
from pdyn.shapes.graph_meta import EXPR, SIZE_NODE, SIZES, STRIDES, contiguous_strides

Sizes = tuple[sympy.Expr, ...]


class SizeOf:
    """A size node's target: the value of `expr` from the symbols' values (what the eager check and
    torch fallbacks call; the Triton lowering reads the node's stamped expression instead)."""

    def __init__(self, expr: sympy.Expr, symbols: Sequence[sympy.Symbol]) -> None:
        self.expr, self.symbols = expr, list(symbols)
        self.__name__ = f"size_{expr}".replace(" ", "")

    def __call__(self, *values: int) -> int:
        return int(evaluate(self.expr, dict(zip(self.symbols, values))))


def sizes_of(node: Any) -> Sizes:
    return tuple(node.meta[SIZES]) if isinstance(node, torch.fx.Node) else ()


def example(value: Any) -> Any:
    """The fake (or Python value) an argument stands for, for running a target on examples."""
    if isinstance(value, torch.fx.Node):
        return value.meta.get("example_value")
    if isinstance(value, (tuple, list)):
        return type(value)(example(v) for v in value)
    if isinstance(value, slice):
        return slice(example(value.start), example(value.stop), example(value.step))
    return value


class BackwardBuilder:
    """Builds one backward fx graph. `symbols` are the forward's size symbols with their hints;
    they are the backward's first inputs, so both graphs share one symbolic world."""

    def __init__(self, forward: torch.fx.Graph, symbols: dict[sympy.Symbol, int],
                 partitioner: Partitioner) -> None:
        self.forward = forward
        self.graph = torch.fx.Graph()
        self.hints = symbols
        self.partitioner = partitioner
        self.symbol_nodes: dict[sympy.Symbol, torch.fx.Node] = {}
        for sym, hint in symbols.items():
            node = self.graph.placeholder(f"sym_{sym.name}")
            node.meta.update({EXPR: sym, "example_value": hint})
            self.symbol_nodes[sym] = node
        self.last_placeholder: torch.fx.Node | None = node if symbols else None
        self.env: dict[torch.fx.Node, Any] = {}        # forward node -> its value in the backward
        self.saved: list[torch.fx.Node] = []            # forward values read as inputs, in order
        self.grads: dict[torch.fx.Node, Any] = {}      # forward node -> gradient sum (tuple: list)
        self.sizes_cache: dict[sympy.Expr, Any] = {}

    # -- inputs ---------------------------------------------------------------------------------
    def placeholder(self, name: str, fake: Any, sizes: Sizes) -> torch.fx.Node:
        """A tensor input of the backward, laid out contiguously (the caller makes it so)."""
        if self.last_placeholder is None:
            node = self.graph.placeholder(name) if not list(self.graph.nodes) else self._first(name)
        else:
            with self.graph.inserting_after(self.last_placeholder):
                node = self.graph.placeholder(name)
        self.last_placeholder = node
        node.meta.update({"example_value": fake, SIZES: tuple(sizes), STRIDES: contiguous_strides(tuple(sizes))})
        return node

    def _first(self, name: str) -> torch.fx.Node:
        with self.graph.inserting_before(next(iter(self.graph.nodes))):
            return self.graph.placeholder(name)

    def save(self, fwd: torch.fx.Node) -> torch.fx.Node:
        node = self.placeholder(f"saved_{fwd.name}", fwd.meta["example_value"], sizes_of(fwd))
        self.saved.append(fwd)
        return node

    # -- forward values in the backward ---------------------------------------------------------
    def primal(self, value: Any) -> Any:
        """A forward value (node, constant or a structure of them) as the backward reads it."""
        if isinstance(value, (tuple, list)):
            return type(value)(self.primal(v) for v in value)
        if isinstance(value, slice):
            return slice(self.primal(value.start), self.primal(value.stop), self.primal(value.step))
        if not isinstance(value, torch.fx.Node):
            return value
        if value not in self.env:
            self.env[value] = self.partitioner.resolve(self, value)
        return self.env[value]

    def size(self, expr: Any) -> Any:
        """A size as a backward argument: an int, or a node whose value is `expr`."""
        expr = sympy.sympify(expr)
        if expr.is_Integer:
            return int(expr)
        if expr in self.symbol_nodes:
            return self.symbol_nodes[expr]
        if expr not in self.sizes_cache:
            missing = expr.free_symbols - set(self.symbol_nodes)
            if missing:
                raise NotDifferentiable(f"size {expr} uses symbols the backward cannot read: {missing}")
            symbols = sorted(expr.free_symbols, key=lambda s: s.name)
            node = self.graph.call_function(SizeOf(expr, symbols), tuple(self.symbol_nodes[s] for s in symbols))
            node.meta.update({SIZE_NODE: True, EXPR: expr, "example_value": int(evaluate(expr, self.hints))})
            self.sizes_cache[expr] = node
        return self.sizes_cache[expr]

    def sizes_arg(self, sizes: Sizes) -> list[Any]:
        return [self.size(s) for s in sizes]

    # -- emitting -------------------------------------------------------------------------------
    def call(self, target: Callable[..., Any], *args: Any, sizes: Any, **kwargs: Any) -> torch.fx.Node:
        """A backward node calling `target`, with its sizes (a tuple of sympy; one per item for a
        tuple result) and its example from running `target` on the arguments' fakes."""
        node = self.graph.call_function(target, args, kwargs)
        node.meta["op"] = canonical(target)
        with self.partitioner.fake_mode:
            node.meta["example_value"] = target(*example(args), **example(kwargs))
        node.meta[SIZES] = sizes
        return node

    def copy(self, fwd: torch.fx.Node, args: Any, kwargs: Any) -> torch.fx.Node:
        """A forward node recomputed in the backward on backward arguments."""
        node = self.graph.create_node(fwd.op, fwd.target, tuple(args), dict(kwargs), name=f"re_{fwd.name}")
        for key in ("op", "example_value", SIZES, EXPR, SIZE_NODE):
            if key in fwd.meta:
                node.meta[key] = fwd.meta[key]
        return node

    def item(self, node: torch.fx.Node, i: int) -> torch.fx.Node:
        out = self.graph.call_function(operator.getitem, (node, i))
        out.meta["op"] = canonical(operator.getitem)
        out.meta["example_value"] = node.meta["example_value"][i]
        out.meta[SIZES] = node.meta[SIZES][i]
        return out

    # -- gradients ------------------------------------------------------------------------------
    def accumulate(self, fwd: Any, grad: Any, index: int | None = None) -> None:
        """Add `grad` to the gradient of forward node `fwd` (item `index` of a tuple result)."""
        if grad is None or not isinstance(fwd, torch.fx.Node) or not self.partitioner.needs_grad(fwd):
            return
        if index is not None:
            slots = self.grads.setdefault(fwd, {})
            slots[index] = grad if slots.get(index) is None else self.add(slots[index], grad)
            return
        grad = self.cast(grad, fwd.meta["example_value"].dtype)
        self.grads[fwd] = grad if fwd not in self.grads else self.add(self.grads[fwd], grad)

    def add(self, a: torch.fx.Node, b: torch.fx.Node) -> torch.fx.Node:
        return self.call(torch.add, a, b, sizes=sizes_of(a))

    def cast(self, grad: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
        if grad.meta["example_value"].dtype == dtype:
            return grad
        return self.call(torch.Tensor.to, grad, dtype, sizes=sizes_of(grad))

    def zeros(self, fwd: torch.fx.Node) -> torch.fx.Node:
        fake = fwd.meta["example_value"]
        return self.call(torch.zeros, self.sizes_arg(sizes_of(fwd)), dtype=fake.dtype, device=fake.device,
                         sizes=sizes_of(fwd))
