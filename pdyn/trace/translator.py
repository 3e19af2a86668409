"""InstructionTranslator: the symbolic stack machine that runs a frame's bytecode over trackers.

It owns the step loop, the stack and locals of one frame, inlining of user calls (a child
translator sharing the OutputGraph), global lookup, and the doors trackers use to reach the layers
above them (`wrap`, `wrap_constant`, `binary`). Opcode semantics live in `pdyn/handlers/`, one
family per file, registered in `pdyn/handlers/registry.py`.
"""

from __future__ import annotations

import builtins
import inspect
import logging
import sys
import types
from typing import TYPE_CHECKING, Any, Callable

import pdyn.trace.handlers  # noqa: F401  (registers every handler family)
from pdyn.base.config import Config
from pdyn.base.errors import BreakPoint, SourceLoc, Unsupported, UserException
from pdyn.base.untraced import untraced_module
from pdyn.guards.guards import GlobalNameGuard
from pdyn.trace.handlers.registry import HANDLERS, handler  # noqa: F401  (handler: the registry's decorator)
from pdyn.bytecode.instructions import Instruction, decode
from pdyn.sources import AttrSource, GlobalSource, ModuleSource, Source
from pdyn.trace.variables import builder, semantics
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.cell import CellVariable
from pdyn.trace.variables.contexts.context_managers import preserved_global_state
from pdyn.trace.variables.functions.user_functions import bind_arguments
from pdyn.trace.variables.iterators.generator import GeneratorVariable, check_no_pending_cleanup
from pdyn.trace.variables.restart import BreakSite, forced_breaks

if TYPE_CHECKING:
    from pdyn.trace.output_graph import OutputGraph

log = logging.getLogger("pdyn.bytecode")

_DECODED: dict[types.CodeType, list[Instruction]] = {}


def decoded(code: types.CodeType) -> list[Instruction]:
    if code not in _DECODED:
        _DECODED[code] = decode(code)
    return _DECODED[code]


