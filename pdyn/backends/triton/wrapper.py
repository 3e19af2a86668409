"""The Python wrapper of one graph: bind the size symbols it uses from the call's inputs, allocate
buffers, launch kernels, call torch, return outputs. It checks nothing: the entry's guards (with
the backend's assumptions among them) already hold when it runs.

Emitted as source text (logged with PDYN_LOGS=output_code) and exec'd once; every size in it is an
expression over the call's inputs, so one wrapper serves every size the guards admit.
"""

from __future__ import annotations

import math
import re
from typing import Any

import sympy
import torch

from pdyn.backends.autograd.joint import BOXED_CALL
from pdyn.backends.triton import runtime
from pdyn.backends.triton.codegen import KernelSource
from pdyn.backends.triton.graph_lowering import GraphLowering
from pdyn.backends.triton.ir import Buffer, ComputedBuffer, TorchCall
from pdyn.backends.triton.scheduler import KernelGroup, Step
from pdyn.backends.triton.symbolic import SymbolicGraph, pexpr
from pdyn.backends.triton.wrapper_free import free_dead


class WrapperCode:
    """Lines of `call(...)` and the objects its globals need."""

    def __init__(self, lx: GraphLowering, sym: SymbolicGraph, interpret: bool) -> None:
        self.lx, self.sym, self.interpret = lx, sym, interpret
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {"torch": torch, "_rt": runtime, "math": math,
                                        "_dev": lx.device, "_empty": runtime.allocator(lx.device)}
        self.kernels: list[str] = []
        self.launchers: list[runtime.KernelLauncher] = []
        self.ahead = lx.device.type == "cuda" and not interpret  # compile a new size's kernels ahead
        self.ahead_names: list[str] = []
        self.boxed = False

    def add(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)

    def build(self, steps: list[Step], out_struct: str) -> str:
        params = ", ".join(name for name, _ in self.lx.inputs)
        self.boxed = boxed = bool(self.lx.gm.meta.get(BOXED_CALL))  # call(list): takes the caller's references
        self.add(f"def call({'_args' if boxed else params}):", 0)
        if self.lx.device.type == "cuda" and not self.interpret:
            # kernels and allocations go to the current device: make it the graph's
            index = self.lx.device.index or 0
            self.globals.update(_current_device=getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device),
                                _device_guard=torch.cuda.device)
            self.add(f"if _current_device() != {index}:")
            self.add(f"with _device_guard({index}):", 2)
            self.add(f"return call({'_args' if boxed else params})", 3)
        if boxed and params:
            self.add(f"{params}{',' if len(self.lx.inputs) == 1 else ''} = _args")
            self.add("_args.clear()")
        head = len(self.lines)
        for i, step in enumerate(steps):
            if isinstance(step, TorchCall):
                self.torch_call(step)
            else:
                self.kernel(i, step)
        self.add(f"return {out_struct.format(*self.lx.outputs)}")
        body, self.lines = unused_copies_dropped(self.lines[head:]), self.lines[:head]
        inputs = set() if boxed else {name for name, _ in self.lx.inputs}  # a boxed call's inputs die too
        body = free_dead(body, inputs | set(self.lx.outputs), {name for name, _ in self.lx.inputs})
        bindings = used(self.sym.bindings + self.lx.stride_bindings, "\n".join(body))
        self.bind_sizes(bindings)
        self.ahead_names = [symbol.name for symbol, _ in bindings]
        if self.ahead and bindings:  # new sizes: their launches' compiles, made ahead in parallel
            key = f"({', '.join(self.ahead_names)},)"
            self.add(f"if {key} not in _ahead_seen:")
            self.add(f"_ahead({key})", 2)
        self.lines += body
        return "\n".join(self.lines) + "\n"

    def bind_sizes(self, bindings: list[tuple[sympy.Symbol, str]]) -> None:
        """`s0 = a0.shape[0]` per symbol, with each input's `.shape` read once (each read of a
        tensor attribute costs on every call)."""
        shapes: dict[str, str] = {}
        for symbol, expr in bindings:
            m = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", expr)
            if m:
                if m.group(1) not in shapes:
                    shapes[m.group(1)] = f"_{m.group(1)}_shape"
                    self.add(f"{shapes[m.group(1)]} = {m.group(1)}.shape")
                expr = f"{shapes[m.group(1)]}[{m.group(2)}]"
            self.add(f"{symbol.name} = {expr}")

    def torch_call(self, call: TorchCall) -> None:
        if call.kind == "check":
            assert call.check is not None
            bound, ignored, error = call.check
            self.globals[error.__name__] = error
            self.add(f"_rt.check_index({call.inputs[0]}, {error.__name__})  # indices in [0, {pexpr(bound)})"
                     + ("" if ignored is None else f" or {ignored}"))
            return
        inline = _method_call(call, self.lx)
        if inline is not None:  # a Tensor method with plain arguments (views above all): called directly
            self.add(f"{call.name} = {inline}  # {call.kind}: {_describe(call)}")
        else:
            op = f"_op_{call.name}"
            self.globals[op] = runtime.TorchOp(call.node, self.lx.gm, call.target, call.args, call.kwargs)
            self.add(f"{call.name} = {op}({', '.join(call.inputs)})  # {call.kind}: {_describe(call)}")
        for symbol, expr in call.binds:
            expr = expr.replace("_contiguous(", "_rt.contiguous(")
            self.add(f"{symbol.name} = {expr}")

    def kernel(self, i: int, group: KernelGroup) -> None:
        if group.phased is None:
            self.launch(f"kernel{i}", group, 1)
            return
        # a reduction kernel that cannot split: one kernel per node where it would not fill the GPU
        t = group.source.tiling if group.source is not None else None
        assert t is not None
        inner = group.source.inner if group.source is not None else True
        x, r = pexpr(_product(t.x_ranges)), pexpr(_product(t.r_ranges))
        self.add(f"if not _rt.launch_config.phased({x}, {r}, {inner}):")
        self.launch(f"kernel{i}", group, 2)
        self.add("else:")
        for j, sub in enumerate(group.phased):
            self.launch(f"kernel{i}_{j}", sub, 2)

    def launch(self, name: str, group: KernelGroup, indent: int) -> None:
        source = group.source
        assert source is not None
        self.globals[name] = runtime.load_kernel(source.text, self.interpret)
        self.kernels.append(f"# {name}: {', '.join(n.name for n in group.nodes)}\n{source.text}")
        for node in group.nodes:
            if node.name in source.stored:
                self.allocate(node.buffer, indent)
        ptrs = [self.pointer_expr(b) for b in source.args.pointers.values()]
        sizes = [pexpr(e) for e in source.args.sizes]
        t = source.tiling
        launcher = runtime.KernelLauncher(self.globals[name], t.is_reduction, source.inner, source.split,
                                          self.interpret)
        group.launcher = launcher
        self.launchers.append(launcher)
        ptr_tuple = f"({', '.join(ptrs)}{',' if len(ptrs) == 1 else ''})"
        size_tuple = f"({', '.join(sizes)}{',' if len(sizes) == 1 else ''})"
        x = pexpr(_product(t.x_ranges))
        if source.ysplit is not None:  # 2-D tiles: y over the leading dims, x over the others
            y, x = (pexpr(_product(t.x_ranges[:source.ysplit])), pexpr(_product(t.x_ranges[source.ysplit:])))
            self.globals[f"{name}_launch"] = launcher.tiled
            self.add(f"{name}_launch({ptr_tuple}, {size_tuple}, {y}, {x})", indent)
            return
        if not t.is_reduction:
            self.globals[f"{name}_launch"] = launcher.pointwise
            self.add(f"{name}_launch({ptr_tuple}, {size_tuple}, {x})", indent)
            return
        r = pexpr(_product(t.r_ranges))
        self.globals[f"{name}_launch"] = launcher.reduce
        self.add(f"{name}_launch({ptr_tuple}, {size_tuple}, {x}, {r})", indent)

    def allocate(self, buf: Buffer, indent: int = 1) -> None:
        size = ", ".join(pexpr(s) for s in buf.size)
        stride = ", ".join(pexpr(s) for s in buf.stride)
        comma = "," if len(buf.size) == 1 else ""
        self.add(f"{buf.name} = _empty(({size}{comma}), ({stride}{comma}), {buf.dtype})", indent)

    def pointer_expr(self, buf: Buffer) -> str:
        return buf.name


