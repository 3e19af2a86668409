"""Data-dependent sizes in the graph: torch's unbacked SymInts (the fake run's vehicle) as pdyn's
unbacked symbols, the sizes of data-dependent ops, and the graph nodes of runtime asserts.

The fake tensors run under a FakeTensorMode with torch's own ShapeEnv only so that an op whose
output size depends on data (nonzero, x[mask], unique, `.item()`) returns something: torch gives
it a SymInt. pdyn makes its own symbol `u0` for each (a range, no hint) and computes every size
from its own shape rules; torch's expression is used where an op has no rule (its output is the
data-dependent size itself) and to cross-check the rules.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import sympy
import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

from pdyn.base.errors import SourceLoc, Unsupported
from pdyn.ops import canonical
from pdyn.ops.shape_rules import SymTensor
from pdyn.shapes import graph_meta
from pdyn.shapes.exprs import substitute
from pdyn.shapes.runtime_asserts import runtime_assert
from pdyn.shapes.shape_env import CeilDiv, FloorDiv, ShapeEnv, to_python

if TYPE_CHECKING:
    from pdyn.trace.output_graph import OutputGraph


def _mod(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """`a % b` unevaluated: sympy's Mod evaluation is unsound (Mod(Max(0, 2*s0), 6) is 0 to it)."""
    return sympy.Mod(a, b) if a.is_Number and b.is_Number else sympy.Mod(a, b, evaluate=False)


_FUNCTIONS = {"FloorDiv": FloorDiv, "CleanDiv": FloorDiv, "IntTrueDiv": None, "CeilDiv": CeilDiv,
              "Mod": _mod, "PythonMod": _mod, "Max": sympy.Max, "Min": sympy.Min}


class Unbacked:
    """One trace's map between torch's unbacked symbols and pdyn's, and how to read each at run
    time (the node it comes from, and a dim of it, or the node's value itself)."""

    def __init__(self, env: ShapeEnv):
        self.env = env
        self.by_torch: dict[sympy.Symbol, sympy.Symbol] = {}
        self.reads: dict[sympy.Symbol, tuple[torch.fx.Node, int | None]] = {}
        self.emitted = 0

    def fresh(self, value: Any, why: str, lo: float = 0, hi: float = math.inf) -> sympy.Symbol:
        """pdyn's symbol for a torch SymInt `value` that is one fresh unbacked symbol."""
        expr = value.node.expr
        sym = self.env.create_unbacked(lo, hi, why)
        self.by_torch[expr] = sym
        self.env.vehicles[sym] = value
        return sym

    def translate(self, value: Any, why: str, bounded_by: Any) -> sympy.Expr:
        """A size of a fake result in pdyn's symbols: an int stays; a SymInt's expression has its
        torch symbols replaced (a new one gets a fresh u, in [0, `bounded_by`])."""
        if isinstance(value, int):
            return sympy.Integer(value)
        expr = value.node.expr
        if isinstance(expr, sympy.Symbol) and expr not in self.by_torch:
            hi = bounded_by if isinstance(bounded_by, (int, float)) else math.inf
            sym = self.fresh(value, why, 0, hi)
            if isinstance(bounded_by, sympy.Expr) and not bounded_by.is_number:
                self.env.bound_above(sym, bounded_by)
            return sym
        return _rebuild(expr, self.by_torch)

    def read_from(self, sym: sympy.Symbol, node: torch.fx.Node, dim: int | None) -> None:
        if sym not in self.reads:
            graph_meta.stamp_unbacked(node, sym, dim)  # for a backend that binds it at run time
        self.reads.setdefault(sym, (node, dim))


def _rebuild(expr: sympy.Basic, symbols: dict[sympy.Symbol, sympy.Symbol]) -> sympy.Expr:
    if isinstance(expr, sympy.Symbol):
        if expr not in symbols:
            raise Unsupported("data_dependent", f"a size depends on data in a way pdyn does not track ({expr})")
        return symbols[expr]
    if not expr.args:
        return expr
    args = [_rebuild(a, symbols) for a in expr.args]
    name = type(expr).__name__
    if name in _FUNCTIONS:
        fn = _FUNCTIONS[name]
        if fn is None:
            raise Unsupported("data_dependent", f"pdyn has no rule for torch's {name} of a data-dependent size")
        return fn(*args)
    if expr.func in (sympy.Add, sympy.Mul, sympy.Pow):
        return expr.func(*args)
    raise Unsupported("data_dependent", f"pdyn has no rule for torch's {name} of a data-dependent size")


# ops whose data-dependent output size counts elements of their first argument (at most its numel)
_COUNTS_ELEMENTS = ("nonzero", "argwhere", "getitem", "unique", "unique_consecutive")


def count_bound(name: str, args: list[Any]) -> float | sympy.Expr:
    """The upper bound of a data-dependent size `name` makes: the numel of its first argument
    (a number, or pdyn's symbolic sizes multiplied) where the op selects or counts that
    argument's elements; else unbounded (bincount's and repeat_interleave's sizes come from
    values, masked_select's from a broadcast)."""
    first = args[0] if args else None
    if name not in _COUNTS_ELEMENTS:
        return math.inf
    if isinstance(first, torch.Tensor):
        return first.numel()
    if isinstance(first, tuple):   # the sizes of a tensor whose sizes are symbolic
        return sympy.Mul(*first)
    return math.inf


