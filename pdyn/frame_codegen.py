"""The Python function a cache entry runs on a hit: read the graph inputs through their Sources,
call the compiled graph, replay Python side effects, and rebuild the frame's return value.

Generated as source (kept on the entry for `explain` and `PDYN_LOGS=output_code`) and compiled once.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable

import sympy
import torch.fx

from pdyn.errors import Unsupported
from pdyn.sources import Source
from pdyn.variables.base import VariableTracker

SIMPLE_LITERALS = (type(None), bool, int, str, bytes)


class FrameCodegen:
    """Collects the expressions and statements of one frame function."""

    def __init__(self) -> None:
        self.outputs: list[torch.fx.Node] = []
        self._output_index: dict[torch.fx.Node, int] = {}
        self.scope: dict[str, Any] = {"_modules": sys.modules}
        self._const_names: dict[int, str] = {}
        self.lines: list[str] = []
        self._temps: dict[int, str] = {}

    def graph_output(self, vt: Any) -> str:
        if vt.source is not None and vt.node.op == "placeholder":
            return self.source_expr(vt.source)
        if vt.node not in self._output_index:
            self._output_index[vt.node] = len(self.outputs)
            self.outputs.append(vt.node)
        return f"out[{self._output_index[vt.node]}]"

    def source_expr(self, source: Source) -> str:
        return source.expr()

    def constant(self, value: Any, hint: str = "c") -> str:
        if type(value) in SIMPLE_LITERALS or (type(value) is float and repr(value) == repr(float(repr(value)))
                                              and "n" not in repr(value)):
            return repr(value)
        if id(value) not in self._const_names:
            name = f"_{hint}{len(self._const_names)}"
            self._const_names[id(value)] = name
            self.scope[name] = value
        return self._const_names[id(value)]

    def once(self, vt: VariableTracker, expr: str) -> str:
        """Build a mutable container once, so that aliases of it stay one object."""
        if id(vt) not in self._temps:
            name = f"t{len(self._temps)}"
            self.lines.append(f"{name} = {expr}")
            self._temps[id(vt)] = name
        return self._temps[id(vt)]

    def reconstruct(self, vt: VariableTracker) -> str:
        return vt.reconstruct(self)


class ResumeCodegen(FrameCodegen):
    """The frame code of a graph break: it rebuilds the stack and locals for Python code that runs
    on, so a symbolic size is computed from the inputs (not specialized) and trace-time objects
    (functions, bound methods) are rebuilt where plain frame code would give up."""

    def __init__(self) -> None:
        super().__init__()
        self._symbols: set[str] = set()

    def reconstruct(self, vt: VariableTracker) -> str:
        from pdyn.variables.containers import IteratorVariable
        from pdyn.variables.functions import UserMethodVariable
        from pdyn.variables.symint import SymIntVariable
        from pdyn.variables.tensor import TensorMethodVariable

        if isinstance(vt, SymIntVariable) and not vt.is_python_constant():
            return self._symint(vt)
        if isinstance(vt, TensorMethodVariable):
            return f"{self.reconstruct(vt.tensor)}.{vt.name}"
        if isinstance(vt, UserMethodVariable):
            return f"{self.constant(types.MethodType, 'MethodType')}({self.reconstruct(vt.fn)}, {self.reconstruct(vt.obj)})"
        if isinstance(vt, IteratorVariable):
            raise Unsupported("reconstruct", "pdyn cannot rebuild an iterator held anywhere but on the stack")
        try:
            return vt.reconstruct(self)
        except Unsupported:
            value = getattr(vt, "value", None)
            if vt.source is None and isinstance(value, REBUILT_BY_IDENTITY):
                return self.constant(value, "f")
            raise

    def remaining(self, vt: Any) -> str:
        """The items an iterator on the stack has left, as a list (the code it goes to iterates it)."""
        items = vt.items.items if hasattr(vt.items, "items") else vt.items
        return "[" + "".join(f"{self.reconstruct(v)}, " for v in items[vt.index:]) + "]"

    def _symint(self, vt: Any) -> str:
        """A size expression, computed from the sizes it is made of; a data-dependent one from the graph."""
        from pdyn.symbolic_shapes import to_python

        env = vt.output.shape_env
        expr = env.simplify(vt.expr)
        symbols = sorted(expr.free_symbols, key=lambda s: s.name)
        if not all(env.origins.get(sym) for sym in symbols):
            return self.graph_output(vt)
        self.scope.setdefault("math", __import__("math"))
        for sym in symbols:
            if sym.name not in self._symbols:
                self._symbols.add(sym.name)
                self.lines.append(f"{sym.name} = {env.origins[sym][0].expr()}")
        text = to_python(expr)
        kind = "int" if vt.python_type() is int else "float" if vt.python_type() is float else "bool"
        return f"{kind}({text})"


REBUILT_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
                       types.MethodDescriptorType, types.WrapperDescriptorType)


def build_frame_function(codegen: FrameCodegen, result_expr: str, effects: list[str], input_exprs: list[str],
                         compiled: Callable[..., Any] | None, title: str,
                         tail: list[str] | None = None) -> tuple[Callable[..., Any], str]:
    """Assemble `run(L, G)`; returns the function and its source. With `tail` (a graph break),
    those lines end the function instead of returning `result_expr`."""
    body: list[str] = []
    if compiled is not None:
        codegen.scope["compiled_graph"] = compiled
        body.append(f"out = compiled_graph({', '.join(input_exprs)})")
    body += codegen.lines
    if tail is None:
        body.append(f"result = {result_expr}")
        body += effects
        body.append("return result")
    else:
        body += effects + tail
    source = f"# pdyn frame code for {title}\ndef run(L, G):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<pdyn frame {title}>", "exec"), codegen.scope)
    return codegen.scope["run"], source