CONTIGUOUS = re.compile(r"\s*(\w+) = _rt\.contiguous\(")


def unused_copies_dropped(body: list[str]) -> list[str]:
    """Without the contiguous copies of torch results that no later line reads (a split's items
    the code views instead): each would be a copy kernel and an allocation on every call."""
    counts: dict[str, int] = {}
    for line in body:
        for name in re.findall(r"\b[A-Za-z_]\w*\b", line.split("#")[0]):
            counts[name] = counts.get(name, 0) + 1
    return [line for line in body if not ((m := CONTIGUOUS.match(line)) and counts.get(m.group(1)) == 1)]


def used(bindings: list[tuple[sympy.Symbol, str]], text: str) -> list[tuple[sympy.Symbol, str]]:
    """The bindings of the symbols `text` names (a dim the wrapper never reads is not read)."""
    names = set(re.findall(r"\b[A-Za-z_]\w*\b", text))
    return [(symbol, expr) for symbol, expr in bindings if symbol.name in names]


def _product(ranges: list[Any]) -> Any:
    return sympy.Mul(*ranges) if ranges else sympy.Integer(1)


def _method_call(call: TorchCall, lx: GraphLowering) -> str | None:
    """`x.view(s0, 8, 64)` for a Tensor method node whose arguments are inputs or plain numbers:
    one Python call per run, where a TorchOp would map its arguments on every call. None otherwise."""
    node = call.node
    if call.target is not None or call.args is not None or not node.args:
        return None
    method = node.target if node.op == "call_method" else _as_method(node.target)
    if method is None or node.op not in ("call_method", "call_function") or "input" in node.kwargs:
        return None
    if not isinstance(node.args[0], torch.fx.Node) or not isinstance(lx.fake(node.args[0]), torch.Tensor):
        return None
    name_of = dict(zip(node.all_input_nodes, call.inputs))

    def plain(a: Any) -> str | None:
        if isinstance(a, torch.fx.Node):
            return name_of.get(a)
        if a is None or isinstance(a, bool) or (isinstance(a, (int, float)) and math.isfinite(a)):
            return repr(a)
        if type(a) in (tuple, list):
            items = [plain(x) for x in a]
            if None in items:
                return None
            body = ", ".join(items) + ("," if type(a) is tuple and len(items) == 1 else "")  # type: ignore[arg-type]
            return f"({body})" if type(a) is tuple else f"[{body}]"
        return None

    args = [plain(a) for a in node.args]
    kwargs = {k: plain(v) for k, v in node.kwargs.items()}
    if None in args or None in kwargs.values() or not str(method).isidentifier():
        return None
    rest = args[1:] + [f"{k}={v}" for k, v in kwargs.items()]  # type: ignore[operator]
    return f"{args[0]}.{method}({', '.join(rest)})"  # type: ignore[arg-type]


