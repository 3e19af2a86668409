"""The ops handler that turns IR element closures into Triton lines: CSE per scope, loads with
masks from the index variables they use, kernel arguments for buffers and for sizes.

Every size in an index is hoisted into a kernel argument (`ks0`, ...) that the wrapper computes
from the call's inputs, so no size from the example call is baked into a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch

from pdyn.backends.triton.ir import Buffer, Val, compute_dtype
from pdyn.backends.triton.symbolic import KERNEL_PRINTER
from pdyn.backends.triton.triton_ops import (
    NoTritonSpelling, constant_text, dtype_text, in_domain, op_text,
)


INDEX_MESSAGE = "index out of range"
DIVISION_MESSAGE = "ZeroDivisionError"  # eager's CPU integer division by zero: RuntimeError(this)
CHECK_MESSAGES = (INDEX_MESSAGE, DIVISION_MESSAGE)  # what a kernel's check raises, by `message`
INDEX_ERRORS = (RuntimeError, IndexError)  # the error types eager's CPU kernels raise for one
INDEX_CHECK_HELPER = """
def _index_check(ok, mask, error, message=0):
    # interpreter only: raise eager's error where a live lane's `ok` is false (an index out of
    # range, an integer divisor of 0)
    import numpy
    good = ok.handle.data
    if mask is not None:
        good, live = numpy.broadcast_arrays(good, mask.handle.data)
        good = good | ~live
    if not good.all():
        raise (RuntimeError, IndexError)[error](%r[message])
""" % (CHECK_MESSAGES,)


class CannotFuse(Exception):
    """A node's reads cannot be served inside this kernel; the scheduler starts a new kernel."""


@dataclass
class KernelArgs:
    """Arguments shared by the variants of one kernel: pointers by buffer, sizes by expression."""

    pointers: dict[str, Buffer] = field(default_factory=dict)  # buffer name -> buffer
    sizes: dict[sympy.Expr, sympy.Symbol] = field(default_factory=dict)

    def pointer(self, buffer: Buffer) -> str:
        if buffer.name not in self.pointers:
            self.pointers[buffer.name] = buffer
        return f"ptr{list(self.pointers).index(buffer.name)}"

    def size(self, expr: sympy.Expr) -> sympy.Expr:
        if expr.is_Integer:
            return expr
        if expr not in self.sizes:
            self.sizes[expr] = sympy.Symbol(f"ks{len(self.sizes)}", integer=True)
        return self.sizes[expr]


@dataclass
class Scope:
    lines: list[str]
    cse: dict[str, Val]
    parent: Scope | None = None
    phase: int = -1  # -1: the kernel's top level

    def lookup(self, text: str) -> Val | None:
        scope: Scope | None = self
        while scope is not None:
            if text in scope.cse:
                return scope.cse[text]
            scope = scope.parent
        return None


@dataclass
class Local:
    """A value this kernel computed for a buffer: consumers at the same index read the register."""

    index: sympy.Expr
    val: Val
    phase: int


