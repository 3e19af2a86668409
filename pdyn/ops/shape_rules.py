"""Symbolic output sizes of torch ops at trace time: one rule per op family, keyed by target.

`infer_sizes` returns the sizes of every tensor an op outputs as sympy expressions over the
ShapeEnv's symbols, or None where no rule exists (the caller then runs the op's meta kernel on the
hints and specializes its inputs). A rule assumes nothing silently: every size relation it relies
on is a guard (`evaluate_bool`, `guard_equal`) or a specialization. This file holds the registry,
the shared helpers and pointwise ops; reductions, matmul and factories live in
shape_rules_reductions.py, views and joins in shape_rules_views.py, nn ops in shape_rules_nn.py, ops
that index along a dim in shape_rules_indexing.py, sorting and scans in shape_rules_sorting.py,
tensors from Python data in shape_rules_creation.py.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import sympy
import torch

from pdyn.base.errors import SourceLoc
from pdyn.ops import Op, canonical, row
from pdyn.ops.catalogue import BINARY, CONVERSIONS, POINTWISE_IN_PLACE, UNARY
from pdyn.shapes import size_bounds
from pdyn.shapes.shape_env import ShapeEnv

log = logging.getLogger(__name__)

ONE, ZERO = sympy.Integer(1), sympy.Integer(0)

Expr = sympy.Expr
Sizes = tuple[sympy.Expr, ...]


@dataclass(frozen=True)
class SymTensor:
    """A tensor argument as a rule sees it: symbolic sizes and a dtype."""

    sizes: tuple[sympy.Expr, ...]
    dtype: torch.dtype
    owns_storage: bool = False   # contiguous at every size, alone in its storage from offset 0
    layout_known: bool = False   # contiguous at every size, or of fixed strides (a view's validity)

    @property
    def ndim(self) -> int:
        return len(self.sizes)


class ShapeError(Exception):
    """The op is invalid for these sizes (eager raises too); run its meta kernel for torch's error."""


# -- static facts: decided from the symbols' value ranges, no guard needed --------------------------

def known(env: ShapeEnv, cond: sympy.Basic) -> bool | None:
    """The truth of `cond` for every value the symbols' ranges allow, or None when it varies. A
    decision that needs a size-oblivious symbol >= 2 makes its guard say so (`oblivious_check`)."""
    cond = env.simplify(cond)
    if isinstance(cond, sympy.logic.boolalg.BooleanAtom):
        return bool(cond)
    if type(cond) not in size_bounds.RELATIONS:
        return None
    return env.oblivious_check(cond, _known_in(env, cond, env.ranges), lambda ranges: _known_in(env, cond, ranges))


def _known_in(env: ShapeEnv, cond: sympy.Basic, ranges: dict[sympy.Symbol, tuple[float, float]]) -> bool | None:
    decided = size_bounds.decide(type(cond), cond.lhs - cond.rhs, ranges)   # sound interval arithmetic
    if env.unbacked_in(cond):  # no hint to cross-check with
        return decided
    if decided is not None and decided != bool(env.hint(cond)):  # a bug in the bounds: decide nothing
        return None
    return decided


def as_int(value: Any) -> int | None:
    """`value` as a Python int when it is a static integer (not a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, sympy.Integer):
        return int(value)
    return None


def is_size(value: Any) -> bool:
    """An int or a sympy expression: something a size argument can be."""
    return as_int(value) is not None or (isinstance(value, sympy.Expr) and not value.is_Boolean)


def prod(sizes: Iterable[Any]) -> Expr:
    out: Expr = sympy.Integer(1)
    for size in sizes:
        out = out * size
    return out


class Arguments(dict):
    """Bound arguments; a missing required one is the caller's error, as in eager."""

    def __init__(self, op: str, values: dict[str, Any]):
        super().__init__(values)
        self.op = op

    def __missing__(self, key: str) -> Any:
        raise ShapeError(f"{self.op}() missing required argument {key!r}")


# Keywords that never change sizes: rules bind them only where they name them.
IGNORED_KWARGS = frozenset(
    "dtype device layout requires_grad pin_memory memory_format generator non_blocking copy inplace".split()
)


