"""pdyn's loop-level IR for the Triton backend.

A tensor value is a `Pointwise`: sympy `ranges` plus `fn(h, index) -> Val`, a closure that computes
one element through an ops handler `h` (the kernel builder in codegen.py). Views are Pointwise
values whose `fn` re-indexes their base; a `Reduction` reduces a source closure over some dims, a
`Scan` accumulates one along a dim. An element closure may load through an index it loaded first
(gather, embedding): `Handler.indirect_index` turns the loaded value into an index symbol.
Realized storage is a `Buffer`; `ComputedBuffer`s (kernels), `TorchCall`s (extern matmuls and
fallbacks into torch) are the nodes the scheduler orders and fuses. Lowering builds these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import sympy
import torch
import torch.fx

from pdyn.shapes import graph_meta


@dataclass(frozen=True)
class Val:
    """A value inside a kernel being generated: a Triton expression (usually a CSE name), the
    dtype it is computed in (float32 for float16/bfloat16 storage), and whether it is a block
    (False: a 0-d constant or size argument)."""

    text: str
    dtype: torch.dtype
    block: bool = True


class Handler(Protocol):
    def load(self, buffer: Buffer, index: sympy.Expr) -> Val: ...
    def constant(self, value: Any, dtype: torch.dtype) -> Val: ...
    def scalar(self, expr: sympy.Expr, dtype: torch.dtype) -> Val: ...
    def index_value(self, expr: sympy.Expr, dtype: torch.dtype) -> Val: ...
    def cast(self, v: Val, dtype: torch.dtype) -> Val: ...
    def op(self, name: str, dtype: torch.dtype, *args: Val) -> Val: ...
    def masked(self, mask: Val, body: Callable[[], Val], other: Any) -> Val: ...
    def indirect_index(self, v: Val, at: list[sympy.Expr], bound: sympy.Expr) -> sympy.Expr: ...
    def check(self, ok: Val, at: list[sympy.Expr], error: type, message: str = ...) -> None: ...


Index = list[sympy.Expr]
ElementFn = Callable[[Handler, Index], Val]


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Low-precision floats are computed in float32 and rounded on store."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


@dataclass(eq=False)
class Buffer:
    """Realized storage: a graph input, a kernel's output, or a torch call's result. `name` is the
    wrapper variable holding the tensor; sizes and strides are sympy over the bound symbols."""

    name: str
    dtype: torch.dtype
    size: list[sympy.Expr]
    stride: list[sympy.Expr]

    def offset(self, index: Index) -> sympy.Expr:
        # NOTE: a size-1 dim contributes nothing, so its stride never has to be known.
        terms = [i * s for i, s, n in zip(index, self.stride, self.size) if n != 1]
        return sympy.Add(*terms) if terms else sympy.Integer(0)

    def numel(self) -> sympy.Expr:
        return sympy.Mul(*self.size) if self.size else sympy.Integer(1)


def contiguous_strides(size: list[sympy.Expr]) -> list[sympy.Expr]:
    return list(graph_meta.contiguous_strides(tuple(size)))


@dataclass(eq=False)
class Pointwise:
    """A tensor computed element by element, not (yet) stored: fused into every consumer.
    `reads` names the buffers `fn` loads; `ops` counts its operations (the realize heuristic)."""

    ranges: list[sympy.Expr]
    dtype: torch.dtype
    fn: ElementFn
    reads: frozenset[str]
    ops: int = 1
    buffer: Buffer | None = None  # set when this value is exactly a buffer's contents

    def numel(self) -> sympy.Expr:
        return sympy.Mul(*self.ranges) if self.ranges else sympy.Integer(1)


@dataclass(eq=False)
class View(Pointwise):
    """A view op as index arithmetic on `base`; `node` replays it with torch where a consumer
    needs a real tensor (extern calls, fallbacks, graph outputs), so aliasing matches eager."""

    node: torch.fx.Node | None = None
    base: Pointwise | None = None


def buffer_value(buffer: Buffer) -> Pointwise:
    def load(h: Handler, index: Index) -> Val:
        return h.load(buffer, buffer.offset(index))

    return Pointwise(list(buffer.size), buffer.dtype, load, frozenset([buffer.name]), 1, buffer)


@dataclass(eq=False)
class Reduction:
    """`kind` (sum, prod, max, min, argmax, argmin) of `value` over `red_dims` of `src_ranges`.
    The kernel's x index runs over the kept dims, its r index over the reduced dims."""

    kind: str
    src_ranges: list[sympy.Expr]
    red_dims: tuple[int, ...]
    value: ElementFn
    acc_dtype: torch.dtype  # the dtype values are reduced in

    @property
    def out_ranges(self) -> list[sympy.Expr]:
        return [n for d, n in enumerate(self.src_ranges) if d not in self.red_dims]

    @property
    def red_ranges(self) -> list[sympy.Expr]:
        return [self.src_ranges[d] for d in self.red_dims]

    def src_index(self, xs: Index, rs: Index) -> Index:
        out, xi, ri = [], iter(xs), iter(rs)
        for d in range(len(self.src_ranges)):
            out.append(next(ri) if d in self.red_dims else next(xi))
        return out


@dataclass(eq=False)
class Scan:
    """An inclusive scan (`kind` cumsum or cumprod) of `value` along dim `dim` of `src_ranges`; the
    result has the source's ranges. Its kernel runs x over the other dims, r along `dim`."""

    kind: str
    src_ranges: list[sympy.Expr]
    dim: int
    value: ElementFn
    acc_dtype: torch.dtype

    @property
    def red_dims(self) -> tuple[int, ...]:
        return (self.dim,)

    def src_index(self, xs: Index, rs: Index) -> Index:
        out = list(xs)
        out.insert(self.dim, rs[0])
        return out


@dataclass(eq=False)
class ComputedBuffer:
    """A buffer a kernel writes: `data` is a Pointwise (stored over its ranges) or a Reduction
    (stored over its kept dims; `keep_index` maps those to the buffer's dims, keepdim included)."""

    buffer: Buffer
    data: Pointwise | Reduction | Scan
    reads: frozenset[str]
    keep_index: Callable[[Index], Index] | None = None
    effect: bool = False  # runs for an effect (an index check) even if no one reads it
    origin: Any = None  # the fx node it computes (a failed kernel sends it to torch)

    @property
    def name(self) -> str:
        return self.buffer.name


@dataclass(eq=False)
class TorchCall:
    """A call into torch from the wrapper: `kind` is extern (matmuls), fallback (no lowering),
    view (a view op replayed on a realized tensor) or check (indices in range before a gather). `inputs` are wrapper expressions substituted,
    in order, for the node's input nodes; the result is bound to `name`."""

    kind: str
    node: torch.fx.Node
    name: str
    inputs: list[str]
    reads: frozenset[str]
    binds: list[tuple[sympy.Symbol, str]] = field(default_factory=list)  # unbacked sizes read back
    contiguous_copy: str | None = None  # name of the contiguous version kernels read
    target: Any = None  # overrides node.target (extern calls may call a simpler op)
    args: tuple[Any, ...] | None = None  # overrides node.args (with fx Nodes as placeholders)
    kwargs: dict[str, Any] | None = None
    check: tuple[sympy.Expr, int | None, type] | None = None  # kind "check": (bound, ignored, error)


@dataclass(frozen=True)
class Scalar:
    """A Python number known in the wrapper: a size expression, a bound float, or a constant."""

    expr: sympy.Expr
    is_float: bool = False


SchedulerNode = ComputedBuffer | TorchCall