class KernelBuilder:
    """Implements ir.Handler. `x_syms`/`r_syms` are the index variables; their use picks masks."""

    def __init__(self, args: KernelArgs, interpret: bool, reduction: bool) -> None:
        self.args = args
        self.interpret = interpret
        self.reduction = reduction
        self.top = Scope([], {})
        self.scope = self.top
        self.counter = 0
        self.locals: dict[str, Local] = {}
        self.x_syms: set[sympy.Symbol] = set()
        self.r_syms: set[sympy.Symbol] = set()
        self.y_syms: set[sympy.Symbol] = set()  # the outer dims of a 2-D tiled pointwise kernel
        self.extra_masks: list[str] = []
        # (flat symbol, its dim symbols, innermost dim symbol, flat index over the dims)
        self.flats: list[tuple[sympy.Symbol, set[sympy.Symbol], sympy.Symbol, sympy.Expr]] = []
        self.persistent = True
        # indirect index symbols (a loaded index value used in an address): symbol -> (the index
        # symbols the value varies with, its in-bounds condition)
        self.indirect: dict[sympy.Symbol, tuple[set[sympy.Symbol], str]] = {}
        self.accesses: list[sympy.Expr] = []  # every load's index: the layout choice
        self.stores: list[sympy.Expr] = []  # every store's index
        self.asserts = False  # an index check: the kernel compiles with device asserts on

    # -- text -------------------------------------------------------------------------------
    def emit(self, text: str, dtype: torch.dtype, cse: bool = True, block: bool = True) -> Val:
        found = self.scope.lookup(text) if cse else None
        if found is not None:
            return found
        name = f"tmp{self.counter}"
        self.counter += 1
        self.scope.lines.append(f"{name} = {text}")
        val = Val(name, dtype, block)
        if cse:
            self.scope.cse[text] = val
        return val

    def line(self, text: str) -> None:
        self.scope.lines.append(text)

    def deps(self, expr: sympy.Expr) -> set[sympy.Symbol]:
        """The loop index symbols `expr` varies with, through its indirect symbols too."""
        out = set()
        for s in expr.free_symbols:
            out |= self.indirect[s][0] if s in self.indirect else {s}
        return out

    def index_text(self, expr: sympy.Expr) -> str:
        return KERNEL_PRINTER.doprint(self.hoist(self.flatten(sympy.expand(expr))))

    def block_index(self, expr: sympy.Expr, x: bool, r: bool, y: bool = False) -> str:
        """Index text that spans the x lanes (and the r or y lanes) even where `expr` does not vary
        along them (size-1 dims): Triton needs a pointer block at least as large as its mask."""
        text = self.index_text(expr)
        if y and not self.deps(expr) & self.y_syms:
            text += " + 0 * yindex"
        if x and not self.deps(expr) & self.x_syms:
            text += " + 0 * xindex"
        if r and not self.deps(expr) & self.r_syms:
            text += " + 0 * rindex"
        return text

    def flatten(self, expr: sympy.Expr) -> sympy.Expr:
        """Write `c * (x0*n1 + x1) + rest` as `c * xindex + rest` (and likewise for r): a dense
        walk over the iteration space then needs no division or modulo per element, and Triton
        sees a contiguous index it can vectorize."""
        for flat_sym, syms, last, flat in self.flats:
            if last not in expr.free_symbols:
                continue
            c = expr.coeff(last)
            if c == 0 or c.free_symbols & (self.x_syms | self.r_syms | self.y_syms):
                continue
            rest = sympy.expand(expr - c * flat)
            if rest.free_symbols & syms:
                continue
            expr = c * flat_sym + rest
        return expr

    def hoist(self, e: sympy.Expr) -> sympy.Expr:
        """Replace each index-free part of `e` with a size argument."""
        index_syms = self.x_syms | self.r_syms | self.y_syms | set(self.indirect) | {
            sympy.Symbol("xindex"), sympy.Symbol("rindex"), sympy.Symbol("yindex")}
        if e.is_Integer or e in index_syms:
            return e
        if not (e.free_symbols & index_syms):
            return self.args.size(e)
        if e.is_Add or e.is_Mul:
            dep = [a for a in e.args if a.free_symbols & index_syms]
            rest = [a for a in e.args if not (a.free_symbols & index_syms)]
            parts = [self.hoist(a) for a in dep]
            if rest:
                parts.append(self.hoist(e.func(*rest)))
            return e.func(*parts, evaluate=False)
        return e.func(*[self.hoist(a) for a in e.args], evaluate=False)

    def mask_for(self, expr: sympy.Expr) -> str | None:
        syms = self.deps(expr)
        parts = []
        if syms & self.y_syms:
            parts.append("ymask")
        if syms & self.x_syms:
            parts.append("xmask")
        if syms & self.r_syms:
            parts.append("rmask")
        if not parts:
            return None  # a constant index: in bounds whenever the kernel runs at all
        parts += self.extra_masks
        parts += [f"({self.indirect[s][1]})" for s in sorted(expr.free_symbols & set(self.indirect), key=str)]
        return " & ".join(parts)

    # -- Handler ----------------------------------------------------------------------------
    def load(self, buffer: Buffer, index: sympy.Expr) -> Val:
        local = self.locals.get(buffer.name)
        if local is not None:
            return self._local(buffer, local, index)
        ptr = self.args.pointer(buffer)
        self.accesses.append(sympy.expand(index))
        mask = self.mask_for(index)
        # NOTE: a constant index still loads a block: Triton's interpreter gets the dtype of a
        # comparison of 0-d values wrong once it is broadcast
        text = f"tl.load({ptr} + ({self.block_index(index, mask is None, False)})"
        text += f", {mask}, other=0)" if mask else ")"
        val = self.emit(text, buffer.dtype)
        return self.cast(val, compute_dtype(buffer.dtype))

    def _local(self, buffer: Buffer, local: Local, index: sympy.Expr) -> Val:
        if sympy.expand(local.index - index) != 0:
            raise CannotFuse(f"{buffer.name} is read at {index}, written at {local.index}")
        if local.phase != -1 and local.phase != self.scope.phase and not self.persistent:
            raise CannotFuse(f"{buffer.name} lives in an earlier reduction loop")
        return local.val

    def indirect_index(self, v: Val, at: list[sympy.Expr], bound: sympy.Expr) -> sympy.Expr:
        """A loaded index value `v` (read at index `at`) as a symbol for addresses into a dim of
        size `bound`. Out-of-range lanes load nothing (the wrapper's check raises for them)."""
        v = self.cast(v, torch.int64)
        sym = sympy.Symbol(v.text, integer=True)
        deps: set[sympy.Symbol] = set()
        for e in at:
            deps |= self.deps(sympy.sympify(e))
        hi = KERNEL_PRINTER.doprint(self.args.size(sympy.sympify(bound)))
        self.indirect[sym] = (deps & (self.x_syms | self.r_syms | self.y_syms), f"({v.text} >= 0) & ({v.text} < {hi})")
        return sym

    def check(self, ok: Val, at: list[sympy.Expr], error: type, message: str = INDEX_MESSAGE) -> None:
        """Fail where a live lane's `ok` is false: eager's `error(message)` under the interpreter
        (a helper the module defines), a device assert on the GPU (no sync, as eager's kernels fail)."""
        mask = self.mask_for(sympy.Add(*[sympy.sympify(e) for e in at])) if at else None
        self.asserts = True
        if self.interpret:
            code = INDEX_ERRORS.index(error)
            self.line(f"_index_check({ok.text}, {mask or 'None'}, {code}, {CHECK_MESSAGES.index(message)})")
        else:
            cond = f"{ok.text} | ~({mask})" if mask else ok.text
            self.line(f'tl.device_assert({cond}, "{message}")')

    def constant(self, value: Any, dtype: torch.dtype) -> Val:
        if dtype in (torch.float16, torch.bfloat16) and isinstance(value, (int, float)):
            value = torch.tensor(value, dtype=dtype).item()  # a value of that dtype: rounded, as eager's
        dtype = compute_dtype(dtype)
        return self.emit(f"tl.full([], {constant_text(value, dtype)}, {dtype_text(dtype)})", dtype,
                         block=False)

    def scalar(self, expr: sympy.Expr, dtype: torch.dtype) -> Val:
        """A size (or a float a torch call returned) as a 0-d value; tl.full, not `.to`: under the
        interpreter a float argument stays a Python float."""
        dtype = compute_dtype(dtype)
        if expr.is_number:
            return self.constant(expr, dtype)
        arg = KERNEL_PRINTER.doprint(self.args.size(expr))
        return self.emit(f"tl.full([], {arg}, {dtype_text(dtype)})", dtype, block=False)

    def index_value(self, expr: sympy.Expr, dtype: torch.dtype) -> Val:
        text = self.index_text(expr)
        block = bool(expr.free_symbols & (self.x_syms | self.r_syms | self.y_syms))  # a y index is a [YBLOCK, 1] block
        return self.cast(self.emit(f"({text})", torch.int64, block=block), dtype)

    def cast(self, v: Val, dtype: torch.dtype) -> Val:
        dtype = compute_dtype(dtype)
        if v.dtype == dtype:
            return v
        if dtype == torch.bool:
            return self.emit(f"({v.text} != 0)", dtype, block=v.block)
        return self.emit(f"{v.text}.to({dtype_text(dtype)})", dtype, block=v.block)

    def op(self, name: str, dtype: torch.dtype, *args: Val) -> Val:
        if args and not any(a.block for a in args):
            # NOTE: an op of 0-d values runs on a block: Triton's interpreter gets the dtype of a
            # 0-d comparison wrong once it is broadcast
            first = self.emit(f"tl.broadcast_to({args[0].text}, xindex.shape)", args[0].dtype)
            args = (first, *args[1:])
        if not all(in_domain(name, a.dtype) for a in args):
            raise NoTritonSpelling(f"{name} of {[a.dtype for a in args]}")
        text = op_text(name, [a.text for a in args], self.interpret)
        return self.emit(f"({text})", compute_dtype(dtype))

    def masked(self, mask: Val, body: Callable[[], Val], other: Any) -> Val:
        self.extra_masks.append(mask.text)
        try:
            val = body()
        finally:
            self.extra_masks.pop()
        fill = self.constant(other, val.dtype)
        return self.emit(f"tl.where({mask.text}, {val.text}, {fill.text})", val.dtype)
