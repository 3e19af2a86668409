"""Unit-test helpers: trace a function with the InstructionTranslator (as compile_frame does, without
compiling), check which opcodes ran, and compare the recorded graph as text."""

import inspect
import textwrap
from typing import Any

import torch

from pdyn.trace.translator import InstructionTranslator
from pdyn.base.config import Config
from pdyn.guards.guards import Guard
from pdyn.bytecode.instructions import decode
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.context import TraceContext
from pdyn.shapes.trace_plan import TracePlan
from pdyn.trace.frame_trace import CLOSURE_KEY
from pdyn.sources import ItemSource, LocalSource
from pdyn.trace.variables.builder import wrap
from pdyn.trace.variables.values.cell import CellVariable, real_cell


def trace(fn: Any, *args: Any, config: Config | None = None, plan: TracePlan | None = None,
          **kwargs: Any) -> InstructionTranslator:
    """Run `fn`'s bytecode symbolically on its arguments; `tx.result` is the returned tracker."""
    code = fn.__code__
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    tx = InstructionTranslator(code, {}, fn.__globals__, OutputGraph(code.co_name, TraceContext(plan)), config or Config())
    tx.locals = {name: wrap(tx, value, LocalSource(name)) for name, value in bound.arguments.items()}
    tx.cells = {name: CellVariable(tx.locals.pop(name, None)) for name in code.co_cellvars}
    for i, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):  # as compile_frame does
        tx.cells[name] = real_cell(tx, cell, ItemSource(LocalSource(CLOSURE_KEY), i),
                                   lambda v, name=name: wrap(tx, v, LocalSource(name)))
    tx.result = tx.run()  # type: ignore[attr-defined]
    return tx


def opnames(fn: Any) -> set[str]:
    """The instructions pdyn decodes from `fn` on this Python version."""
    return {inst.opname for inst in decode(fn.__code__)}


def assert_ran(tx: InstructionTranslator, fn: Any, *names: str) -> None:
    """Each opcode is in `fn`'s decoded code on this Python version, and the trace executed it."""
    present = opnames(fn)
    for name in names:
        assert name in present, f"{name} is not in {fn.__name__}'s bytecode: {sorted(present)}"
        assert name in tx.executed_opnames, f"{name} did not run: {sorted(tx.executed_opnames)}"


def _arg(a: Any) -> str:
    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_arg(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    if isinstance(a, slice):
        return f"slice({_arg(a.start)}, {_arg(a.stop)}, {_arg(a.step)})"
    return repr(a)


def _target(t: Any) -> str:
    module = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", repr(t))
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module == "torch.nn.functional":
        return f"F.{name}"
    if module.startswith("torch"):
        return f"torch.{name}"
    if module == "math":
        return f"math.{name}"
    return name


def graph_text(tx_or_graph: Any) -> str:
    """One line per node: `name = placeholder L['x']`, `add = operator.add(x, 1)`, `size = x.size(0)`."""
    graph = tx_or_graph.output.graph if isinstance(tx_or_graph, InstructionTranslator) else tx_or_graph
    lines = []
    for node in graph.nodes:
        args = ", ".join([_arg(a) for a in node.args] + [f"{k}={_arg(v)}" for k, v in node.kwargs.items()])
        if node.op == "placeholder":
            lines.append(f"{node.name} = placeholder {node.meta['source']}")  # as the user writes it
        elif node.op == "call_function":
            lines.append(f"{node.name} = {_target(node.target)}({args})")
        elif node.op == "call_method":
            self_arg, *rest = node.args
            rest_text = ", ".join([_arg(a) for a in rest] + [f"{k}={_arg(v)}" for k, v in node.kwargs.items()])
            lines.append(f"{node.name} = {_arg(self_arg)}.{node.target}({rest_text})")
        elif node.op == "output":
            lines.append(f"return {_arg(node.args[0])}")
        else:
            lines.append(f"{node.name} = {node.op} {node.target}({args})")
    return "\n".join(lines)


def assert_graph(tx_or_graph: Any, expected: str) -> None:
    actual = graph_text(tx_or_graph)
    expected = textwrap.dedent(expected).strip()
    assert actual == expected, f"graph differs:\n{actual}\n--- expected:\n{expected}"


def guards_of(tx: InstructionTranslator, kind: type[Guard]) -> list[Any]:
    return [g for g in tx.ctx.guards if isinstance(g, kind)]


def run_graph(tx: InstructionTranslator, *inputs: Any) -> Any:
    """Run the recorded graph on real inputs (placeholders in order), returning the traced result's
    value (a tensor, or a tuple/list of them)."""
    from pdyn.trace.variables.torch.tensor import TensorVariable

    result = tx.result  # type: ignore[attr-defined]
    graph = tx.output.graph
    items = getattr(result, "items", None)
    outs = items if isinstance(items, list) else [result]
    graph.output(tuple(o.node if isinstance(o, TensorVariable) else o.as_python_constant() for o in outs))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    values = gm(*inputs)
    return values if isinstance(items, list) else values[0]
