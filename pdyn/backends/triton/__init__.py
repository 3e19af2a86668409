"""The Triton backend: `triton_backend(gm, example_inputs)` lowers a captured fx graph to fused
Triton kernels whose sizes are run-time arguments, behind a generated Python wrapper.

Pipeline: symbolic.read_stamps (the sympy sizes pdyn's tracer stamped on each node) ->
GraphLowering (IR) -> scheduler (fusion) -> codegen (kernel text; codegen_layout picks 1-D or 2-D
tiles from the accesses) -> wrapper (Python `call`).
Without a GPU the kernels run under Triton's interpreter. Whatever this backend cannot handle runs
with torch node by node (extern calls between kernels, each named with its reason); the whole graph
runs with torch only where an input requires grad or a compile failure names no node. What the kernels
assume beyond the entry's guards (the layout of a non-contiguous input) the returned callable
carries as `assumptions`, guards the hook adds to the entry's guard function.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx
from torch.utils._pytree import tree_leaves

from pdyn.backends.autograd import trains, training_backend
from pdyn.backends.report import REPORT, BackendReport
from pdyn.backends.triton.runtime import prepare_interpreter, use_interpreter
from pdyn.backends.triton.unbacked import bind_unbacked
from pdyn.guards.guards import Guard

if use_interpreter():
    prepare_interpreter()  # NOTE: before anything here imports triton

log = logging.getLogger("pdyn.lowering")
output_code = logging.getLogger("pdyn.output_code")


@dataclass
class CompiledGraph:
    """What one compile produced; kept on the returned callable as `.pdyn_triton` for tests."""

    wrapper_source: str
    kernel_sources: list[str]
    kernel_count: int
    fallbacks: list[str]
    call: Callable[..., Any]
    launchers: list[Any] = field(default_factory=list)  # runtime.KernelLauncher per kernel
    assumptions: list[Guard] = field(default_factory=list)  # checked by the entry's guard
    compile_jobs: list[Any] = field(default_factory=list)  # runtime.precompile.Job per launch of the first call
    ahead: Any = None  # ahead.AheadCompiler: the jobs of any tuple of sizes
    externs: list[Any] = field(default_factory=list)  # graph_lowering.ExternCall per node run with torch
    lowered: int = 0  # nodes lowered (kernels, index arithmetic, size expressions)
    boxed: bool = False  # call(list) emptying the list (a training graph's backward: wrapper_free.py)


def triton_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    if trains(example_inputs):  # a forward and a backward graph behind one autograd Function
        return training_backend(gm, example_inputs, triton_backend)
    eager = gm.forward
    reason = _eager_reason(gm, example_inputs)
    on_cpu = {} if use_interpreter() else _reading_cpu_tensors(gm)
    if on_cpu and all(n.op in ("placeholder", "output", "get_attr") or n in on_cpu for n in gm.graph.nodes):
        reason = "CPU tensors on a machine whose kernels run on the GPU"
    compiled = None
    if reason is None:
        compiled, reason = _compile_with_retries(gm, example_inputs, on_cpu)
    if compiled is None:
        log.info("pdyn triton backend: graph runs with torch: %s", reason)
        gm.meta[REPORT] = BackendReport("triton", on_torch=reason)

        def run_with_torch(*args: Any) -> Any:  # a function, not the bound method: it carries a marker
            return eager(*args)

        run_with_torch.pdyn_triton = None  # type: ignore[attr-defined]  # marker for tests
        return run_with_torch
    gm.meta[REPORT] = BackendReport("triton", len(set(compiled.kernel_sources)), None, tuple(compiled.externs),
                                    compiled.lowered)
    return _entry(compiled)


MAX_RETRIES = 8  # compiles of one graph, each sending the nodes the last one failed on to torch


def _reading_cpu_tensors(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, str]:
    """The nodes that read or make a tensor off the GPU (a generator's state kept for a backward,
    a CPU buffer): torch runs them, as eager would, and the GPU's nodes around them stay kernels."""
    def off_gpu(value: Any) -> bool:
        return any(isinstance(t, torch.Tensor) and t.device.type != "cuda" for t in tree_leaves(value))

    forced = {}
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module") and node.target is not operator.getitem and (
                off_gpu(node.meta.get("example_value"))
                or any(off_gpu(a.meta.get("example_value")) for a in node.all_input_nodes)):
            forced[node] = "it reads or makes a CPU tensor"
    return forced


