"""A builtin called without a rule (or whose rule declined): folded where it is pure and every
argument is known, else a graph break that names it.

Pure builtins and the math/operator modules run on the known values at trace time; `print` and the
other builtins with effects pdyn knows get their own break key and hint.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker, fold
from pdyn.trace.variables.containers.core import is_known, python_value
from pdyn.trace.variables.values.constant import CONSTANT_TYPES
from pdyn.trace.variables.values.symint import UNARY_SYMPY_OPS, SymIntVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

# Builtins that are pure functions of their (constant) arguments.
PURE_BUILTINS = frozenset({
    abs, all, any, ascii, bin, bool, bytes, callable, chr, complex, divmod, float, format, frozenset,
    hash, hex, int, isinstance, issubclass, len, max, min, oct, ord, pow, range, repr, round, slice,
    sorted, str, sum, tuple, list, dict, set, enumerate, zip, reversed, type,
})
PURE_MODULES = ("math", "operator", "_operator", "cmath")
SIDE_EFFECT_HINTS = {
    print: ("print", "cannot trace a call to print(): it writes to stdout",
            "move the print out of the compiled function"),
}


def is_pure(fn: Any) -> bool:
    if fn in PURE_BUILTINS:
        return True
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, type(math)):
        return type(owner) in CONSTANT_TYPES or isinstance(owner, (tuple, frozenset))
    return getattr(fn, "__module__", None) in PURE_MODULES or getattr(owner, "__name__", None) in PURE_MODULES


def call_unruled(tx: Tracer, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """A builtin without a rule (or one whose rule declined): folded where pure and known, else a break."""
    if fn in UNARY_SYMPY_OPS and len(args) == 1 and not kwargs and isinstance(args[0], SymIntVariable):
        return args[0].unary_op(tx, fn)  # math.sqrt(x.shape[-1]) stays symbolic, in the graph
    if fn in (int, operator.index) and len(args) == 1 and not kwargs:
        answered = args[0].as_int(tx)   # int(torch.div(n, 2, rounding_mode="floor")): n // 2
        if answered is not None:
            return answered
    all_known = all(is_known(a) for a in [*args, *kwargs.values()])
    if is_pure(fn) and all_known:  # a symbolic int passed to range(), str(), ... is a value read
        why = f"{getattr(fn, '__name__', fn)}()"
        values = [python_value(a, why, tx.loc()) for a in args]
        keywords = {k: python_value(v, why, tx.loc()) for k, v in kwargs.items()}
        return fold(tx, lambda: fn(*values, **keywords))
    if fn in SIDE_EFFECT_HINTS:
        key, message, hint = SIDE_EFFECT_HINTS[fn]
        raise Unsupported(key, message, hint=hint, loc=tx.loc())
    name = getattr(fn, "__qualname__", repr(fn))
    if is_pure(fn):
        raise Unsupported("builtin_args", f"pdyn can call {name}() only on constants here, got {args}", loc=tx.loc())
    raise Unsupported("builtin", f"cannot trace a call to {name}(): pdyn does not know what it does",
                      hint="move the call out of the compiled function", loc=tx.loc())


def fold_object(tx: Tracer, cls: type, args: list[VariableTracker],
                kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args)` run at trace time on known arguments; what it raises is the user's."""
    try:
        why = f"constructing a {cls.__name__}"
        loc = tx.loc()
        value = cls(*[python_value(a, why, loc) for a in args], **{k: python_value(v, why, loc) for k, v in kwargs.items()})
    except Exception as e:
        raise UserException(e) from None
    return tx.wrap_constant(value)
