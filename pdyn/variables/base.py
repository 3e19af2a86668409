"""VariableTracker: what the tracer knows about one Python value while it runs bytecode symbolically.

Subclasses override the operations their values support; the defaults raise `Unsupported` naming
the type and the operation, so an unknown case becomes a graph break, never a wrong answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pdyn.errors import Unsupported
from pdyn.sources import Source

if TYPE_CHECKING:
    from pdyn.bytecode_tracer import InstructionTranslator as Tracer
    from pdyn.frame_codegen import FrameCodegen


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

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        raise Unsupported("getattr", f"pdyn cannot read attribute {name!r} of {type(self).__name__}")

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
        raise Unsupported("truth", f"pdyn cannot decide the truth of {type(self).__name__} at trace time")

    def reconstruct(self, codegen: FrameCodegen) -> str:
        """A Python expression, in the frame code, that evaluates to this value after the graph ran."""
        if self.source is not None:
            return codegen.source_expr(self.source)
        raise Unsupported("reconstruct", f"pdyn cannot rebuild {type(self).__name__} outside the graph")

    def __repr__(self) -> str:
        src = f" from {self.source}" if self.source is not None else ""
        return f"{type(self).__name__}{src}"


class NullVariable(VariableTracker):
    """The NULL that CPython pushes below a callable (PUSH_NULL, LOAD_GLOBAL with the low bit)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = NullVariable()