@dataclass
class OpCall:
    """One application of an op, as its rule sees it, with the helpers that guard what it assumes."""

    env: ShapeEnv
    target: Any
    args: tuple
    kwargs: dict
    loc: SourceLoc | None

    def bind(self, *names: str, **defaults: Any) -> dict[str, Any]:
        """Positional then keyword arguments by name; `defaults` fills the rest."""
        if len(self.args) > len(names):
            raise ShapeError(f"{self.name()} takes at most {len(names)} arguments, got {len(self.args)}")
        bound = Arguments(self.name(), defaults)
        bound.update(zip(names, self.args))
        for key, value in self.kwargs.items():
            if key in IGNORED_KWARGS and key not in names:
                continue
            if key not in names:
                raise ShapeError(f"{self.name()} got an unexpected keyword argument {key!r}")
            bound[key] = value
        for key, value in bound.items():  # a comparison of sizes passed as a flag (is_causal=q_len > 1)
            if isinstance(value, sympy.logic.boolalg.Boolean) and not isinstance(value, sympy.Expr):  # not a Symbol
                bound[key] = self.check(value, f"{self.name()}'s argument {key}")
        return bound

    def name(self) -> str:
        return self.target if isinstance(self.target, str) else getattr(self.target, "__name__", "op")

    def check(self, cond: sympy.Basic, why: str) -> bool:
        """The truth of `cond` in this call; a guard keeps it true unless ranges already settle it."""
        decided = known(self.env, cond)
        if decided is not None:
            return decided
        if self.env.unbacked_in(cond) and _is_zero_or_one_test(cond):
            return False  # size-oblivious, as torch: a data-dependent size is taken as not 0 or 1
        return self.env.evaluate_bool(cond, self.loc, why)

    def require(self, cond: sympy.Basic, message: str) -> None:
        if self.env.unbacked_in(cond) and known(self.env, cond) is None:  # eager raises where it fails
            self.env.assume(cond, self.loc, RuntimeError, f"{self.name()}: {message}")
            return
        if not self.check(cond, message):
            raise ShapeError(f"{self.name()}: {message} ({cond} is false)")

    def equal(self, a: Any, b: Any, what: str) -> Expr:
        """Sizes the op needs equal: guarded (unified), or ShapeError when they differ here."""
        a, b = self.env.simplify(sympy.sympify(a)), self.env.simplify(sympy.sympify(b))
        if a == b:
            return a
        if self.env.unbacked_in(a) or self.env.unbacked_in(b):  # eager raises where they differ
            if known(self.env, sympy.Eq(a, b, evaluate=False)) is False:
                raise ShapeError(f"{self.name()}: {what}: {a} != {b}")
            self.env.assume(sympy.Eq(a, b, evaluate=False), self.loc, RuntimeError, f"{self.name()}: {what}")
            return self.env.simplify(a)
        if self.env.hint(a) != self.env.hint(b):
            raise ShapeError(f"{self.name()}: {what}: {a} != {b}")
        if known(self.env, sympy.Eq(a, b, evaluate=False)):
            return a
        return self.env.simplify(self.env.guard_equal(a, b, self.loc))

    def is_one(self, size: Expr) -> bool:
        return self.check(sympy.Eq(size, 1, evaluate=False), "a size that may be 1 (broadcasting)")

    def stretch(self, have: Any, want: Any, what: str) -> Expr:
        """`have` stretched to `want` (expand, addmm's input): equal, or 1. Where only the data
        decides whether `have` is 1, the runtime assert is eager's exact condition: `is_one`'s
        size-oblivious "not 1" would assert `have == want` and raise where eager stretches a 1."""
        have, want = sympy.sympify(have), sympy.sympify(want)
        if self.env.unbacked_in(have) and known(self.env, sympy.Eq(have, 1, evaluate=False)) is None \
                and known(self.env, sympy.Eq(have, want, evaluate=False)) is not True:
            self.env.assume(sympy.Or(sympy.Eq(have, want), sympy.Eq(have, 1)), self.loc, RuntimeError,
                            f"{self.name()}: {what}")
            return want
        if have == 1:
            return want   # a constant 1 stretches to any size: no question (at a size of 1 either)
        if have == want or _same_hint(self.env, have, want):
            return self.equal(have, want, what)  # equal: no question of stretching a 1
        return want if self.is_one(have) else self.equal(have, want, what)

    def is_zero(self, size: Expr) -> bool:
        return self.check(sympy.Eq(size, 0, evaluate=False), "a size that may be 0")

    def value(self, x: Any, why: str) -> int:
        """A Python int the op needs as a value (a dim, a count): symbols in it are specialized."""
        static = as_int(x)
        if static is not None:
            return static
        if isinstance(x, sympy.Expr):
            return int(self.env.specialize(x, self.loc, why))
        raise ShapeError(f"{self.name()}: expected an int for {why}, got {x!r}")

    def dim(self, d: Any, ndim: int) -> int:
        """A dim argument wrapped into [0, ndim); a 0-d tensor accepts 0 and -1."""
        d = self.value(d, "a dim argument")
        bound = max(ndim, 1)
        if not -bound <= d < bound:
            raise ShapeError(f"{self.name()}: dim {d} out of range for {ndim} dims")
        return d + bound if d < 0 else d


