"""The Python function a cache entry runs on a hit: read the graph inputs through their Sources,
call the compiled graph, replay Python side effects, and rebuild the frame's return value.

Generated as source (kept on the entry for `explain` and `PDYN_LOGS=output_code`) and compiled once.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
import types
import warnings
from typing import Any, Callable

import torch.fx

from pdyn.base.errors import InternalError, Unsupported
from pdyn.sources import AttrSource, IteratorAheadSource, ModuleMemberSource, Source
from pdyn.shapes.shape_env import to_python
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import IteratorVariable, ListVariable
from pdyn.trace.variables.values.cell import CellVariable
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from pdyn.trace.variables.iterators.generator import GeneratorVariable

SIMPLE_LITERALS = (type(None), bool, int, str, bytes)


class FrameCodegen:
    """Collects the expressions and statements of one frame function."""

    def __init__(self) -> None:
        self.outputs: list[torch.fx.Node] = []
        self._output_index: dict[torch.fx.Node, int] = {}
        self.scope: dict[str, Any] = {"_modules": sys.modules, "math": math}  # math: size expressions
        self._const_names: dict[int, str] = {}
        self.lines: list[str] = []
        self.positioned: list[str] = []   # run after the side effects: iterators moved to their place
        self._temps: dict[int, str] = {}
        self.prologue: list[str] = []   # run first: reads that must see the frame as it entered
        self._at_entry: dict[Source, str] = {}

    def graph_output(self, vt: Any) -> str:
        if vt.source is not None and vt.node.op == "placeholder":
            return self.source_expr(vt.source)
        if vt.node not in self._output_index:
            self._output_index[vt.node] = len(self.outputs)
            self.outputs.append(vt.node)
        return f"out[{self._output_index[vt.node]}]"

    def source_expr(self, source: Source) -> str:
        """The runnable read of `source`; a key that is no literal (inf, a dtype) is a constant here."""
        return source.code(self.constant, self._entry_reads(source))

    def _entry_reads(self, source: Source) -> dict[Source, str]:
        """An item a loop's iterator gives ahead of its position is read as the frame entered (the
        prologue): the `next(it)` the trace took is replayed before the frame code reads the stack."""
        for part in _chain(source):
            if isinstance(part, IteratorAheadSource) and part not in self._at_entry:
                name = f"_ahead{len(self._at_entry)}"
                self.prologue.append(f"{name} = {part.code(self.constant, self._at_entry)}")
                self._at_entry[part] = name
        return self._at_entry

    def input_reads(self, sources: list[Source]) -> tuple[list[str], list[str]]:
        """(lines, one expression per source) reading the graph inputs: a part that two or more of
        them share (`L['self']._modules['encoder']`) is read once into a name, and a module with two
        or more members read is read through its bound `__dict__` (ModuleMemberSource): a model's
        weights cost a few item reads each, not a walk from `L['self']`."""
        chains = [_chain(s) for s in sources]
        uses = Counter(a for chain in chains for a in chain[:-1])
        nodes = {a for chain in chains for a in chain}
        members = Counter(a.base for a in nodes if isinstance(a, ModuleMemberSource))
        for s in sources:
            self._entry_reads(s)
        bound: dict[Source, str] = dict(self._at_entry)
        lines: list[str] = []

        def bind(src: Source) -> None:
            if src not in bound:
                name = f"_in{len(bound)}"
                lines.append(f"{name} = {src.code(self.constant, bound)}")
                bound[src] = name

        for chain in chains:
            for a in chain[:-1]:
                if uses[a] >= 2:
                    bind(a)
                    if members[a] >= 2:
                        bind(AttrSource(a, "__dict__"))
        return lines, [s.code(self.constant, bound) for s in sources]

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
        self.cells: dict[int, str] = {}   # id of a CellVariable -> the name of its cell in the frame code

    def reconstruct(self, vt: VariableTracker) -> str:
        try:
            return vt.reconstruct_resumed(self)   # the tracker's own, where it differs from `reconstruct`
        except Unsupported:
            value = getattr(vt, "value", None)
            if vt.source is None and isinstance(value, REBUILT_BY_IDENTITY):
                return self.constant(value, "f")
            raise

    def cell(self, cell: CellVariable) -> str:
        """The frame code's cell for `cell`; one the trace made (and no frame holds) is made here."""
        if id(cell) not in self.cells and cell.outside and cell.source is not None:
            self.cells[id(cell)] = self.once(cell, self.source_expr(cell.source))  # the real cell, not a copy
        if id(cell) not in self.cells:
            kind = self.constant(types.CellType, "CellType")
            expr = f"{kind}()" if cell.contents is None else f"{kind}({self.reconstruct(cell.contents)})"
            self.cells[id(cell)] = self.once(cell, expr)
        return self.cells[id(cell)]

    def made_function(self, vt: UserFunctionVariable) -> str:
        """A def or lambda the trace ran: a new function of its code, defaults and the frame's cells."""
        if vt.attrs:
            raise Unsupported("reconstruct", f"pdyn cannot rebuild {vt.code.co_name}() with attributes set on it")
        defaults = vt.defaults(None)  # type: ignore[arg-type]
        closure = vt._closure or []
        args = [self.constant(vt.code, "code"), self.constant(vt.f_globals, "globals"), repr(vt.code.co_name),
                "(" + "".join(f"{self.reconstruct(d)}, " for d in defaults) + ")" if defaults else "None",
                "(" + "".join(f"{self.cell(c)}, " for c in closure) + ")" if closure else "None"]
        name = self.once(vt, f"{self.constant(types.FunctionType, 'FunctionType')}({', '.join(args)})")
        kwdefaults = vt.kwdefaults(None)  # type: ignore[arg-type]
        if kwdefaults and f"{name}.__kwdefaults__" not in "".join(self.lines):
            items = ", ".join(f"{k!r}: {self.reconstruct(v)}" for k, v in kwdefaults.items())
            self.lines.append(f"{name}.__kwdefaults__ = {{{items}}}")
        return name

    def iterator(self, vt: IteratorVariable) -> str:
        """A real iterator over the live containers at the trace's position, made once (aliases of it
        stay one iterator) and moved to its place after the replayed writes (`positioned`): an input
        iterator is itself, advanced by the replays; a list's is its own; `enumerate`, `zip`,
        `reversed` and a dict's are rebuilt over theirs (`rebuild`); others go as the items left."""
        if vt.source is not None:
            return self.source_expr(vt.source)
        if isinstance(vt, GeneratorVariable):   # under an enumerate or a zip: made again, or a restart
            return vt.reconstruct(self)
        rebuild = getattr(vt, "rebuild", None)
        made = rebuild(self) if rebuild is not None else None
        if made is not None:
            return made
        if isinstance(vt.items, ListVariable):
            name = self.once(vt, f"iter({self.reconstruct(vt.items)})")
            if vt.index:
                self.positioned.append(f"{name}.__setstate__({vt.index})")
            return name
        return self.once(vt, f"iter({self.remaining(vt)})")

    def remaining(self, vt: Any) -> str:
        """The items an iterator on the stack has left, as a tuple (the code it goes to iterates it;
        a tuple's iterator is traced from its position, so a loop's resume serves every position)."""
        items = vt.items.items if hasattr(vt.items, "items") else vt.items
        return "(" + "".join(f"{self.reconstruct(v)}, " for v in items[vt.index:]) + ")"

    def symint(self, vt: Any) -> str:
        """A size expression, computed from the sizes it is made of; a data-dependent one from the graph."""
        env = vt.env
        expr = env.simplify(vt.expr)
        symbols = sorted(expr.free_symbols, key=lambda s: s.name)
        if not all(env.origins.get(sym) for sym in symbols):
            return self.graph_output(vt)
        self.scope.setdefault("math", math)
        for sym in symbols:
            if sym.name not in self._symbols:
                self._symbols.add(sym.name)
                origin = env.origins[sym][0]
                size = "" if origin.dim is None else f".size({origin.dim})"
                self.lines.append(f"{sym.name} = {self.source_expr(origin.base)}{size}")
        text = to_python(expr)
        kind = "int" if vt.python_type() is int else "float" if vt.python_type() is float else "bool"
        return f"{kind}({text})"


