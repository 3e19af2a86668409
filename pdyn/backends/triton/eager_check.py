"""What eager does with a node, learnt by running it: whether torch accepts its arguments, and the
layout torch gives its result. A lowering computes whatever dtypes it is given, and fake tensors
skip the checks torch's kernels make (softmax or gelu of int64, layer_norm with a float64 weight)
and lay out results by other rules (the strides of size-1 dims), so before a node is lowered its op
runs once on small real tensors with the dtypes, devices and layouts eager would give it. A node
torch rejects is left to torch, which raises its own error on each call.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.triton.layout import dense, layout_of, order
from pdyn.backends.triton.runtime import TorchOp
from pdyn.backends.triton.symbolic import SymbolicGraph

log = logging.getLogger("pdyn.lowering")

SMALL_SIZES = (2, 4, 8)  # every size symbol at most this, if torch's guards still hold
Assignment = dict[sympy.Symbol, int]


class EagerCheck:
    """Runs nodes with torch on real tensors whose sizes come from one assignment of the size
    symbols: small sizes that satisfy every fact the trace guarded and empty no tensor, then (if the op fails there) the example call's own sizes. A node's inputs are the
    results of the nodes it ran before (views stay views), else made from the stamped sizes. `layouts`
    holds the layout of each result it saw (a tuple for a tuple result; None if not dense)."""

    def __init__(self, gm: torch.fx.GraphModule, sym: SymbolicGraph) -> None:
        self.gm, self.sym = gm, sym
        small = next((a for a in map(self._small, SMALL_SIZES) if self._valid(a)), None)
        self.assignments = [a for a in (small, dict(sym.hints)) if a is not None]
        self.layouts: dict[torch.fx.Node, Any] = {}
        self.results: dict[tuple[torch.fx.Node, int], Any] = {}  # (node, assignment index) -> value
        # NOTE: a result is dropped once its last reader ran: at the example's own sizes (where no
        # small sizes satisfy the guards) keeping every result held a whole forward's activations
        position = {n: k for k, n in enumerate(gm.graph.nodes)}
        self.last_reader = {n: max((position[u] for u in n.users), default=-1) for n in gm.graph.nodes}
        self.position = position

    def accepts(self, node: torch.fx.Node) -> bool:
        error: Exception | None = None
        for i, assignment in enumerate(self.assignments):
            try:
                values = [self.real(n, i) for n in node.all_input_nodes]
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = TorchOp(node, self.gm)(*values)
            except Exception as e:  # noqa: BLE001  # NOTE: any error: eager would not return
                error = e
                continue
            self.layouts[node] = _layouts(result)
            self.results[(node, i)] = result
            return True
        log.debug("eager rejects %s: %s", node.format_node(), error)
        return False

    def real(self, node: torch.fx.Node, i: int) -> Any:
        """A real stand-in for the node's value under assignment `i`: what this check computed for
        it, else ones of the example's dtype, device and stride order."""
        if (node, i) in self.results:
            return self.results[(node, i)]
        if node in self.sym.exprs:
            return evaluate(self.sym.exprs[node], self.assignments[i])
        return _real(self.sym.values[node], self.sym.sizes.get(node), self.assignments[i])

    def drop_read(self, node: torch.fx.Node) -> None:
        """After `node` is lowered: forget the results only it was still to read."""
        here = self.position.get(node, -1)
        for n in node.all_input_nodes:
            if self.last_reader.get(n, here + 1) <= here:
                for i in range(len(self.assignments)):
                    self.results.pop((n, i), None)

    def forget(self) -> None:
        """Drop the real values (lowering is done; layouts stay)."""
        self.results.clear()

    def _small(self, limit: int) -> Assignment:
        return {s: min(v, limit) for s, v in self.sym.hints.items()}

    def _valid(self, assignment: Assignment) -> bool:
        """Every guarded fact holds, and no tensor that has elements in the example is empty
        (an empty tensor skips the dtype checks of some kernels)."""
        try:
            if not all(bool(evaluate(fact, assignment)) for fact in self.sym.facts):
                return False
        except TypeError:  # a fact on a size only known at run time
            return False
        for sizes in self.sym.sizes.values():
            for size in _flat_sizes(sizes):
                if evaluate(size, self.sym.hints) >= 1 > evaluate(size, assignment):
                    return False
        return True


def _flat_sizes(sizes: Any) -> list[sympy.Expr]:
    """The sizes of a tensor's stamp, or of every tensor item of a tuple's."""
    if isinstance(sizes, tuple) and any(isinstance(s, tuple) or s is None for s in sizes):
        return [d for item in sizes if item is not None for d in item]
    return list(sizes)


def evaluate(size: Any, assignment: Assignment) -> Any:
    """A size (int or sympy) under `assignment`; symbols it lacks (sizes known only at run time)
    take the smallest small size."""
    expr = sympy.sympify(size)
    expr = expr.xreplace({s: sympy.Integer(assignment.get(s, SMALL_SIZES[0])) for s in expr.free_symbols})
    if expr.is_Relational or expr in (sympy.true, sympy.false):
        return bool(expr)
    return int(expr) if expr.is_integer else float(expr)


def _real(value: Any, sizes: Any, assignment: Assignment) -> Any:
    """`value` (an example) at `assignment`'s sizes: a tensor of ones dense in the example's
    stride order (eager's for inputs), or a tuple of such."""
    if isinstance(value, torch.Tensor):
        if sizes is None:
            raise TypeError("a tensor without stamped sizes")
        shape = [evaluate(d, assignment) for d in sizes]
        # an expanded example (stride 0 on a dim of size > 1) is built expanded: eager lays out
        # a result by the strides of its operands, and a broadcast dim has no place in that order
        expanded = [st == 0 and n != 1 for st, n in zip(value.stride(), value.shape)]
        base = [1 if e else n for e, n in zip(expanded, shape)]
        layout = order(list(value.shape), list(value.stride()))
        t = torch.empty_strided(base, dense(base, layout), dtype=value.dtype, device=value.device).fill_(1)
        return t.expand(shape) if any(expanded) else t
    if isinstance(value, (tuple, list)):
        items = [_real(v, s, assignment) for v, s in zip(value, sizes or [None] * len(value))]
        return type(value)(items) if type(value) in (tuple, list) else tuple(items)
    return value


def _layouts(result: Any) -> Any:
    if isinstance(result, torch.Tensor):
        return layout_of(list(result.shape), list(result.stride()))
    if isinstance(result, (tuple, list)):
        return tuple(_layouts(r) for r in result)
    return None