def sizes_arg(rest: Sequence[Any]) -> list[Any]:
    """Sizes given as varargs `f(2, 3)` or as one sequence `f((2, 3))`."""
    if len(rest) == 1 and isinstance(rest[0], (list, tuple, torch.Size)):
        return list(rest[0])
    return list(rest)


def as_tensor(x: Any, what: str) -> SymTensor:
    if not isinstance(x, SymTensor):
        raise ShapeError(f"expected a tensor for {what}, got {type(x).__name__}")
    return x


# -- the registry --------------------------------------------------------------------------------

Rule = Callable[[OpCall], "list[Sizes] | None"]
RULES: dict[Op, Rule] = {}


def register(*names: str) -> Callable[[Rule], Rule]:
    """Key `fn` by each named row of the op table (pdyn/ops/catalogue.py declares the rows)."""

    def add(fn: Rule) -> Rule:
        for name in names:
            op = row(name)
            assert op not in RULES, f"second shape rule for {name}: {fn.__qualname__}"
            RULES[op] = fn
        return fn

    return add


def infer_sizes(
    env: ShapeEnv, target: Any, args: tuple, kwargs: dict, loc: SourceLoc | None
) -> list[tuple[sympy.Expr, ...]] | None:
    """Sizes of every tensor `target(*args, **kwargs)` outputs, flattened; None: no rule here."""
    fn = RULES.get(canonical(target))
    if fn is None or "out" in kwargs:
        return None
    result = fn(OpCall(env, target, tuple(args), dict(kwargs), loc))
    if result is None:
        return None
    return [tuple(env.simplify(sympy.sympify(size)) for size in sizes) for sizes in result]


# -- pointwise: every tensor operand broadcasts -----------------------------------------------------