def _chain(source: Source) -> list[Source]:
    """`source` and the sources it is read from, its root first."""
    chain = [source]
    while isinstance(base := getattr(chain[-1], "base", None), Source):
        chain.append(base)
    return chain[::-1]


REBUILT_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
                       types.MethodDescriptorType, types.WrapperDescriptorType)


def build_frame_function(codegen: FrameCodegen, result_expr: str, effects: list[str],
                         inputs: tuple[list[str], list[str]], compiled: Callable[..., Any] | None, title: str,
                         tail: list[str] | None = None,
                         rerun: EagerRerun | None = None) -> tuple[Callable[..., Any], str]:
    """Assemble `run(L, G)`; returns the function and its source. `inputs` is what
    `codegen.input_reads` returns. With `tail` (a graph break), those lines end the function
    instead of returning `result_expr`. With `rerun`, a graph that raises hands the call to it (the
    side effects after the graph have not happened yet)."""
    body: list[str] = list(codegen.prologue)
    reads, input_exprs = inputs
    if compiled is not None:
        codegen.scope["compiled_graph"] = compiled
        call = [*reads, f"out = compiled_graph({', '.join(input_exprs)})"]
        if rerun is None:
            body += call
        else:
            codegen.scope["rerun_eagerly"] = rerun
            snapshot = rerun.draws_random
            if snapshot:
                codegen.scope["rng_state"] = rng_state
            # NOTE: the rerun happens outside the `except` block: inside it, CPython changes some of
            # the exceptions user code raises (`f(**a, **b)` raises KeyError for TypeError)
            written = ", ".join(f"{input_exprs[i]}" for i in rerun.restore)
            if rerun.restore:  # the copies read the inputs first: so do their names
                body += reads
                call = call[len(reads):]
            body += ["rng = rng_state()" if snapshot else "rng = None", "failed = None",
                     *([f"saved = [(t, t.clone()) for t in ({written},)]"] if rerun.restore else []),
                     "try:", *(f"    {line}" for line in call), "except Exception as e:",
                     "    failed = e", "if failed is not None:",
                     f"    return rerun_eagerly(L, failed, rng{', saved' if rerun.restore else ''})"]
    body += codegen.lines
    if tail is None:
        body.append(f"result = {result_expr}")
        body += effects + codegen.positioned
        body.append("return result")
    else:
        body += effects + codegen.positioned + tail
    source = f"# pdyn frame code for {title}\ndef run(L, G):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<pdyn frame {title}>", "exec"), codegen.scope)
    return codegen.scope["run"], source


