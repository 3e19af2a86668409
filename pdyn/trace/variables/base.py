"""VariableTracker: what the tracer knows about one Python value while it runs bytecode symbolically.

Subclasses override the operations their values support; the defaults raise `Unsupported` naming
the type and the operation, so an unknown case becomes a graph break, never a wrong answer. The
protocol (the operations handlers and builtin rules call) is declared here, never probed with
`getattr`: call, call_method, getattr, store_attr, getitem, setitem, delitem, contains, length,
iterate, truth, binary_op, unary_op, as_int, reconstruct. What a value is to a graph break's frame code
(pdyn/trace/breaks/) is declared here too: crossing, reconstruct_resumed, rebuilt_at_break, callee_at_break,
sizes_held, own_setattr_ran, replay_contents.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pdyn.base.errors import Unsupported, UserException
from pdyn.sources import SizeSource, Source

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.breaks.callees import BreakCallee
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen


class VariableTracker:
    """Base of all trackers. `source` says where the value was read from, None if made in the trace."""

    source: Source | None = None

    def python_type(self) -> type:
        raise Unsupported("python_type", f"pdyn does not know the Python type of {self}")

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self) -> Any:
        raise Unsupported("not_constant", f"{self} is not a constant pdyn knows at trace time")

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        raise Unsupported(
            "binary_op",
            f"pdyn cannot trace `{fn.__name__}` on {type(self).__name__} and {type(other).__name__}",
        )

    def unary_op(self, tx: Tracer, fn: Callable[[Any], Any]) -> VariableTracker:
        raise Unsupported("unary_op", f"pdyn cannot trace `{fn.__name__}` on {type(self).__name__}")

    def as_int(self, tx: Tracer) -> VariableTracker | None:
        """`int(self)` / `operator.index(self)` where the tracker answers it itself (a 0-d int
        tensor); None: the builtin's own rule decides."""
        return None

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        raise Unsupported("getattr", f"pdyn cannot read attribute {name!r} of {type(self).__name__}")

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        raise Unsupported("store_attr", f"pdyn cannot trace setting attribute {name!r} of {self}")

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        """`self[key]`; on two constants, folded (an error is the user's)."""
        if self.is_python_constant() and key.is_python_constant():
            return fold(tx, operator.getitem, self.as_python_constant(), key.as_python_constant())
        raise Unsupported("getitem", f"pdyn cannot index {self}")

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        raise Unsupported("setitem", f"pdyn cannot assign an item of {self}")

    def delitem(self, tx: Tracer, key: VariableTracker) -> None:
        raise Unsupported("delitem", f"pdyn cannot delete an item of {self}")

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        """`item in self`; on two constants, decided at trace time."""
        if item.is_python_constant() and self.is_python_constant():
            try:
                return item.as_python_constant() in self.as_python_constant()
            except TypeError as e:
                raise UserException(e) from None
        raise Unsupported("contains", f"pdyn cannot decide `in` over {self}")

    def length(self, tx: Tracer) -> VariableTracker:
        """`len(self)`: a constant, or a symbolic int (a tensor's first size)."""
        return fold(tx, len, self.as_python_constant())

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise Unsupported("call", f"pdyn cannot call {type(self).__name__} {self}")

    def call_method(
        self, tx: Tracer, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return self.getattr(tx, name).call(tx, args, kwargs)

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        raise Unsupported("iterate", f"pdyn cannot iterate over {type(self).__name__}")

    def truth(self, tx: Tracer) -> bool:
        if self.is_python_constant():
            return bool(self.as_python_constant())
        try:
            kind: type | None = self.python_type()
        except Unsupported:
            kind = None
        if kind is not None and not hasattr(kind, "__bool__") and not hasattr(kind, "__len__"):
            return True  # object's truth: a function, a class's instance without either method
        raise Unsupported("truth", f"pdyn cannot decide the truth of {type(self).__name__} at trace time")

    def reconstruct(self, codegen: FrameCodegen) -> str:
        """A Python expression, in the frame code, that evaluates to this value after the graph ran."""
        if self.source is not None:
            return codegen.source_expr(self.source)
        raise Unsupported("reconstruct", f"pdyn cannot rebuild {type(self).__name__} outside the graph")

    # -- at a graph break (pdyn/trace/breaks/): what this value is to the frame code there

    def crossing(self, held: bool) -> str:
        """How this value on the stack crosses a break: "value" (rebuilt by `reconstruct`), "iter"
        (a real iterator over the live containers), "exc" (an `except` handler's slot) or "null".
        `held`: a live local holds it too (then it is that local's object)."""
        return "value"

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        """`reconstruct` in a break's frame code, which hands values to Python code that runs on: a
        size is computed from the inputs, a function or method the trace made is made again."""
        return self.reconstruct(codegen)

    def rebuilt_at_break(self, codegen: ResumeCodegen) -> str:
        """The frame code's expression for this value on the stack or in a live local at a break."""
        return codegen.reconstruct(self)

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        """What a break inside an inlined call of this value calls instead of it: the callee's own
        code optimized on its own (`callee` builds it; `method_of`: the object it is bound to);
        None to call it as it is."""
        return None

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        """(where a function receiving this value at `source` reads it, its expression) of each
        size this value holds, looking `depth` levels into containers: a resume function's or a
        callee's sizes mapped to its parent's."""
        return []

    def own_setattr_ran(self) -> bool:
        """Whether the trace ran this object's own `__setattr__`/`__delattr__` for a store: the frame
        code replays the raw store (`object.__setattr__`) after the graph."""
        return False

    def replay_contents(self, codegen: FrameCodegen, target: str, name: str) -> str:
        """The statement that gives the container at `target` the contents the trace left it (bound
        to `name` first, in `codegen.lines`): a mutated container's side effect."""
        raise Unsupported("side_effect", f"pdyn cannot replay a change to {type(self).__name__} after the graph")

    def __repr__(self) -> str:
        src = f" from {self.source}" if self.source is not None else ""
        return f"{type(self).__name__}{src}"


class NullVariable(VariableTracker):
    """The NULL that CPython pushes below a callable (PUSH_NULL, LOAD_GLOBAL with the low bit)."""

    def crossing(self, held: bool) -> str:
        return "null"

    def __repr__(self) -> str:
        return "NULL"


NULL = NullVariable()


def sizes_in(parts: Iterable[tuple[Source, Any]], depth: int) -> list[tuple[SizeSource, Any]]:
    """The sizes the parts of a container or object hold (`sizes_held` one level down; none at depth 0)."""
    if depth == 0:
        return []
    return [found for part, item in parts if isinstance(item, VariableTracker)
            for found in item.sizes_held(part, depth - 1)]


def fold(tx: Tracer, fn: Callable[..., Any], *values: Any) -> VariableTracker:
    """`fn(*values)` on constants, at trace time; an exception is the user's."""
    try:
        result = fn(*values)
    except (Unsupported, UserException):
        raise
    except Exception as e:
        raise UserException(e) from None
    return tx.wrap_constant(result)
