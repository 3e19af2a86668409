"""SymIntVariable: a Python int (or float, or bool) computed from tensor sizes or int inputs.

It carries a sympy expression over the ShapeEnv's symbols and knows how to compute itself in the
graph (a node made on first use), so `torch.empty(x.size())` or `x.view(n * 2, -1)` needs no
specialization. Python reads decide: a bool read (`if n > 4`) guards the expression, a value read
(`range(n)`, formatting, returning it) specializes it.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Callable

import sympy
import torch
import torch.fx

from pdyn.ops import plain_operator
from pdyn.shapes import graph_meta, sym_float
from pdyn.shapes.exprs import substitute
from pdyn.base.errors import SourceLoc, UserException
from pdyn.shapes.shape_env import FloorDiv, ShapeEnv, to_python
from pdyn.sources import SizeSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen


def _floordiv(a: Any, b: Any) -> Any:
    return FloorDiv(a, b)


# int-valued arithmetic on ints: sympy is exact there (float-valued results go to sym_float)
SYMPY_OPS: dict[Callable[..., Any], Callable[..., Any]] = {
    operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
    operator.floordiv: _floordiv, operator.pow: operator.pow,
    operator.mod: lambda a, b: sympy.Mod(a, b, evaluate=False),
    operator.lt: lambda a, b: sympy.Lt(a, b, evaluate=False), operator.le: lambda a, b: sympy.Le(a, b, evaluate=False),
    operator.gt: lambda a, b: sympy.Gt(a, b, evaluate=False), operator.ge: lambda a, b: sympy.Ge(a, b, evaluate=False),
    operator.eq: lambda a, b: sympy.Eq(a, b, evaluate=False), operator.ne: lambda a, b: sympy.Ne(a, b, evaluate=False),
    min: lambda a, b: sympy.Min(a, b), max: lambda a, b: sympy.Max(a, b),
}
# unary ops that stay symbolic, by the Python type of their operand
UNARY_SYMPY_OPS: dict[Callable[..., Any], Callable[..., Any]] = {
    operator.neg: operator.neg, operator.pos: lambda a: a, abs: sympy.Abs,
    math.floor: sympy.floor, math.ceil: sympy.ceiling, math.sqrt: sym_float.Sqrt, int: lambda a: a,
    float: sym_float.ToFloat,
}
UNARY_FLOAT_OPS: dict[Callable[..., Any], Callable[..., Any]] = {
    **sym_float.UNARY, operator.pos: lambda a: a, math.floor: sympy.floor, math.ceil: sympy.ceiling,
    int: sym_float.TruncToInt,
}


def is_boolean(expr: sympy.Basic) -> bool:
    """A comparison or logic over sizes (a sympy Symbol is a Boolean too, so test the kinds)."""
    return isinstance(expr, (sympy.Rel, sympy.logic.boolalg.BooleanFunction, sympy.logic.boolalg.BooleanAtom))


class SymIntVariable(VariableTracker):
    """An int, float or bool (`pytype`, decided by Python's rules when it was computed) whose value
    is a sympy expression over the sizes of `env`; `node` computes it in the graph. `loc` is where
    the program computed it: a read that comes with no location of its own is pinned there."""

    def __init__(self, env: ShapeEnv, expr: sympy.Basic, make_node: Callable[[], torch.fx.Node] | None,
                 loc: SourceLoc | None, source: Source | None = None,
                 input_sources: frozenset[Source] = frozenset(), pytype: type = int):
        self.env = env
        self.expr = expr
        self.loc = loc
        self._make_node = make_node
        self._node: torch.fx.Node | None = None
        self.source = source
        self.input_sources = input_sources
        self.pytype = bool if is_boolean(expr) else pytype

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        return [(SizeSource(source, None), self.expr)]

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        return self.reconstruct(codegen) if self.is_python_constant() else codegen.symint(self)

    @property
    def node(self) -> Any:
        """The graph value: a number where the expression is now a constant, else a node."""
        if self.is_python_constant():
            return self.hint()
        if self._node is None:  # (a data-dependent value's node is made where it is read)
            assert self._make_node is not None, f"no way to compute {self.expr} in the graph"
            self._node = self._make_node()
            graph_meta.stamp_size_node(self._node, self.expr, self.example())
        return self._node

    def example(self) -> Any:
        """The value for the fake run: the hint, or torch's SymInt where the data decides it."""
        if self.env.unbacked_in(self.expr):
            return self.env.fake_value(self.expr)
        return self.hint()

    def hint(self) -> Any:
        """This call's value, of the Python type the program computed (`n / n` is 1.0, not 1)."""
        return as_pytype(self.env.hint(self.expr), self.pytype)

    def python_type(self) -> type:
        return self.pytype

    def is_python_constant(self) -> bool:
        expr = self.env.simplify(self.expr)
        return bool(expr.is_Number or isinstance(expr, sympy.logic.boolalg.BooleanAtom))

    def as_python_constant(self) -> Any:
        if self.is_python_constant():
            return self.hint()
        return self.value_read("a Python value")

    def value_read(self, why: str, loc: SourceLoc | None = None) -> Any:
        """Python needs the concrete value (at `loc`, by default where it was computed): specialize
        (TENSOR_MATCH_STATIC on the dims in it)."""
        return as_pytype(self.env.specialize(self.expr, loc or self.loc, why), self.pytype)

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        return sym_binary(tx, fn, self, other)

    def unary_op(self, tx: Tracer, fn: Callable[[Any], Any]) -> VariableTracker:
        table = UNARY_FLOAT_OPS if self.pytype is float else UNARY_SYMPY_OPS
        if self.pytype is bool or fn not in table:
            return ConstantVariable(fn(self.value_read(f"{getattr(fn, '__name__', fn)}()", tx.loc())))
        try:
            pytype = type(fn(self.hint()))
        except (ArithmeticError, ValueError) as e:  # math.sqrt(-n): Python's own error
            raise UserException(e, tx.loc()) from None
        if fn is math.sqrt and self.expr.free_symbols:  # its domain, or a later call's code raises it
            self.env.evaluate_bool(sympy.Ge(self.expr, 0, evaluate=False), tx.loc(), "math.sqrt's domain")
        output, loc = tx.output, tx.loc()
        return SymIntVariable(self.env, table[fn](self.expr),
                              lambda: output.annotate(output.graph.call_function(fn, (self.node,)), loc), loc,
                              input_sources=self.input_sources, pytype=pytype)

    def truth(self, tx: Tracer) -> bool:
        expr = self.expr
        if not is_boolean(expr):
            expr = sympy.Ne(expr, 0, evaluate=False)
        return self.env.evaluate_bool(expr, tx.loc(), "a Python condition")

    def reconstruct(self, codegen: FrameCodegen) -> str:
        """An int that reaches Python (returned, stored on an object, passed on at a break) is
        computed on each call from the sizes it is made of; anything else is a value read."""
        code = self._python_code(codegen) if self.pytype is int else None
        return code if code is not None else codegen.constant(self.value_read("returned to Python"))

    def _python_code(self, codegen: FrameCodegen) -> str | None:
        expr = self.env.simplify(self.expr)
        if expr.is_Number:
            return None
        reads = {}
        for sym in expr.free_symbols:
            origins = self.env.origins.get(sym)
            if not origins:
                return None
            reads[sym] = sympy.Symbol(f"({codegen.source_expr(origins[0])})")  # printed as its read
        return f"({to_python(substitute(expr, reads))})"

    def __repr__(self) -> str:
        return f"SymIntVariable({self.expr}: {self.pytype.__name__})"


def as_pytype(value: Any, pytype: type) -> Any:
    """`value` (int, float, bool or an exact Fraction from `evaluate`) as a `pytype`."""
    if pytype is int and not isinstance(value, int):
        assert value == int(value), f"pdyn: an int-valued size expression came out as {value}"
        return int(value)
    return pytype(value) if type(value) is not pytype else value


def _expr(vt: VariableTracker) -> Any:
    """The sympy value of an operand of symbolic arithmetic."""
    return vt.expr if isinstance(vt, SymIntVariable) else sym_float.number(vt.as_python_constant())


def _graph_value(vt: VariableTracker) -> Any:
    """The graph value of an operand: a node (made now, on first use) or a number."""
    return vt.node if isinstance(vt, SymIntVariable) else vt.as_python_constant()


def _hint(vt: VariableTracker) -> Any:
    return vt.example() if isinstance(vt, SymIntVariable) else vt.as_python_constant()


_SYM_TYPES = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


def _hint_type(vt: VariableTracker) -> type:
    """The Python type of an operand's value (an unbacked SymInt's is int)."""
    return _SYM_TYPES.get(type(_hint(vt)), type(_hint(vt)))


DIVISIONS = (operator.truediv, operator.floordiv, operator.mod)


def _pinned_result(fn: Callable[[Any, Any], Any], lhs: VariableTracker, rhs: VariableTracker,
                   loc: Any) -> VariableTracker:
    """`fn` on the operands' values (symbolic ones pinned): an error it raises is the user's."""
    values = [_value(v, fn, loc) for v in (lhs, rhs)]
    try:
        return ConstantVariable(fn(*values))
    except (TypeError, ValueError, ArithmeticError) as e:
        raise UserException(e, loc, catchable=True) from None


def sym_binary(tx: Tracer, fn: Callable[[Any, Any], Any], lhs: VariableTracker,
               rhs: VariableTracker) -> VariableTracker:
    """`fn(lhs, rhs)` where one side is symbolic and the other symbolic or a number.

    Python decides the result: it is computed once on this call's values, so an error Python would
    raise (`n // 0`, `0 ** -n`) is the user's, and the result's type (`n / 2` is a float) is the
    type of the symbolic value."""
    fn = plain_operator(fn)  # ints are immutable: `n *= 2` is `n = n * 2`
    env, output, loc = tx.ctx.shape_env, tx.output, tx.loc()
    for side in (lhs, rhs):
        if not isinstance(side, SymIntVariable) and (not isinstance(side.as_python_constant(), (int, float, bool))
                                                     or not math.isfinite(side.as_python_constant())):
            return _pinned_result(fn, lhs, rhs, loc)   # `"a" + n`, `[0] * n`, `n < math.inf`
    if any(isinstance(v, SymIntVariable) and v.pytype is bool for v in (lhs, rhs)) or fn not in SYMPY_OPS \
            and fn not in sym_float.BINARY:
        return _pinned_result(fn, lhs, rhs, loc)
    if fn in (min, max) and any(type(_hint(v)) in _SYM_TYPES for v in (lhs, rhs)):
        fn_of_hints = torch.sym_max if fn is max else torch.sym_min  # max() would bool() an unbacked u0 > n
    else:
        fn_of_hints = fn
    try:
        result = fn_of_hints(_hint(lhs), _hint(rhs))
    except ArithmeticError as e:
        raise UserException(e, loc) from None
    a, b = (env.simplify(_expr(v)) for v in (lhs, rhs))
    if a.is_Number and b.is_Number:  # folded already (`n - n`): plain Python arithmetic, exact
        return ConstantVariable(result)
    pytype = _SYM_TYPES.get(type(result), type(result))  # a data-dependent operand gives torch's SymInt
    if pytype is float and not isinstance(result, float):
        return ConstantVariable(fn(_value(lhs, fn, loc), _value(rhs, fn, loc)))
    if pytype not in (int, float, bool) or fn in (min, max) and _hint_type(lhs) is not _hint_type(rhs) \
            or pytype is float and not math.isfinite(result):  # inf and nan have no sympy arithmetic
        return ConstantVariable(fn(_value(lhs, fn, loc), _value(rhs, fn, loc)))  # min(n, 2.5): its type is its value's
    if fn is operator.pow and pytype is int and b.free_symbols:  # `n ** m` is an int while m >= 0
        env.evaluate_bool(sympy.Ge(b, 0, evaluate=False), loc, "an int power")
    if fn is operator.pow and pytype is float and not (b.is_Number and float(b).is_integer()) \
            and not (env.evaluate_bool(sympy.Ge(a, 0, evaluate=False), loc, "a float power's base")
                     if a.free_symbols else env.hint(a) >= 0):
        # a negative base to a fractional power is a complex: this call's value decides the type
        return ConstantVariable(fn(_value(lhs, fn, loc), _value(rhs, fn, loc)))
    if fn is operator.pow and pytype is float and a.free_symbols and not (b.is_Number and b >= 0):
        env.evaluate_bool(sympy.Ne(a, 0, evaluate=False), loc, "a base under a negative power")  # 0.0 ** -1 raises
    if fn in DIVISIONS and b.free_symbols:  # the next call's divisor may be 0, where Python raises
        env.evaluate_bool(sympy.Ne(b, 0, evaluate=False), loc, "a divisor")
    expr = sym_float.BINARY[fn](a, b) if pytype is float and fn in sym_float.BINARY else SYMPY_OPS[fn](a, b)
    sources = frozenset().union(*(getattr(v, "input_sources", frozenset()) for v in (lhs, rhs)))
    return SymIntVariable(env, expr, lambda: output.annotate(output.graph.call_function(
        fn, (_graph_value(lhs), _graph_value(rhs))), loc), loc, input_sources=sources, pytype=pytype)


def _value(vt: VariableTracker, fn: Any, loc: SourceLoc | None) -> Any:
    if isinstance(vt, SymIntVariable):
        return vt.value_read(f"{getattr(fn, '__name__', fn)}() on a non-number", loc)
    return vt.as_python_constant()
