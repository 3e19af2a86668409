"""Triton source for one fused kernel: a group of ComputedBuffers sharing an iteration space.

A pointwise kernel runs x over the elements. A reduction kernel runs x over the kept elements and
r over the reduced ones, in two variants from the same nodes: `persistent` (the whole reduced
extent in one block, straight-line code) and `looped` (one `for` over r per phase; a phase ends
where a node needs a reduction result of the current one). The wrapper picks by the actual r size.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
import torch

from pdyn.backends.triton.codegen_layout import pointwise_split, reduction_inner, tiled_head
from pdyn.backends.triton.ir import ComputedBuffer, Pointwise, Reduction, Scan, Val
from pdyn.backends.triton.kernel_builder import (
    INDEX_CHECK_HELPER, CannotFuse, KernelArgs, KernelBuilder, Local, Scope,
)
from pdyn.backends.triton.symbolic import floordiv, index_var, moddim, multiple_of_16
from pdyn.backends.triton.triton_ops import PREAMBLE, constant_text, dtype_text

XINDEX, RINDEX, YINDEX = sympy.Symbol("xindex"), sympy.Symbol("rindex"), sympy.Symbol("yindex")


@dataclass(frozen=True)
class Tiling:
    """The iteration space: `src_ranges` with `red_dims` reduced (none for a pointwise kernel)."""

    src_ranges: tuple[sympy.Expr, ...]
    red_dims: tuple[int, ...]

    @property
    def is_reduction(self) -> bool:
        return bool(self.red_dims)

    @property
    def x_ranges(self) -> list[sympy.Expr]:
        return [n for d, n in enumerate(self.src_ranges) if d not in self.red_dims]

    @property
    def r_ranges(self) -> list[sympy.Expr]:
        return [self.src_ranges[d] for d in self.red_dims]

    @property
    def inner(self) -> bool:
        """Whether r runs along the innermost dim (contiguous loads along r)."""
        return len(self.src_ranges) - 1 in self.red_dims


def tiling_of(nodes: list[ComputedBuffer]) -> Tiling:
    for node in nodes:
        if isinstance(node.data, (Reduction, Scan)):
            return Tiling(tuple(node.data.src_ranges), node.data.red_dims)
    assert isinstance(nodes[0].data, Pointwise), nodes[0]
    return Tiling(tuple(nodes[0].data.ranges), ())


def fit(tiling: Tiling, node: ComputedBuffer) -> str | None:
    """How `node` runs in `tiling`: 'red', 'full' (over x and r), 'x' (over x only), or None."""
    data = node.data
    if isinstance(data, Scan):
        return "scan" if tuple(data.src_ranges) == tiling.src_ranges and data.red_dims == tiling.red_dims else None
    if isinstance(data, Reduction):
        same = tuple(data.src_ranges) == tiling.src_ranges and data.red_dims == tiling.red_dims
        return "red" if same and tiling.is_reduction else None
    if tiling.is_reduction and tuple(data.ranges) == tiling.src_ranges:
        return "full"
    return "x" if list(data.ranges) == tiling.x_ranges else None


@dataclass
class KernelSource:
    """Generated text plus what the wrapper needs to launch it."""

    text: str
    tiling: Tiling
    args: KernelArgs
    stored: list[str]
    names: tuple[str, ...]  # kernel functions: (pointwise,) or (persistent, looped[, split])
    split: SplitInfo | None = None
    inner: bool = True  # a reduction's loads run contiguous along r (else along x)
    ysplit: int | None = None  # a 2-D tiled pointwise kernel: its leading dims form the y group


@dataclass(frozen=True)
class SplitInfo:
    """A reduction kernel that can also run split over r: `kernel_split` writes one row of partial
    results per r chunk into a [chunks, xnumel] buffer of `acc_dtype`; a second kernel combines the
    rows with `kind` into pointer `out` (the reduction's output, stored flat over x)."""

    kind: str
    acc_dtype: torch.dtype
    out: int  # index of the output among the kernel's pointers


def dim_vars(prefix: str, flat: sympy.Symbol, ranges: list[sympy.Expr]) -> tuple[list, list]:
    """Index variables of each dim (0 where the size is 1) and their definitions from `flat`.
    A dim of size 0 counts as 1 here: over x the kernel has no element and never launches; over r
    every load is masked off (r < 0 never holds) and the reduction stores its identity."""
    ranges = [sympy.Integer(1) if n == 0 else n for n in ranges]
    syms, defs = [], []
    for k, n in enumerate(ranges):
        if n == 1:
            syms.append(sympy.Integer(0))
            continue
        inner = sympy.Mul(*ranges[k + 1:]) if k + 1 < len(ranges) else sympy.Integer(1)
        expr = floordiv(flat, inner) if k == 0 else moddim(floordiv(flat, inner), n)
        if k == 0 and len(ranges) == 1:
            expr = flat
        sym = index_var(prefix, k)
        syms.append(sym)
        defs.append((sym, expr))
    return syms, defs


class KernelCodegen:
    """One variant of one kernel; `persistent` is ignored for pointwise kernels."""

    def __init__(self, nodes: list[ComputedBuffer], stored: set[str], args: KernelArgs,
                 interpret: bool, persistent: bool, split: str | None = None,
                 ysplit: int | None = None) -> None:
        self.nodes, self.stored = nodes, stored
        self.ysplit = ysplit  # 2-D tiles: the first `ysplit` dims run over y, the others over x
        self.split = split  # the split variant: this node's partial result goes to `psplit`
        self.tiling = tiling_of(nodes)
        self.b = KernelBuilder(args, interpret, self.tiling.is_reduction)
        self.b.persistent = persistent or not self.tiling.is_reduction
        self.phase: Scope | None = None
        self.phase_count = 0
        self.pending: list[tuple[ComputedBuffer, list[str], Val]] = []  # finalized after the loop
        self.phase_reads: set[str] = set()

    def generate(self, name: str) -> str:
        t, b = self.tiling, self.b
        groups = [(XINDEX, t.x_ranges), (RINDEX, t.r_ranges)]
        if self.ysplit is not None:  # NOTE: y plays no r role: its dims are the first ones of x
            groups = [(YINDEX, t.x_ranges[:self.ysplit]), (XINDEX, t.x_ranges[self.ysplit:])]
        ys, ydefs = dim_vars("y", YINDEX, groups[0][1]) if self.ysplit is not None else ([], [])
        xs, xdefs = dim_vars("x", XINDEX, groups[-1][1] if self.ysplit is not None else t.x_ranges)
        rs, rdefs = dim_vars("r", RINDEX, t.r_ranges)
        b.x_syms = {s for s in xs if isinstance(s, sympy.Symbol)}
        b.r_syms = {s for s in rs if isinstance(s, sympy.Symbol)}
        b.y_syms = {s for s in ys if isinstance(s, sympy.Symbol)}
        xdefs = ydefs + xdefs
        lanes = [(YINDEX, ys, groups[0][1])] if self.ysplit is not None else []
        lanes += [(XINDEX, xs, groups[-1][1] if self.ysplit is not None else t.x_ranges),
                  (RINDEX, rs, t.r_ranges)]
        for flat_sym, syms, ranges in lanes:
            real = [s for s in syms if isinstance(s, sympy.Symbol)]
            if real:
                flat, inner = sympy.Integer(0), sympy.Integer(1)
                for sym, n in reversed(list(zip(syms, ranges))):
                    flat += sym * inner
                    inner *= n
                b.flats.append((flat_sym, set(real), real[-1], sympy.expand(flat)))
        self.xs, self.rs, self.rdefs = ys + xs, rs, rdefs
        self.xmask = "ymask & xmask" if self.ysplit is not None else "xmask"
        for sym, expr in xdefs:
            b.line(f"{sym} = {b.index_text(expr)}")
        if t.is_reduction and b.persistent:
            b.line("rindex = rbase")
            b.line("rmask = rindex < rnumel")
            for sym, expr in rdefs:
                b.line(f"{sym} = {b.index_text(expr)}")
        for node in self.nodes:
            self.add(node)
        self.close_phase()
        return self.function(name)

    def add(self, node: ComputedBuffer) -> None:
        how = fit(self.tiling, node)
        if how is None:
            raise CannotFuse(f"{node.name} does not fit {self.tiling}")
        if len(self.nodes) > 1 and any(isinstance(n.data, Scan) for n in self.nodes):
            raise CannotFuse("a scan runs in a kernel of its own")
        if how == "scan":
            self.open_phase()
            self.scan(node)
            return
        if how == "x":
            self.close_phase()
            self.pointwise(node, self.xs, self.xmask)
            return
        if node.reads & self.phase_reads:
            self.close_phase()
        self.open_phase()
        if how == "full":
            self.pointwise(node, self.tiling_index(node), "xmask & rmask")
        else:
            self.reduction(node)

    def tiling_index(self, node: ComputedBuffer) -> list[sympy.Expr]:
        red = Reduction("sum", list(self.tiling.src_ranges), self.tiling.red_dims, None, torch.float32)  # type: ignore[arg-type]  # only src_index is used
        return red.src_index(self.xs, self.rs)

    def open_phase(self) -> None:
        if self.phase is not None or self.b.persistent or not self.tiling.is_reduction:
            return
        self.phase_count += 1
        self.phase = Scope([], {}, parent=self.b.top, phase=self.phase_count)
        self.b.scope = self.phase
        self.b.line("rindex = rstart + roffset + rbase" if self.split else "rindex = roffset + rbase")
        self.b.line("rmask = rindex < rnumel")
        for sym, expr in self.rdefs:
            self.b.line(f"{sym} = {self.b.index_text(expr)}")

    def close_phase(self) -> None:
        b = self.b
        if self.phase is not None:
            b.scope = b.top
            bound = "rchunk" if self.split else "rnumel"
            if b.interpret:  # NOTE: Triton 3.6's interpreter holds an int argument as a 1-element
                bound = f"int({bound}.handle.data.reshape(-1)[0])"  # array; NumPy 2 refuses int() of it
            b.line(f"for roffset in range(0, {bound}, RBLOCK):")
            b.top.lines.extend("    " + line for line in self.phase.lines)
            self.phase = None
        for node, final_lines, val in self.pending:
            b.top.lines.extend(final_lines)
            self.finish(node, val, self.xs)
        self.pending.clear()
        self.phase_reads = set()

    def pointwise(self, node: ComputedBuffer, index: list[sympy.Expr], mask: str) -> None:
        assert isinstance(node.data, Pointwise)
        val = node.data.fn(self.b, index)
        self.finish(node, val, index, mask)

    def finish(self, node: ComputedBuffer, val: Val, index: list[sympy.Expr],
               mask: str = "xmask") -> None:
        """Record the value as a register for later readers; store it if anyone else needs it."""
        buf = node.buffer
        if self.split == node.name:  # one row of partial results per r chunk, flat over x
            value = val.text
            self.b.line(f"tl.store(psplit + (pbase + xindex), {value}, xmask)")
            return
        at = buf.offset(node.keep_index(index) if node.keep_index else index)
        self.b.locals[buf.name] = Local(at, val, self.b.scope.phase)
        if node.name not in self.stored:
            return
        ptr = self.b.args.pointer(buf)
        self.b.stores.append(sympy.expand(at))
        text = self.b.block_index(at, "xmask" in mask, "rmask" in mask, "ymask" in mask)
        value = val.text if val.dtype == buf.dtype else f"{val.text}.to({dtype_text(buf.dtype)})"
        if self.b.interpret and buf.dtype == torch.bfloat16:  # the interpreter's cast truncates
            value = f"_round_bf16({val.text}).to(tl.bfloat16)"
        self.b.line(f"tl.store({ptr} + ({text}), {value}, {mask})")

    def reduction(self, node: ComputedBuffer) -> None:
        from pdyn.backends.triton.codegen_reduction import emit_reduction

        assert isinstance(node.data, Reduction)
        self.phase_reads.add(node.name)
        val = node.data.value(self.b, node.data.src_index(self.xs, self.rs))
        final_lines, result = emit_reduction(self.b, node.data, val, self.b.persistent)
        if self.b.persistent:
            self.finish(node, result, self.xs)
        else:
            self.pending.append((node, final_lines, result))

    def scan(self, node: ComputedBuffer) -> None:
        """Persistent: the row scanned at once. Looped: each chunk scanned and combined with the
        carry of the chunks before it."""
        data = node.data
        assert isinstance(data, Scan)
        b = self.b
        val = b.cast(data.value(b, data.src_index(self.xs, self.rs)), data.acc_dtype)
        init = neutral("sum" if data.kind == "cumsum" else "prod", data.acc_dtype)
        masked = b.emit(f"tl.where(xmask & rmask, {val.text}, {init})", data.acc_dtype)
        scan = "tl.cumsum({0}, 1)" if data.kind == "cumsum" else "tl.associative_scan({0}, 1, _prod_combine)"
        result = b.emit(scan.format(masked.text), data.acc_dtype, cse=False)
        if not b.persistent:
            carry = f"carry{b.counter}"
            b.counter += 1
            b.top.lines.append(f"{carry} = tl.full([XBLOCK, 1], {init}, {dtype_text(data.acc_dtype)})")
            op = "+" if data.kind == "cumsum" else "*"
            result = b.emit(f"{result.text} {op} {carry}", data.acc_dtype, cse=False)
            total = "tl.sum({0}, 1)" if data.kind == "cumsum" else "tl.reduce({0}, 1, _prod_combine)"
            b.line(f"{carry} = {carry} {op} {total.format(masked.text)}[:, None]")
        self.finish(node, result, data.src_index(self.xs, self.rs), "xmask & rmask")

    def function(self, name: str) -> str:
        t, b = self.tiling, self.b
        ptrs = [f"ptr{i}" for i in range(len(b.args.pointers))]
        sizes = [s.name for s in b.args.sizes.values()]
        params = ptrs + sizes + (["ynumel"] if self.ysplit is not None else []) + ["xnumel"] + (
            ["rnumel"] if t.is_reduction else [])
        if self.split:  # pointers first, then ints: the order the launcher passes them in
            params = ptrs + ["psplit"] + sizes + ["xnumel", "rnumel", "rchunk"]
        consts = ["XBLOCK: tl.constexpr"] + (["RBLOCK: tl.constexpr"] if t.is_reduction else [])
        if self.ysplit is not None:
            consts = ["YBLOCK: tl.constexpr"] + consts
        # NOTE: Triton specializes each int argument per call (== 1, % 16 == 0): vector loads over
        # masked blocks and strided rows need the multiple-of-16 case. A size that is one on every
        # call stays so; the others are listed for the launcher, which launches a twin that declares
        # them dynamic once their residues change (one more compile, not one per pattern)
        exprs = dict(zip(sizes, b.args.sizes)) | {"xnumel": sympy.Mul(*t.x_ranges),
                                                  "rnumel": sympy.Mul(*t.r_ranges)}
        if self.ysplit is not None:
            exprs |= {"ynumel": sympy.Mul(*t.x_ranges[:self.ysplit]),
                      "xnumel": sympy.Mul(*t.x_ranges[self.ysplit:])}
        changing = [p for p in params if p in exprs and not (exprs[p].is_Integer or multiple_of_16(exprs[p]))]
        no_spec = ["rchunk"] if self.split else []
        options = [f"do_not_specialize={no_spec!r}"] if no_spec else []
        if b.asserts and not b.interpret:  # NOTE: Triton compiles device asserts out without debug
            options.append("debug=True")
        head = [f"DYNAMIC_{name} = {tuple(changing)!r}",
                f"@triton.jit({', '.join(options)})" if options else "@triton.jit",
                f"def {name}({', '.join(params + consts + ['INDEX64: tl.constexpr'])}):"]
        if self.ysplit is not None:
            return "\n".join(head + tiled_head() + ["    " + line for line in b.top.lines]) + "\n"
        head += ["    if INDEX64:",
                "        xoffset = tl.program_id(0).to(tl.int64) * XBLOCK",
                "    else:",
                "        xoffset = tl.program_id(0) * XBLOCK"]
        if t.is_reduction:
            head += ["    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
                     "    rbase = tl.arange(0, RBLOCK)[None, :]",
                     "    if INDEX64:",
                     "        rbase = rbase.to(tl.int64)"]
        else:
            head += ["    xindex = xoffset + tl.arange(0, XBLOCK)"]
        head.append("    xmask = xindex < xnumel")
        if self.split:
            head += ["    if INDEX64:",
                     "        rstart = tl.program_id(1).to(tl.int64) * rchunk",
                     "        pbase = tl.program_id(1).to(tl.int64) * xnumel",
                     "    else:",
                     "        rstart = tl.program_id(1) * rchunk",
                     "        pbase = tl.program_id(1) * xnumel"]
        return "\n".join(head + ["    " + line for line in b.top.lines]) + "\n"


def generate_kernel(nodes: list[ComputedBuffer], stored: set[str], interpret: bool,
                    layout: bool = True) -> KernelSource:
    """Both variants of a reduction kernel share one KernelArgs, so their signatures agree.
    `layout`: choose the walk from the accesses (a pointwise kernel tiled 2-D where that reads
    memory in order); the scheduler's trial generations skip it."""
    args = KernelArgs()
    tiling = tiling_of(nodes)
    split: SplitInfo | None = None
    inner, ysplit = tiling.inner, None
    if not tiling.is_reduction:
        flat = KernelCodegen(nodes, stored, args, interpret, False)
        body = flat.generate("kernel")
        ysplit = pointwise_split(flat.b.accesses + flat.b.stores, flat.xs) if layout else None
        if ysplit is not None:
            args = KernelArgs()
            body = KernelCodegen(nodes, stored, args, interpret, False, ysplit=ysplit).generate("kernel")
        names: tuple[str, ...] = ("kernel",)
    else:
        looped_gen = KernelCodegen(nodes, stored, args, interpret, False)
        looped = looped_gen.generate("kernel_looped")
        inner = reduction_inner(looped_gen.b.accesses, looped_gen.xs, looped_gen.rs, tiling.inner)
        body = KernelCodegen(nodes, stored, args, interpret, True).generate("kernel_persistent")
        body = body + "\n\n" + looped
        names = ("kernel_persistent", "kernel_looped")
        target = split_target(nodes, stored, tiling)
        if target is not None:
            text = KernelCodegen(nodes, stored, args, interpret, False, target.name).generate("kernel_split")
            body = body + "\n\n" + text
            names += ("kernel_split",)
            red = target.data
            assert isinstance(red, Reduction)
            split = SplitInfo(red.kind, red.acc_dtype, list(args.pointers).index(target.name))
    header = "import triton\nimport triton.language as tl\n"
    if not interpret:
        header += "from triton.language.extra import libdevice\n"
    elif "_index_check(" in body:
        header += INDEX_CHECK_HELPER
    text = header + PREAMBLE + "\n\n" + body
    return KernelSource(text, tiling, args, [n.name for n in nodes if n.name in stored], names, split,
                        inner, ysplit)


SPLIT_KINDS = ("sum", "prod", "max", "min")


def split_target(nodes: list[ComputedBuffer], stored: set[str], tiling: Tiling) -> ComputedBuffer | None:
    """The reduction a split variant can serve: the kernel's only reduction, its last node, a kind
    whose partial results combine, stored (it is read elsewhere) flat over x."""
    reds = [n for n in nodes if isinstance(n.data, Reduction)]
    if len(reds) != 1 or nodes[-1] is not reds[0] or reds[0].name not in stored:
        return None
    node = reds[0]
    assert isinstance(node.data, Reduction)
    if node.data.kind not in SPLIT_KINDS:
        return None
    xs, _ = dim_vars("x", XINDEX, tiling.x_ranges)
    at = node.buffer.offset(node.keep_index(xs) if node.keep_index else xs)
    flat, inner = sympy.Integer(0), sympy.Integer(1)
    for sym, n in reversed(list(zip(xs, tiling.x_ranges))):
        flat += sym * inner
        inner *= n
    if sympy.expand(at - flat) != 0:
        return None
    return node


def neutral(kind: str, dtype: torch.dtype) -> str:
    """The identity of a reduction, as a literal of `dtype`."""
    if kind in ("sum",):
        return constant_text(0, dtype)
    if kind == "prod":
        return constant_text(1, dtype)
    big = float("inf") if dtype.is_floating_point else torch.iinfo(dtype).max
    low = float("-inf") if dtype.is_floating_point else torch.iinfo(dtype).min
    return constant_text(low if kind in ("max", "argmax") else big, dtype)