# Functions the backward graphs call that are the Tensor method of the same name on their first
# argument (same parameters): printed as method calls too
_METHOD_NAMES = ("reshape", "view", "transpose", "permute", "unsqueeze", "squeeze", "expand", "t", "flatten",
                 "unflatten", "contiguous", "narrow", "select", "matmul", "mm", "bmm")
_AS_METHOD = {f: name for name in _METHOD_NAMES
              for f in (getattr(torch.Tensor, name), getattr(torch, name, None)) if f is not None}


def _as_method(target: Any) -> str | None:
    try:
        return _AS_METHOD.get(target)
    except TypeError:  # an unhashable target
        return None


def _describe(call: TorchCall) -> str:
    target = call.target if call.target is not None else call.node.target
    return getattr(target, "__name__", str(target))


def output_structure(gm: torch.fx.GraphModule) -> str:
    """A format string rebuilding the graph's output container from the flat output names."""
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    if isinstance(out, (tuple, list)):
        inner = ", ".join("{}" for _ in out) + ("," if len(out) == 1 else "")
        return f"({inner})" if isinstance(out, tuple) else f"[{inner}]"
    return "{}"


def kernel_count(steps: list[Step]) -> int:
    return sum(isinstance(s, KernelGroup) for s in steps)


_ = (ComputedBuffer, KernelSource)