def data_rule(name: str, args: list[Any], kwargs: dict[str, Any], torch_sizes: list[tuple]) -> list[tuple] | None:
    """Sizes of a data-dependent op's outputs in pdyn's symbols, where an output dim also follows
    an input's dim (x[mask] keeps x's trailing dims; unique's inverse has x's shape); None: the
    op's other dims are not known to follow any input."""
    x = args[0] if args else None
    if name == "getitem" and isinstance(x, SymTensor) and len(args) == 2:
        key = args[1][0] if isinstance(args[1], tuple) and len(args[1]) == 1 else args[1]
        if isinstance(key, SymTensor) and key.dtype == torch.bool:
            return [(torch_sizes[0][0], *x.sizes[key.ndim:])]
        return None
    if name in ("unique", "unique_consecutive") and isinstance(x, SymTensor) and kwargs.get("dim") is None \
            and len(args) == 1:
        out = list(torch_sizes)
        if kwargs.get("return_inverse"):
            out[1] = tuple(x.sizes)
        return out
    if name in ("nonzero", "argwhere", "masked_select", "bincount", "where", "repeat_interleave"):
        dims = [d for sizes in torch_sizes for d in sizes]
        return list(torch_sizes) if all(isinstance(d, sympy.Symbol) or d.is_Integer for d in dims) \
            and name != "repeat_interleave" or (name == "repeat_interleave" and len(args) <= 2
                                                 and kwargs.get("dim") is None) else None
    return None


def fake_call(name: str, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """`fn(*args, **kwargs)` on fake tensors. A split into sizes some of which only the data
    decides makes its pieces directly: torch's own split adds the sizes up one at a time, each sum
    a bigger sympy Add (quadratic: seconds for a few hundred jagged features). pdyn's split rule
    gives the sizes and records the check that they add up to the dim."""
    if name in ("split", "split_with_sizes"):
        pieces = _split_pieces(args, kwargs)
        if pieces is not None:
            return pieces
    return fn(*args, **kwargs)


def _split_pieces(args: list[Any], kwargs: dict[str, Any]) -> tuple[torch.Tensor, ...] | None:
    names = ("split_size_or_sections", "split_sizes")
    x = args[0] if args else kwargs.get("input", kwargs.get("self"))
    sizes = args[1] if len(args) > 1 else next((kwargs[k] for k in names if k in kwargs), None)
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    if not isinstance(x, FakeTensor) or x.requires_grad or not isinstance(sizes, (list, tuple)) \
            or not isinstance(dim, int) or x.dim() == 0 or not -x.dim() <= dim < x.dim():
        return None  # (a piece of a tensor that requires grad is a view with a grad_fn: torch's split)
    if not any(isinstance(s, torch.SymInt) for s in sizes) \
            or not all(isinstance(s, torch.SymInt) or type(s) is int and s >= 0 for s in sizes):
        return None
    d = dim % x.dim()
    shape = list(x.shape)
    for s in sizes:  # sizes for torch too (pdyn's rule asserts it): its checks on them are then free
        if isinstance(s, torch.SymInt) and isinstance(s.node.expr, sympy.Symbol):
            s.node.shape_env._constrain_range_for_size(s.node.expr)  # (the vehicle's own ShapeEnv)
    mode = x.fake_mode
    # the pieces are views with x's strides; along dim 0 of a contiguous x those are the contiguous
    # ones, and torch.empty makes them with no symbolic question (empty_strided asks u == 0)
    contiguous = d == 0 and x.is_contiguous()
    with unset_fake_temporarily():  # meta tensors wrapped as fakes: no fake dispatch per piece
        metas = [torch.empty((s, *shape[1:]), dtype=x.dtype, device="meta") if contiguous else
                 torch.empty_strided((*shape[:d], s, *shape[d + 1:]), x.stride(), dtype=x.dtype, device="meta")
                 for s in sizes]
        return tuple(mode.fake_tensor_converter.from_meta_and_device(mode, m, x.device) for m in metas)


def emit_asserts(output: OutputGraph, loc: SourceLoc | None) -> None:
    """Record a graph node for each runtime assert the ShapeEnv took since the last call."""
    env, unbacked = output.ctx.shape_env, output.unbacked
    while unbacked.emitted < len(env.runtime_asserts):
        fact = env.runtime_asserts[unbacked.emitted]
        unbacked.emitted += 1
        syms = sorted(fact.expr.free_symbols, key=lambda s: s.name)
        values = [output.symbol_node(s) for s in syms]
        for s, value in zip(syms, values):  # a dim read made for the assert: a size node for backends
            if "example_value" not in value.meta:
                graph_meta.stamp_size_node(value, s, env.hints.get(s, env.vehicles.get(s)))
                value.meta[graph_meta.EXPR] = s
        code = to_python(substitute(fact.expr, {s: sympy.Symbol(f"v{i}") for i, s in enumerate(syms)}))
        where = f" (at {fact.loc.filename}:{fact.loc.lineno})" if fact.loc is not None else ""
        node = output.graph.call_function(runtime_assert, (code, fact.error.__name__, fact.message + where, *values))
        output.annotate(node, fact.loc or loc)
        node.meta["op"] = canonical(runtime_assert)
        node.meta["example_value"] = None  # (returns nothing; a backend reads every node's example)
