"""Symbolic sizes for the Triton backend: re-run the captured graph on fake tensors whose dims are
torch ShapeEnv symbols, so every node's sizes and strides are sympy expressions of the inputs.

Owns: one symbol per input dim (no duck sizing), the Python expression that binds each symbol at
run time, the guards torch's shape functions recorded (checked by the wrapper on every call, which
falls back to eager where one fails), and the printers for sizes (wrapper) and indices (kernels).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.utils._sympy.functions import FloorDiv, ModularIndexing
from torch.utils._sympy.printers import PythonPrinter

INDEX_PREFIXES = ("x", "r")


def index_var(prefix: str, i: int) -> sympy.Symbol:
    """Loop index symbols: x0, x1 (output dims) and r0, r1 (reduced dims); never collide with
    torch's size symbols (s*, u*) or kernel size args (ks*)."""
    return sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True)


def sym_expr(value: Any) -> sympy.Expr:
    """A size from fake propagation (int or SymInt) as sympy."""
    if isinstance(value, torch.SymInt):
        return value.node.expr
    if isinstance(value, (bool, int)):
        return sympy.Integer(int(value))
    raise TypeError(f"not a size: {value!r}")


def floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return a if b == 1 else FloorDiv(a, b)


def moddim(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """a % b for index arithmetic (both ≥ 0)."""
    return sympy.Integer(0) if b == 1 else ModularIndexing(a, 1, b)


class WrapperPrinter(PythonPrinter):
    """Sizes as Python expressions over the wrapper's bound symbols."""

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return expr.name


class KernelPrinter(PythonPrinter):
    """Index expressions as Triton text; every operand of // and % is a non-negative index or size,
    so Triton's truncating division equals floor division here."""

    def _print_FloorDiv(self, expr: sympy.Expr) -> str:
        a, b = expr.args
        return f"({self._operand(a)} // {self._operand(b)})"

    def _print_ModularIndexing(self, expr: sympy.Expr) -> str:
        base, div, mod = expr.args
        inner = self._operand(base) if div == 1 else f"({self._operand(base)} // {self._operand(div)})"
        return f"({inner} % {self._operand(mod)})"

    def _operand(self, e: sympy.Expr) -> str:
        text = self.doprint(e)
        return text if e.is_Atom or e.func.__name__ in ("FloorDiv", "ModularIndexing") else f"({text})"

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return expr.name


WRAPPER_PRINTER = WrapperPrinter()
KERNEL_PRINTER = KernelPrinter()


def pexpr(expr: Any) -> str:
    return WRAPPER_PRINTER.doprint(sympy.sympify(expr))


@dataclass
class SymbolicGraph:
    """The result of symbolic fake propagation: a fake value per node, and how to bind symbols."""

    values: dict[torch.fx.Node, Any]
    bindings: list[tuple[sympy.Symbol, str]]  # symbol, Python expression over the call's args
    checks: list[str] = field(default_factory=list)  # Python bools that must hold, else eager
    hints: dict[sympy.Symbol, int] = field(default_factory=dict)
    shape_env: ShapeEnv | None = None

    def hint(self, expr: sympy.Expr, fallback: int = 8192) -> int:
        """A size's value in the example call (data-dependent sizes get `fallback`)."""
        try:
            value = sympy.sympify(expr).subs(self.hints)
            return int(value) if value.is_number else fallback
        except (TypeError, ValueError):
            return fallback


class NotSymbolic(Exception):
    """The graph cannot be re-run on symbolic fakes (an input kind or an op we cannot model)."""


def propagate(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> SymbolicGraph:
    """Run `gm` on fakes whose dims are fresh symbols; every dim other than 0/1 stays symbolic."""
    shape_env = ShapeEnv(duck_shape=False)
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise NotSymbolic(f"{len(placeholders)} placeholders but {len(example_inputs)} inputs")
    result = SymbolicGraph({}, [], shape_env=shape_env)
    fakes = [_fake_input(mode, shape_env, result, i, v) for i, v in enumerate(example_inputs)]
    interp = _FakeInterpreter(gm, result.values)
    with mode:
        interp.run(*fakes)
    result.hints = {s: int(v) for s, v in shape_env.backed_var_to_val.items()} \
        if hasattr(shape_env, "backed_var_to_val") else dict(shape_env.var_to_val)
    result.checks = _guard_checks(shape_env, result)
    return result


def _fake_input(mode: FakeTensorMode, env: ShapeEnv, out: SymbolicGraph, i: int, value: Any) -> Any:
    from torch._dynamo.source import ConstantSource, LocalSource

    if isinstance(value, torch.Tensor):
        ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * value.dim())
        fake = mode.from_tensor(value, symbolic_context=ctx, source=LocalSource(f"arg{i}"))
        for d, size in enumerate(fake.shape):
            expr = sym_expr(size)
            if isinstance(expr, sympy.Symbol) and all(s != expr for s, _ in out.bindings):
                out.bindings.append((expr, f"a{i}.shape[{d}]"))
            elif isinstance(expr, sympy.Symbol):
                out.checks.append(f"a{i}.shape[{d}] == {expr.name}")
            else:
                out.checks.append(f"a{i}.shape[{d}] == {int(expr)}")
        return fake
    if isinstance(value, int) and not isinstance(value, bool) and value not in (0, 1):
        symbol = env.create_symbol(value, ConstantSource(f"arg{i}"), dynamic_dim=DimDynamic.DYNAMIC)
        out.bindings.append((symbol, f"a{i}"))
        return env.create_symintnode(symbol, hint=value)
    if isinstance(value, (bool, int, float, type(None))):
        out.checks.append(f"a{i} == {value!r}")  # NOTE: constants are baked; pdyn guards them too
        return value
    raise NotSymbolic(f"graph input {i} is a {type(value).__name__}")


def _guard_checks(env: ShapeEnv, out: SymbolicGraph) -> list[str]:
    """What torch's shape functions assumed about the symbols, as Python bools for the wrapper."""
    checks = list(out.checks)
    bound = {s for s, _ in out.bindings}
    for guard in env.guards:
        if guard.expr.free_symbols <= bound:
            checks.append(pexpr(guard.expr))
    for symbol, repl in env.replacements.items():
        if symbol in bound and repl.free_symbols <= bound:
            checks.append(f"{symbol.name} == {pexpr(repl)}")
    return checks


class _FakeInterpreter(torch.fx.Interpreter):
    """Records each node's fake result; `size`/`shape` reads become SymInts like any other value."""

    def __init__(self, gm: torch.fx.GraphModule, values: dict[torch.fx.Node, Any]) -> None:
        super().__init__(gm, garbage_collect_values=False)
        self.values = values

    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        self.values[n] = result
        return result

    def get_attr(self, target: Any, args: Any, kwargs: Any) -> Any:
        value = super().get_attr(target, args, kwargs)
        return value


BINARY_INT_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod}
