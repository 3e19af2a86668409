"""The Python function a cache entry runs on a hit: read the graph inputs through their Sources,
call the compiled graph, replay Python side effects, and rebuild the frame's return value.

Generated as source (kept on the entry for `explain` and `PDYN_LOGS=output_code`) and compiled once.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch.fx

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


def build_frame_function(codegen: FrameCodegen, result_expr: str, effects: list[str], input_exprs: list[str],
                         compiled: Callable[..., Any] | None, title: str) -> tuple[Callable[..., Any], str]:
    """Assemble `run(L, G)`; returns the function and its source."""
    body: list[str] = []
    if compiled is not None:
        codegen.scope["compiled_graph"] = compiled
        body.append(f"out = compiled_graph({', '.join(input_exprs)})")
    body += codegen.lines
    body.append(f"result = {result_expr}")
    body += effects
    body.append("return result")
    source = f"# pdyn frame code for {title}\ndef run(L, G):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<pdyn frame {title}>", "exec"), codegen.scope)
    return codegen.scope["run"], source
