"""Sizes of custom ops (`torch.library.custom_op`, `torch.library.register_fake`, ops of any
namespace but aten's and prims') from their own fake kernels: the kernel runs once on fake tensors
whose sizes are torch's unbacked symbols, one per symbolic size of the call, and the sizes it
returns are read back as pdyn's expressions. A kernel that branches on a size (torch refuses a
guard on an unbacked symbol) or returns sizes other than sums and products of them gives no rule:
the call specializes its sizes, as an op without a rule does. The op table's rules cover aten."""

from __future__ import annotations

import logging
from typing import Any

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv as TorchShapeEnv

from pdyn.ops.shape_rules import SymTensor

log = logging.getLogger("pdyn.dynamic")
PLAIN = (sympy.Add, sympy.Mul, sympy.Symbol, sympy.Integer)


def is_custom_op(target: Any) -> bool:
    """An op overload of a namespace other than aten's and prims': a library's or the user's."""
    return isinstance(target, torch._ops.OpOverload) and target.namespace not in ("aten", "prims")


class _Symbols:
    """Torch's unbacked symbols standing for pdyn's expressions, and the way back."""

    def __init__(self) -> None:
        self.env = TorchShapeEnv()
        self.back: dict[sympy.Symbol, sympy.Expr] = {}

    def size(self, expr: Any) -> Any:
        expr = sympy.sympify(expr)
        if expr.is_Integer:
            return int(expr)
        made = self.env.create_unbacked_symint()
        self.back[made.node.expr] = expr
        return made

    def value(self, sym: Any, example: Any) -> Any:
        """The argument the fake kernel gets: a tensor of symbolic sizes, a symbolic int, else as is."""
        if isinstance(sym, SymTensor) and isinstance(example, torch.Tensor):
            return torch.empty([self.size(s) for s in sym.sizes], dtype=example.dtype, device=example.device)
        if isinstance(sym, sympy.Expr) and isinstance(example, int) and not isinstance(example, bool):
            return self.size(sym)
        if isinstance(sym, (list, tuple)) and isinstance(example, (list, tuple)) and len(sym) == len(example):
            return type(example)(self.value(s, e) for s, e in zip(sym, example))
        return example

    def assumed_nothing(self) -> bool:
        """The kernel took no size to be anything (torch defers such facts as runtime asserts, or
        guards) but that the sizes it made are not negative (`0 <= u0 + u2`: the real op, which the
        graph runs, makes a tensor of those sizes). A broadcast of two sizes assumes them equal."""
        asserts = [a.expr for found in self.env.deferred_runtime_asserts.values() for a in found]
        nonnegative = all(isinstance(e, sympy.Rel) and e.rel_op == "<=" and e.lhs == 0 for e in asserts)
        return nonnegative and not self.env.guards

    def expr(self, size: Any) -> sympy.Expr | None:
        """pdyn's expression for one output size, or None where it is not a sum of products of inputs."""
        if isinstance(size, int):
            return sympy.Integer(size)
        expr = size.node.expr
        if not expr.free_symbols <= set(self.back) or not all(isinstance(a, PLAIN) for a in sympy.preorder_traversal(expr)):
            return None
        return expr.xreplace(self.back)


def fake_kernel_sizes(target: Any, sym_args: list[Any], sym_kwargs: dict[str, Any], args: list[Any],
                      kwargs: dict[str, Any]) -> list[tuple[sympy.Expr, ...]] | None:
    """The sizes of every tensor output of custom op `target` as its fake kernel computes them from
    the call's symbolic sizes (`sym_*`: what shape rules see; `args`, `kwargs`: the trace-time values)."""
    symbols = _Symbols()
    try:
        with FakeTensorMode(shape_env=symbols.env):
            call_args = [symbols.value(s, a) for s, a in zip(sym_args, args)]
            call_kwargs = {k: symbols.value(sym_kwargs.get(k), v) for k, v in kwargs.items()}
            out = target(*call_args, **call_kwargs)
    except Exception as e:  # a guard on a size, no fake kernel: no rule
        log.debug("the fake kernel of %s gives no symbolic sizes: %s", target, e)
        return None
    if not symbols.assumed_nothing():
        log.debug("the fake kernel of %s assumed facts about its sizes: no symbolic sizes", target)
        return None
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    result = []
    for t in outputs:
        if not isinstance(t, torch.Tensor):
            continue
        sizes = tuple(symbols.expr(s) for s in t.shape)
        if any(s is None for s in sizes):
            return None
        result.append(sizes)   # type: ignore[arg-type]
    return result