def _compile_with_retries(gm: torch.fx.GraphModule, example_inputs: list[Any],
                          forced: dict[torch.fx.Node, str]) -> tuple[CompiledGraph | None, str]:
    """Compile; where compiling fails for some nodes (their lowering, their kernel), those nodes
    run as torch calls and the graph compiles again. The whole graph runs with torch only where a
    failure names no node, or names the same nodes again."""
    forced = dict(forced)
    for _ in range(MAX_RETRIES):
        try:
            return compile_graph(gm, example_inputs, forced), ""
        except Exception as e:  # noqa: BLE001  # NOTE: never wrong: a compile failure runs with torch
            reason = f"{type(e).__name__}: {e}"
            blamed = [n for n in getattr(e, "pdyn_nodes", ()) if isinstance(n, torch.fx.Node)
                      and n.op not in ("placeholder", "output", "get_attr") and n not in forced]
            if not blamed:
                log.warning("pdyn triton backend: running this graph with torch (%s)", reason)
                return None, reason
            log.info("pdyn triton backend: %s run with torch after %s", [n.name for n in blamed], reason)
            for node in blamed:
                forced[node] = f"compiling it failed ({reason})"
    return None, "compiling failed again after sending the failing nodes to torch"


def _entry(compiled: CompiledGraph) -> Callable[..., Any]:
    """The generated wrapper itself (no frame around it: the entry's guard checked everything),
    marked for tests and benchmarks, carrying its assumptions to the entry's guard."""
    call = compiled.call
    call.pdyn_triton = compiled  # type: ignore[attr-defined]  # inspected by tests and benchmarks
    call.assumptions = compiled.assumptions  # type: ignore[attr-defined]  # merged into the guard
    call.pdyn_boxed = compiled.boxed  # type: ignore[attr-defined]  # call(list): see wrapper_free.py
    return call


def _eager_reason(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> str | None:
    """Graphs this backend leaves to torch entirely: autograd (grad mode with an input that
    requires grad: the entry's guard checks both, so this holds on every call it serves). Writes,
    module calls and autocast blocks run as torch calls node by node (GraphLowering)."""
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in example_inputs):
        log.warning("pdyn triton backend: an input requires grad; running the graph "
                    "with torch so autograd works (use torch.no_grad() for kernels)")
        return "an input requires grad"
    return None


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any],
                  forced: dict[torch.fx.Node, str] | None = None) -> CompiledGraph:
    from pdyn.backends.triton import lowering  # noqa: F401  # registers the lowerings
    from pdyn.backends.triton.ahead import AheadCompiler
    from pdyn.backends.triton.graph_lowering import GraphLowering
    from pdyn.backends.triton.scheduler import schedule
    from pdyn.backends.triton.symbolic import read_stamps
    from pdyn.backends.triton.wrapper import WrapperCode, kernel_count, output_structure

    interpret = use_interpreter()
    sym = read_stamps(gm, example_inputs)
    lx = GraphLowering(gm, sym)
    lx.forced.update(forced or {})
    lx.run()
    bind_unbacked(lx)  # data-dependent sizes: read back after the torch call that makes them
    steps = schedule(lx, interpret)
    code = WrapperCode(lx, sym, interpret)
    source = code.build(steps, output_structure(gm))
    namespace = dict(code.globals)
    ahead = AheadCompiler(steps, code.ahead_names, namespace, lx.device if code.ahead else None)
    namespace.update(_ahead=ahead, _ahead_seen=ahead.seen)
    exec(compile(source, "<pdyn triton wrapper>", "exec"), namespace)  # noqa: S102  # our own text
    hints = {symbol.name: value for symbol, value in sym.hints.items()}
    key = tuple(hints.get(n) for n in code.ahead_names)
    jobs = ahead.jobs(key) if None not in key else []  # the example call's launches
    if code.ahead and None not in key:
        ahead(key)  # the first call's compiles, in parallel, before it runs
    if output_code.isEnabledFor(logging.DEBUG):
        output_code.debug("wrapper:\n%s\n%s", source, "\n\n".join(code.kernels))
    return CompiledGraph(source, code.kernels, kernel_count(steps), lx.fallbacks, namespace["call"],
                         code.launchers, lx.assumptions, jobs, ahead, lx.externs, lx.lowered(), code.boxed)
