"""Walk the fx graph once and build the IR: each node becomes a Pointwise/View value, a Scalar, a
scheduled ComputedBuffer (reductions, realized values) or a TorchCall (extern, fallback, view
replay). A node whose lowering is missing or raises becomes a fallback call into torch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.triton.eager_check import EagerCheck
from pdyn.backends.triton.layout import dense, order, stride_order
from pdyn.backends.triton.ir import (
    Buffer, ComputedBuffer, Pointwise, Reduction, Scalar, SchedulerNode, TorchCall, View,
    buffer_value, contiguous_strides,
)
from pdyn.backends.triton.symbolic import SymbolicGraph, is_size_node, pexpr
from pdyn.backends.triton.writes import WritePlan, lower_write
from pdyn.guards.guards import Guard
from pdyn.guards.tensor_guards import StrideGuard
from pdyn.ops import op_of
from pdyn.ops.effects import mutates

log = logging.getLogger("pdyn.lowering")

# Realize a value with several consumers once inlining it would recompute this much.
REALIZE_OPS = 30
REALIZE_READS = 4


def _same_order(layout: tuple[int, ...], sizes: list[int], strides: list[int]) -> bool:
    """Whether the example's strides (the fake result's) keep `layout`'s order on its dims of
    more than one element. The eager check's small sizes can make a reshape a view where the
    example's sizes copy it (a transposed (2, 2) reshaped to (2, 2)): the example's layout wins."""
    if not all(type(v) is int for v in sizes + strides):
        return True  # data-dependent sizes: no example values to compare
    big = [d for d in layout if sizes[d] != 1]
    return all(strides[p] <= strides[q] for p, q in zip(big, big[1:]))


class NotLowered(Exception):
    """This node has no lowering for these arguments; it becomes a fallback call."""


@dataclass(frozen=True)
class ExternCall:
    """A graph node run as a torch call inside the lowered graph, and why: `kind` is "library"
    (matrix products, attention, convolutions: torch's kernels by design), "fallback" (no
    lowering for it, or for these arguments) or "write" (a write to memory, in order)."""

    node: str
    op: str
    kind: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node} ({self.op}): {self.kind}, {self.reason}"


AUTOCAST = (torch.amp._enter_autocast, torch.amp._exit_autocast)


class GraphLowering:
    """State of one graph's lowering: values per node, scheduled nodes in order, graph outputs."""

    def __init__(self, gm: torch.fx.GraphModule, sym: SymbolicGraph) -> None:
        self.gm, self.sym = gm, sym
        self.env: dict[torch.fx.Node, Any] = {}
        self.scheduled: list[SchedulerNode] = []
        self.inputs: list[tuple[str, Buffer | None]] = []
        self.outputs: list[str] = []  # wrapper expressions, one per output
        self.output_buffers: set[str] = set()
        self.runtime_names: dict[int, str] = {}  # id(value) -> wrapper variable holding it
        self.counter = 0
        self.fallbacks: list[str] = []
        self.externs: list[ExternCall] = []
        self.forced: dict[torch.fx.Node, str] = {}  # nodes a failed compile sends to torch, and why
        self.order = {node: i for i, node in enumerate(gm.graph.nodes)}
        self.autocast = 0  # open autocast blocks at the node being lowered
        self.current: torch.fx.Node | None = None  # the node being lowered
        self.device = torch.device("cpu")
        self.producer: dict[int, torch.fx.Node] = {}
        self.assumptions: list[Guard] = []  # what the kernels assume beyond the entry's guards
        self.stride_bindings: list[tuple[sympy.Symbol, str]] = []
        self.eager_check = EagerCheck(gm, sym)

    def new_name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- metadata ------------------------------------------------------------------------------
    def fake(self, node: torch.fx.Node) -> Any:
        """The node's example value (a fake tensor of the example call's sizes): dtype, device."""
        return self.sym.values[node]

    def ranges(self, node: torch.fx.Node, item: int | None = None) -> list[sympy.Expr]:
        """The node's sizes as the tracer stamped them (item `item` of a tuple result)."""
        sizes = self.sym.sizes[node]
        return list(sizes if item is None else sizes[item])

    def strides(self, node: torch.fx.Node, item: int | None = None) -> list[sympy.Expr]:
        """Eager's strides for the node's result (item `item` of a tuple result): dense in the
        order eager laid it out where the eager check saw it run, else in the example's order."""
        fake, layout = self.fake(node), self.eager_check.layouts.get(node)
        if item is not None:
            fake, layout = fake[item], layout[item] if layout is not None else None
        if layout is None or not _same_order(layout, list(fake.shape), list(fake.stride())):
            layout = order(list(fake.shape), list(fake.stride()))
        return dense(self.ranges(node, item), layout)

    # -- the walk ------------------------------------------------------------------------------
    def run(self) -> None:
        from pdyn.backends.triton.lowering import LOWERINGS

        self.writes = WritePlan(self.gm, LOWERINGS, self.forced)
        for i, node in enumerate(n for n in self.gm.graph.nodes if n.op == "placeholder"):
            self.env[node] = self.placeholder(node, i)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            self.current = node
            try:
                if node.op == "output":
                    self.finish_outputs(node.args[0])
                    self.eager_check.forget()
                    continue
                self.env[node] = self.lower_node(node, LOWERINGS)
                self.eager_check.drop_read(node)
            except Exception as e:
                e.pdyn_nodes = [node]  # type: ignore[attr-defined]  # the compile retries it with torch
                raise

    def lowered(self) -> int:
        """The graph's ops lowered here (not run as torch calls)."""
        on_torch = {e.node for e in self.externs}
        return sum(n.op in ("call_function", "call_method", "call_module") and n.name not in on_torch
                   for n in self.gm.graph.nodes)

    def origin(self, value: Any = None) -> torch.fx.Node | None:
        """The node a scheduled computation comes from: the value's producer, else the node being lowered."""
        return self.producer.get(id(value), self.current) if value is not None else self.current

    def placeholder(self, node: torch.fx.Node, i: int) -> Any:
        fake = self.fake(node)
        name = f"a{i}"
        if isinstance(fake, torch.Tensor):
            self.device = fake.device
            size = self.ranges(node)
            buf = Buffer(name, fake.dtype, size, self.input_strides(node, i, fake, size))
            self.inputs.append((name, buf))
            value = buffer_value(buf)
            self.runtime_names[id(value)] = name
            return value
        self.inputs.append((name, None))
        if node in self.sym.exprs:
            return Scalar(self.sym.exprs[node])
        return fake

    def input_strides(self, node: torch.fx.Node, i: int, fake: torch.Tensor,
                      size: list[sympy.Expr]) -> list[sympy.Expr]:
        """Strides the entry's guard fixes (static or contiguous inputs) are used as they are.
        Others are stride symbols bound from the call, except that a dim of stride 1 stays 1, so
        the innermost loads stay contiguous, and the strides keep their order (eager lays results
        out by it): both assumed, and returned as a guard on the input."""
        known = self.sym.input_strides.get(node)
        if known is not None:
            return list(known)
        name = f"a{i}"
        strides: list[sympy.Expr] = []
        unit: list[int] = []
        for d, (s, n) in enumerate(zip(fake.stride(), size)):
            if n == 1:
                strides.append(sympy.Integer(0))
            elif s == 1:
                strides.append(sympy.Integer(1))
                unit.append(d)
            else:
                symbol = sympy.Symbol(f"{name}_st{d}", integer=True)
                self.stride_bindings.append((symbol, f"{name}.stride({d})"))
                strides.append(symbol)
        example = {d: int(s) for d, (s, n) in enumerate(zip(fake.stride(), size)) if n != 1}
        self.assumptions.append(StrideGuard(self.sym.sources[i], unit=tuple(unit),
                                            order=tuple(stride_order(example))))
        return strides

    def lower_node(self, node: torch.fx.Node, table: dict[Any, Any]) -> Any:
        if is_size_node(node):
            if node in self.sym.exprs:
                return Scalar(self.sym.exprs[node])  # size arithmetic: the expression is the value
            if all(u in self.sym.exprs for u in node.users):
                return None  # an intermediate size: its users carry their own expressions
            return self.fallback(node, "a size computed with torch")
        if node.op == "get_attr":
            return self.fallback(node)
        if node in self.writes.live and mutates(node):  # NOTE: before the rest: a write is always in order
            return lower_write(self, node, self.forced.get(node, "writes memory that other values may view"))
        why = self.torch_only(node)
        if why is not None:
            return self.fallback(node, why, live=node in self.writes.live)
        functional = self.writes.functional.get(node)
        op = functional or op_of(node)
        fn = table.get(op)
        if fn is None or not self.eager_check.accepts(node):  # NOTE: a lowering never computes what eager rejects
            return self._unlowered(node, fn is None, op)
        args = torch.fx.node.map_arg(node.args, lambda n: self.env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: self.env[n])
        try:
            value = fn(self, node, *args, **kwargs)
            if functional is not None:
                value = self._written_value(node, value)
            if isinstance(value, Pointwise) and not isinstance(value, View):
                value = self.maybe_realize(node, value)  # NOTE: for every lowering (norms, softmax too)
            self.producer[id(value)] = node
            return value
        except Exception as e:  # noqa: BLE001  # NOTE: any lowering failure means "let torch run it"
            log.debug("fallback for %s: %s", node.format_node(), e)
            if functional is not None:
                return lower_write(self, node, f"its out-of-place form is not lowered here ({e})")
            return self.fallback(node, f"its lowering does not handle these arguments ({e})")

    def torch_only(self, node: torch.fx.Node) -> str | None:
        """Why `node` runs with torch whatever its op: a module call, an autocast block (autocast
        picks dtypes inside torch's ops), memory a write may reach, a failed compile."""
        if node.target in AUTOCAST:
            self.autocast += 1 if node.target is torch.amp._enter_autocast else -1
            return "enters or leaves an autocast block"
        if self.autocast:
            return "inside an autocast block: autocast picks its dtypes inside torch's ops"
        if node.op == "call_module":
            return "a module call: torch runs the module"
        if node in self.forced:
            return self.forced[node]
        if node in self.writes.live:
            return "may share memory with a tensor the graph writes: run on live tensors"
        return None

    def _unlowered(self, node: torch.fx.Node, missing: bool, op: Any) -> Any:
        from pdyn.backends.triton.fallbacks import reason

        if node in self.writes.functional:
            return lower_write(self, node, "torch rejects its out-of-place form here" if not missing
                               else "no lowering of its out-of-place form")
        if not missing:
            return self.fallback(node, "torch rejects these arguments: torch raises its error on each call")
        return self.fallback(node, reason(op) or f"no lowering for {op.name}")

    def _written_value(self, node: torch.fx.Node, value: Any) -> Any:
        """A write lowered as its out-of-place op: the new value has the written tensor's sizes
        and dtype (eager casts into it), and later reads of the written tensor read it."""
        target = node.args[0]
        fake = self.fake(target)
        if not isinstance(value, Pointwise) or list(value.ranges) != self.ranges(target) \
                or value.dtype != fake.dtype:
            raise NotLowered("the out-of-place result differs from the written tensor's sizes or dtype")
        self.env[target] = value
        self.producer[id(value)] = target
        return value

    def storage(self, value: Any) -> Any:
        """`value` as the contents of a buffer: a lazy value is stored (with eager's strides)."""
        if not isinstance(value, Pointwise) or value.buffer is not None:
            return value
        if isinstance(value, View):
            raise NotLowered("a write through a view of a value the graph computed")
        node = self.producer.get(id(value))
        stored = buffer_value(self.schedule_pointwise(value, stride=self.eager_strides(value)))
        if node is not None:
            self.producer[id(stored)] = node
        return stored

    def store_pending(self, names: set[str], at: torch.fx.Node) -> None:
        """Before a write to `names`: store each lazy value that reads them and is read after `at`
        (it must see the old contents; a kernel that runs later would read the new)."""
        for node, value in list(self.env.items()):
            if node is not at and any(self.order[u] > self.order[at] for u in node.users):
                self.env[node] = self._stored_if_reading(value, names)

    def _stored_if_reading(self, value: Any, names: set[str]) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(self._stored_if_reading(v, names) for v in value)
        if isinstance(value, Pointwise) and value.buffer is None and value.reads & names:
            stored = buffer_value(self.schedule_pointwise(value, stride=self.eager_strides(value)))
            self.producer[id(stored)] = self.producer.get(id(value))
            return stored
        return value

    # -- realization ---------------------------------------------------------------------------
    def schedule_pointwise(self, value: Pointwise, size: list[sympy.Expr] | None = None,
                           stride: list[sympy.Expr] | None = None) -> Buffer:
        size = list(value.ranges) if size is None else size
        stride = contiguous_strides(size) if stride is None else stride
        buf = Buffer(self.new_name("buf"), value.dtype, size, stride)
        self.scheduled.append(ComputedBuffer(buf, value, value.reads, origin=self.origin(value)))
        return buf

    def schedule_reduction(self, red: Reduction, dtype: torch.dtype, reads: frozenset[str],
                           size: list[sympy.Expr], keep_index: Any,
                           stride: list[sympy.Expr] | None = None) -> Pointwise:
        buf = Buffer(self.new_name("buf"), dtype, size, stride or contiguous_strides(size))
        self.scheduled.append(ComputedBuffer(buf, red, reads, keep_index, origin=self.origin()))
        return buffer_value(buf)

    def maybe_realize(self, node: torch.fx.Node, value: Pointwise) -> Pointwise:
        """Realize a multi-use value whose recomputation would cost more than a store and a load."""
        if value.buffer is not None or len(node.users) < 2:
            return value
        if value.ops > REALIZE_OPS or len(value.reads) > REALIZE_READS:
            return buffer_value(self.schedule_pointwise(value, stride=self.strides(node)))
        return value

    def eager_strides(self, value: Pointwise) -> list[sympy.Expr] | None:
        """The strides eager gives the node that produced `value`, if a node did: a realized value
        has eager's layout, so torch ops (views above all) see what they would in eager."""
        node = self.producer.get(id(value))
        if node is None or not isinstance(self.fake(node), torch.Tensor):
            return None
        return self.strides(node) if self.ranges(node) == list(value.ranges) else None

    def runtime(self, value: Any) -> str:
        """A wrapper expression holding `value` as a real tensor or Python number."""
        if isinstance(value, Scalar):
            return pexpr(value.expr)
        if isinstance(value, (tuple, list)):  # a multi-output value a torch call reads whole (a getitem of it)
            items = "".join(f"{self.runtime(v)}, " for v in value)
            return f"({items})" if isinstance(value, tuple) else f"[{items}]"
        if not isinstance(value, Pointwise):
            return repr(value)
        if id(value) in self.runtime_names:
            return self.runtime_names[id(value)]
        if isinstance(value, View) and value.node is not None and value.base is not None:
            name = self.torch_call("view", value.node, {value.node.args[0]: value.base}).name
        elif value.buffer is not None:
            name = value.buffer.name
        else:
            buffer = self.schedule_pointwise(value, stride=self.eager_strides(value))
            name = buffer.name
            self.read_stored(value, buffer)
        self.runtime_names[id(value)] = name
        return name

    def read_stored(self, value: Pointwise, buffer: Buffer) -> None:
        """Nodes lowered from now on read `value` from the buffer a torch call needed it in,
        instead of computing it again (a residual stream whose norm feeds a matmul and the next
        add would otherwise grow by a layer's ops with every layer)."""
        node = self.producer.get(id(value))
        if node is None or self.env.get(node) is not value:
            return
        stored = buffer_value(buffer)
        self.env[node] = stored
        self.producer[id(stored)] = node
        self.runtime_names[id(stored)] = buffer.name

    def torch_call(self, kind: str, node: torch.fx.Node, override: dict[Any, Any] | None = None,
                   **extra: Any) -> TorchCall:
        override = override or {}
        inputs, reads = [], set()
        for n in node.all_input_nodes:
            value = override.get(n, self.env.get(n))
            expr = self.runtime(value)
            inputs.append(expr)
            reads.add(expr)
        call = TorchCall(kind, node, self.new_name("t"), inputs, frozenset(reads), **extra)
        self.scheduled.append(call)
        if kind == "extern":
            from pdyn.backends.triton.fallbacks import LIBRARY

            self.note_extern(node, "library", LIBRARY)
        return call

    def check_indices(self, node: torch.fx.Node, index: Pointwise, bound: sympy.Expr,
                      ignored: int | None = None, error: type = RuntimeError) -> None:
        """Before a kernel gathers with `index`: a node over the index's elements asserts each lies
        in [0, bound) (or is `ignored`), as eager does: eager's error under the interpreter, a
        device assert without a sync on the GPU. It has the index's ranges, so it fuses into the
        kernel that walks them (a row reduction gathering one target per row); the gathering
        kernel's loads are masked to the bounds, so nothing reads outside whatever runs first."""
        # NOTE: size-1 dims dropped: the check walks the same elements in any shape, and `t[:, None]`
        # then has the rows of the row reduction it fuses into
        kept = [d for d, n in enumerate(index.ranges) if n != 1]

        def ok(h: Any, at: list[sympy.Expr]) -> Any:
            idx: list[sympy.Expr] = [sympy.Integer(0)] * len(index.ranges)
            for d, i in zip(kept, at):
                idx[d] = i
            v = h.cast(index.fn(h, idx), torch.int64)
            inside = h.op("and", torch.bool, h.op("ge", torch.bool, v, h.constant(0, torch.int64)),
                          h.op("lt", torch.bool, v, h.scalar(bound, torch.int64)))
            if ignored is not None:
                inside = h.op("or", torch.bool, inside, h.op("eq", torch.bool, v, h.constant(ignored, torch.int64)))
            h.check(inside, at, error)
            return inside

        size = [index.ranges[d] for d in kept]
        value = Pointwise(size, torch.bool, ok, index.reads)
        buf = Buffer(self.new_name("chk"), torch.bool, size, contiguous_strides(size))
        self.scheduled.append(ComputedBuffer(buf, value, value.reads, effect=True, origin=self.origin()))

    def fallback(self, node: torch.fx.Node, reason: str | None = None, live: bool = False) -> Any:
        """`node` runs as a torch call; `live`: kernels read its result in place (no contiguous
        copy that a later write would leave stale)."""
        if node.op != "get_attr":
            self.fallbacks.append(node.format_node())
            self.note_extern(node, "fallback", reason or "no lowering")
        call = self.torch_call("fallback", node)
        # NOTE: a node without an example value (an autocast block's mode) is an opaque object
        return self.result_value(node, call, self.sym.values.get(node), live=live)

    def note_extern(self, node: torch.fx.Node, kind: str, reason: str) -> None:
        from pdyn.backends.triton.fallbacks import LIBRARY

        if kind == "fallback" and reason == LIBRARY:
            kind = "library"
        self.externs.append(ExternCall(node.name, _op_name(node), kind, reason))

    def result_value(self, node: torch.fx.Node, call: TorchCall, fake: Any, path: str = "",
                     sizes: Any = None, live: bool = False) -> Any:
        """The IR value of a torch call's result: tensors become contiguous buffers for kernels,
        or (`live`) the tensors themselves, with their strides read on each call."""
        expr = call.name + path
        sizes = self.sym.sizes.get(node) if sizes is None and not path else sizes
        if isinstance(fake, torch.Tensor):
            if sizes is None:
                raise NotLowered(f"no stamped sizes for {node.name}{path}")
            size = list(sizes)
            contig = f"{call.name}c{path.replace('[', '_').replace(']', '')}"
            if live:
                strides = [sympy.Symbol(f"{contig}_st{d}", integer=True) for d in range(len(size))]
                buf = Buffer(contig, fake.dtype, size, list(strides))
                call.binds.append((sympy.Symbol(contig), expr))
                call.binds.extend((s, f"{contig}.stride({d})") for d, s in enumerate(strides))
            else:
                buf = Buffer(contig, fake.dtype, size, contiguous_strides(size))
                call.binds.append((sympy.Symbol(contig), f"_contiguous({expr})"))
            value = buffer_value(buf)
            self.runtime_names[id(value)] = expr
            return value
        if isinstance(fake, (tuple, list)):
            items = sizes if isinstance(sizes, (tuple, list)) else [None] * len(fake)
            return type(fake)(self.result_value(node, call, f, f"{path}[{i}]", s, live)
                              for i, (f, s) in enumerate(zip(fake, items)))
        if isinstance(fake, (int, float)):
            symbol = sympy.Symbol(f"{call.name}v{len(call.binds)}")
            call.binds.append((symbol, expr))
            return Scalar(symbol, is_float=isinstance(fake, float))
        return Opaque(expr)

    def finish_outputs(self, out: Any) -> None:
        def one(value: Any) -> str:
            if isinstance(value, Pointwise) and value.buffer is None and not isinstance(value, View):
                return self.output_buffer(value)
            expr = self.runtime(value)
            if isinstance(value, Pointwise) and value.buffer is not None:
                self.output_buffers.add(value.buffer.name)
            return expr

        flat = out if isinstance(out, (tuple, list)) else [out]
        self.outputs = [one(self.env[v]) if isinstance(v, torch.fx.Node) else repr(v) for v in flat]

    def output_buffer(self, value: Pointwise) -> str:
        """Stored with eager's strides (code after the graph may view it)."""
        buf = self.schedule_pointwise(value, stride=self.eager_strides(value))
        self.output_buffers.add(buf.name)
        self.runtime_names[id(value)] = buf.name
        return buf.name


class Opaque:
    """A runtime object the IR does not model (a tuple of tensors from a fallback, ...)."""

    def __init__(self, expr: str) -> None:
        self.expr = expr

    def __repr__(self) -> str:
        return self.expr


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))
