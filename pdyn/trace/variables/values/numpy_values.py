"""numpy values: pdyn does not trace numpy. Any use of a numpy function, class, array or scalar
(calling it, reading its attributes, arithmetic with it) is a graph break whose reason names
numpy, so the code around it is still compiled and numpy runs in Python, as in eager.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Callable

from pdyn.base.errors import Unsupported
from pdyn.guards.guards import IdGuard, TypeGuard
from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


def _from_numpy(module: Any) -> bool:
    return isinstance(module, str) and (module == "numpy" or module.startswith("numpy."))


def is_numpy(value: Any) -> bool:
    """A numpy function, class, ufunc, array, scalar or dtype (not the module: its constants, such
    as np.pi, are plain floats)."""
    if isinstance(value, types.ModuleType):
        return False
    if _from_numpy(type(value).__module__):
        return True
    return (isinstance(value, type) or callable(value)) and _from_numpy(getattr(value, "__module__", None))


class NumpyVariable(VariableTracker):
    """A numpy value read from the frame (or a numpy module's attribute)."""

    def __init__(self, value: Any, source: Source | None = None):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return isinstance(self.value, type)   # `isinstance(x, np.ndarray)`: a class is pinned where read

    def as_python_constant(self) -> Any:
        if not isinstance(self.value, type):
            return super().as_python_constant()
        return self.value

    def _refuse(self, tx: Tracer, what: str) -> Unsupported:
        return Unsupported("numpy", f"pdyn does not trace numpy ({what}); it runs in Python after a graph break",
                           hint="use torch ops for values the graph should compute", loc=tx.loc())

    def _name(self) -> str:
        return getattr(self.value, "__name__", type(self.value).__name__)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise self._refuse(tx, f"a call to numpy.{self._name()}")

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        raise self._refuse(tx, f"{self._name()}.{name}")

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        raise self._refuse(tx, f"`{fn.__name__}` on a numpy {type(self.value).__name__}")

    def unary_op(self, tx: Tracer, fn: Callable[[Any], Any]) -> VariableTracker:
        raise self._refuse(tx, f"`{fn.__name__}` on a numpy {type(self.value).__name__}")

    def truth(self, tx: Tracer) -> bool:
        raise self._refuse(tx, f"the truth of a numpy {type(self.value).__name__}")

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        raise self._refuse(tx, f"iterating a numpy {type(self.value).__name__}")

    def length(self, tx: Tracer) -> VariableTracker:
        raise self._refuse(tx, f"len() of a numpy {type(self.value).__name__}")

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        raise self._refuse(tx, f"indexing a numpy {type(self.value).__name__}")

    def __repr__(self) -> str:
        return f"NumpyVariable({self._name()})"


def wrap_numpy(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """Functions and classes are pinned by identity; arrays and scalars by type (their use breaks)."""
    fixed = isinstance(value, type) or callable(value) and not hasattr(value, "dtype")
    guard = IdGuard(source, value, loc=tx.loc()) if fixed else TypeGuard(source, type(value), loc=tx.loc())
    tx.ctx.add_guard(guard)
    return NumpyVariable(value, source)