def broadcast(c: OpCall, *shapes: Sizes) -> Sizes:
    """The broadcast of `shapes`; a size that may be 1 is decided (and guarded) first."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[Expr] = []
    for i in range(ndim):
        size: Expr | None = None
        for shape in shapes:
            j = i - (ndim - len(shape))
            if j < 0:
                continue
            dim = sympy.sympify(shape[j])
            if size is not None and (c.env.unbacked_in(size) or c.env.unbacked_in(dim)) \
                    and known(c.env, sympy.Eq(size, dim, evaluate=False)) is not True:
                size = _broadcast_unbacked(c, size, dim, i)
            elif size is None or size == 1:
                size = dim
            elif dim == 1 or dim == size:
                continue
            elif _same_hint(c.env, size, dim):  # equal sizes broadcast to themselves, 1 or not
                size = c.equal(size, dim, f"sizes of dim {i} must broadcast")
            else:   # the side that is 1 here is asked first: the other's 0/1 question is then moot
                one, other = (size, dim) if c.env.hint(size) == 1 else (dim, size)
                if c.is_one(one):
                    size = other
                elif not c.is_one(other):
                    size = c.equal(size, dim, f"sizes of dim {i} must broadcast")
                else:
                    size = one
        out.append(size if size is not None else sympy.Integer(1))
    return tuple(out)


def _broadcast_unbacked(c: OpCall, a: Expr, b: Expr, i: int) -> Expr:
    """Broadcast two sizes one of which only the data decides: the result is exact under a runtime
    assert of the condition eager needs (equal, or one of them 1)."""
    env = c.env
    one_a, one_b = known(env, sympy.Eq(a, 1)), known(env, sympy.Eq(b, 1))
    if one_a is True or one_b is True:
        return b if one_a else a
    why = f"sizes of dim {i} must broadcast"
    if not env.unbacked_in(a) or not env.unbacked_in(b):
        backed, data = (a, b) if not env.unbacked_in(a) else (b, a)
        if known(env, sympy.Eq(backed, 1)) is not False:  # a backed size that may be 1: decide it
            if c.is_one(backed):
                return data
        env.assume(sympy.Or(sympy.Eq(data, backed), sympy.Eq(data, 1)), c.loc, RuntimeError, f"{c.name()}: {why}")
        return backed
    # eager's exact condition: a size of 1 broadcasts to any other, 0 included (1 with 0 gives 0)
    env.assume(sympy.Or(sympy.Eq(a, b), sympy.Eq(a, 1), sympy.Eq(b, 1)), c.loc, RuntimeError, f"{c.name()}: {why}")
    if known(env, sympy.Ge(a, 1)) and known(env, sympy.Ge(b, 1)):
        return sympy.Max(a, b)
    return sympy.Max(a, b) * sympy.Min(1, a, b)  # 0 where either is 0, else the larger


def _same_hint(env: ShapeEnv, a: Expr, b: Expr) -> bool:
    """Backed sizes equal in this call (a guard then keeps them equal)."""
    return not env.unbacked_in(a) and not env.unbacked_in(b) and env.hint(a) == env.hint(b)


def _is_zero_or_one_test(cond: sympy.Basic) -> bool:
    return isinstance(cond, (sympy.Eq, sympy.Ne)) and any(side in (0, 1) for side in cond.args)


def _tensor_operands(c: OpCall) -> list[SymTensor]:
    values = list(c.args) + list(c.kwargs.values())
    return [v for v in values if isinstance(v, SymTensor)]


def pointwise(c: OpCall) -> list[Sizes] | None:
    tensors = _tensor_operands(c)
    if not tensors:   # numbers only (`torch.div(n, 2, rounding_mode="floor")`): a 0-d tensor
        return [()]
    return [broadcast(c, *(t.sizes for t in tensors))]


register("numpy_elementwise")(pointwise)   # a NumPy ufunc or operator: NumPy broadcasts as torch does


def pointwise_inplace(c: OpCall) -> list[Sizes] | None:
    """`x.add_(y)`, `x += y`: the others broadcast to x, and x keeps its sizes."""
    tensors = _tensor_operands(c)
    if tensors and c.args and not isinstance(c.args[0], SymTensor):
        return pointwise(c)  # `n += t` on a Python number n is `n = n + t`
    if not tensors or not isinstance(c.args[0], SymTensor):
        return None
    self = c.args[0]
    out = broadcast(c, *(t.sizes for t in tensors))
    if len(out) != self.ndim:
        raise ShapeError(f"{c.name()}: in-place result of {len(out)} dims into {self.ndim} dims")
    return [tuple(c.equal(a, b, "in-place result keeps the sizes") for a, b in zip(self.sizes, out))]


register(*UNARY, *BINARY, "__rsub__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__")(pointwise)
register(*POINTWISE_IN_PLACE)(pointwise_inplace)


@register(*CONVERSIONS)
def conversion(c: OpCall) -> list[Sizes] | None:
    """`x.to(...)`, `x.float()`, `x.contiguous()`: the sizes of the tensor itself."""
    if not c.args or (c.target == "type" and len(c.args) + len(c.kwargs) == 1):
        return None  # x.type() is a string
    return [as_tensor(c.args[0], "self").sizes]


@register("where")
def where(c: OpCall) -> list[Sizes] | None:
    """`torch.where(cond, x, y)` broadcasts; `torch.where(cond)` is data-dependent (no rule)."""
    return pointwise(c) if len(c.args) + len(c.kwargs) == 3 else None


# pdyn: the reductions, matmul and factories, then the other families' modules (they register).
from pdyn.ops import shape_rules_reductions as _reductions  # noqa: E402,F401
from pdyn.ops import shape_rules_views as _views  # noqa: E402,F401
from pdyn.ops import shape_rules_nn as _nn  # noqa: E402,F401
from pdyn.ops import shape_rules_indexing as _indexing  # noqa: E402,F401
from pdyn.ops import shape_rules_sorting as _sorting  # noqa: E402,F401
from pdyn.ops import shape_rules_strided as _strided  # noqa: E402,F401
from pdyn.ops import shape_rules_stacks as _stacks  # noqa: E402,F401
from pdyn.ops import shape_rules_creation as _creation  # noqa: E402,F401
from pdyn.ops import shape_rules_recurrent as _recurrent  # noqa: E402,F401
from pdyn.ops import shape_rules_windows as _windows  # noqa: E402,F401