class InstructionTranslator:
    """Runs one frame's instructions symbolically; a child instance runs each inlined call."""

    def __init__(
        self,
        code: types.CodeType,
        f_locals: dict[str, VariableTracker],
        f_globals: dict[str, Any],
        output: OutputGraph,
        config: Config,
        cells: dict[str, CellVariable] | None = None,
        parent: InstructionTranslator | None = None,
    ) -> None:
        self.code = code
        self.instructions = decoded(code)
        self.locals = f_locals
        self.f_globals = f_globals
        self.cells = cells or {}
        self.output = output
        self.ctx = output.ctx   # the trace's sizes, guards, side effects and memo tables
        self.config = config
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.root_globals: dict[str, Any] = f_globals if parent is None else parent.root_globals
        self.stack: list[VariableTracker] = []
        self.ip = 0
        self.inst: Instruction | None = None
        self.return_value: VariableTracker | None = None
        self.yielded: VariableTracker | None = None   # a generator's value at its last YIELD_VALUE
        # the exception an `except`/`finally`/`__exit__` is handling (PUSH_EXC_INFO .. POP_EXCEPT)
        self.handled_exc: VariableTracker | None = None if parent is None else parent.handled_exc
        self.steps = 0
        self.stop_at: int | None = None   # root only: stop before this step (a graph break's retrace)
        # root only: instructions a restart chose to break at (variables/restart.py), with why
        self.forced: dict[int, str] = forced_breaks(code) if parent is None else {}
        self.executed_opnames: set[str] = set() if parent is None else parent.executed_opnames

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> VariableTracker | None:
        """Step until the frame returns; None where the root stopped at `stop_at` instead."""
        if self.parent is None:
            with preserved_global_state():  # grad mode entered by the trace, left when it ends
                return self._run()
        return self._run()

    def _run(self) -> VariableTracker | None:
        while self.return_value is None:
            if self.stop_at is not None and self.steps + 1 == self.stop_at:
                if self.parent is None:
                    check_no_pending_cleanup(self.ctx.generators, returned=False)
                return None
            self.step()
        if self.parent is None:
            check_no_pending_cleanup(self.ctx.generators, returned=True)
        return self.return_value

    def step(self) -> None:
        inst = self.instructions[self.ip]
        self.ip += 1
        self.inst = inst
        self.steps += 1
        if self.steps > self.config.max_trace_steps:
            raise Unsupported("trace_too_long", f"the trace ran more than {self.config.max_trace_steps} "
                              "instructions (a loop pdyn cannot see the end of?)", loc=self.loc())
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s%-20s %-16r stack=%s", "  " * self.depth, inst.opname,
                      "" if inst.argval is None else inst.argval, self.stack)
        fn = HANDLERS.get(inst.opname)
        if fn is None:
            raise Unsupported("opcode", f"pdyn cannot trace `{inst.opname}` yet", loc=self.loc())
        try:
            if inst.index in self.forced:
                raise Unsupported("restart", f"a graph break forced here: {self.forced[inst.index]}",
                                  loc=self.loc(inst))
            try:
                fn(self, inst)
            except UserException as e:
                if inst.handler is None:
                    raise  # uncaught here: the caller's handlers, else the frame reruns eagerly
                if not e.catchable:
                    raise Unsupported("caught_exception", f"pdyn cannot trace handling {type(e.exc).__name__}: "
                                      f"{e.exc} (its guards do not decide that it is raised)",
                                      loc=self.loc(inst)) from None
                self.unwind(inst, e)
        except Unsupported as e:
            if e.loc is None:  # raised by a tracker, which does not know the instruction
                e.loc = self.loc(inst)
            if self.parent is None and e.break_at is None:
                e.break_at = BreakPoint(self.steps, inst)
            raise
        self.executed_opnames.add(inst.opname)

    def unwind(self, inst: Instruction, e: UserException) -> None:
        """Jump to the handler covering `inst` as CPython does: the stack cut to the handler's
        depth, then the raising instruction's position (where the table says so) and the exception."""
        assert inst.handler is not None and len(self.stack) >= inst.handler_depth, f"unwind at {inst}"
        del self.stack[inst.handler_depth:]
        if inst.handler_lasti:
            self.push(self.wrap_constant(inst.index))
        self.push(e.tracker or self.wrap_constant(e.exc))   # an input exception stays one (its source)
        self.ip = inst.handler

    # -- stack -----------------------------------------------------------------------------------

    def push(self, vt: VariableTracker) -> None:
        assert isinstance(vt, VariableTracker), f"pushed {vt!r} at {self.inst}"
        self.stack.append(vt)

    def pop(self) -> VariableTracker:
        assert self.stack, f"pop from an empty stack at {self.inst}"
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        assert len(self.stack) >= n, f"pop({n}) with {len(self.stack)} on the stack at {self.inst}"
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def loc(self, inst: Instruction | None = None) -> SourceLoc:
        inst = inst or self.inst
        return SourceLoc(self.code.co_filename, (inst.lineno if inst else None) or self.code.co_firstlineno,
                         self.code.co_name, inst.col if inst else None, inst.end_col if inst else None)

    # -- shared operations -----------------------------------------------------------------------

    def globals_source(self, name: str) -> Source:
        if self.f_globals is self.root_globals:
            return GlobalSource(name)
        module = self.f_globals.get("__name__")
        if module in sys.modules and getattr(sys.modules[module], "__dict__", None) is self.f_globals:
            return AttrSource(ModuleSource(module), name)
        raise Unsupported("globals", f"pdyn cannot guard globals of {self.code.co_name}: its module is unknown",
                          loc=self.loc())

    def load_global(self, name: str) -> VariableTracker:
        if self.f_globals is self.root_globals and name in self.ctx.side_effects.globals:
            return self.ctx.side_effects.globals[name]
        if name in self.f_globals:
            return self.wrap(self.f_globals[name], self.globals_source(name))
        if hasattr(builtins, name):
            if self.f_globals is self.root_globals:
                self.ctx.add_guard(GlobalNameGuard(None, name=name, loc=self.loc()))
            return self.wrap_constant(getattr(builtins, name))
        raise UserException(NameError(f"name {name!r} is not defined"), self.loc())

    def inline_call(self, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """Run a user function's bytecode in a child translator; its result is the call's value."""
        code = fn.code
        if code.co_name == "graph_break" and fn.f_globals.get("__name__") == "pdyn":
            raise Unsupported("graph_break", "pdyn.graph_break() was called", loc=self.loc())
        if fn.f_globals.get("__name__") == "pdyn.shapes.runtime_asserts" and code.co_name in ("check", "check_is_size"):
            return self.output.user_check(code.co_name, args, self.loc())  # pdyn.check: a fact, not code to run
        if untraced_module(fn.f_globals.get("__name__")):   # the call runs as it is (pdyn/base/untraced.py)
            raise Unsupported("untraced", f"pdyn does not trace {fn.f_globals['__name__']}.{code.co_qualname}(): "
                              "it runs as it is", loc=self.loc())
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            raise Unsupported("generator", f"pdyn cannot trace coroutine {code.co_name}() yet", loc=self.loc())
        if self.depth >= self.config.inline_depth_limit:
            raise Unsupported("inline_depth", f"calls nest deeper than {self.config.inline_depth_limit} "
                              "(recursion?)", loc=self.loc())
        f_locals = bind_arguments(fn, args, kwargs, self)
        cells = {name: CellVariable(f_locals.pop(name, None)) for name in code.co_cellvars}
        for name, cell in zip(code.co_freevars, fn.closure_cells(self)):
            cells[name] = cell
        child = InstructionTranslator(code, f_locals, fn.f_globals, self.output, self.config, cells, parent=self)
        if code.co_flags & inspect.CO_GENERATOR:  # calling it only makes the generator; next() runs it
            gen = GeneratorVariable(child, fn, args, kwargs, self.root_site())
            self.ctx.generators.append(gen)
            return gen
        try:
            result = child.run()
        except Unsupported as e:
            if e.in_call is None:
                e.in_call = code  # the caller breaks at this call instead
            raise
        assert result is not None, f"an inlined call of {code.co_name} stopped early"
        return result

    def root_site(self) -> BreakSite:
        """The root frame's instruction running now: where a value made now can be made for real."""
        root = self
        while root.parent is not None:
            root = root.parent
        assert root.inst is not None
        return BreakSite(root.code, root.inst.index)

    def iterate(self, vt: VariableTracker) -> list[VariableTracker]:
        return vt.iterate(self)

    def binary(self, fn: Callable[[Any, Any], Any], lhs: VariableTracker, rhs: VariableTracker) -> VariableTracker:
        return semantics.binary(self, fn, lhs, rhs)

    def wrap(self, value: Any, source: Source) -> VariableTracker:
        """The tracker for `value` read from `source`, with its guards (one tracker per source)."""
        return builder.wrap(self, value, source)

    def wrap_constant(self, value: Any) -> VariableTracker:
        """The tracker for a value made at trace time (no source, no guard)."""
        return builder.wrap_constant_result(value)