class EagerRerun:
    """Where the compiled graph raises, the frame runs again eagerly from its start: the Python side
    effects the trace deferred to after the graph then happen in eager's order, up to the raise
    that eager raises for real. Only for graphs that write no tensor (a write would happen twice);
    a graph that draws random numbers gets the generator state it started from back first."""

    def __init__(self, call_original: Callable[[dict[str, Any]], Any], title: str, draws_random: bool,
                 restore: list[int] | None = None):
        self.call_original = call_original
        self.title = title
        self.draws_random = draws_random
        self.restore = restore or []  # graph inputs it writes: copied before, put back before a rerun
        self.warned = False

    def __call__(self, L: dict[str, Any], error: Exception, rng: Any, saved: Any = ()) -> Any:
        if rng is not None:
            set_rng_state(rng)
        with torch.no_grad():
            for tensor, copy in saved:
                tensor.copy_(copy)
        result = self.call_original(L)   # raises what eager raises, side effects first
        if not self.warned:
            self.warned = True
            warnings.warn(f"pdyn: the compiled graph of {self.title} raised {type(error).__name__}: {error}, where "
                          f"eager returns; this call's result is eager's. {InternalError.__doc__}", stacklevel=2)
        return result


def rng_state() -> tuple[torch.Tensor, torch.Tensor | None]:
    cuda = torch.cuda.get_rng_state() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def set_rng_state(state: tuple[torch.Tensor, torch.Tensor | None]) -> None:
    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state(cuda)
