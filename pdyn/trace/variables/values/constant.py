"""ConstantVariable: an immutable Python value fixed at trace time.

None, bools, numbers, strings, bytes, `...`, ranges, constant slices, dtypes, devices and Enum
members. Read from a Source it costs one EqualsGuard (an IdGuard for an Enum member), added by
the builder. Operations on constants are folded.
"""

from __future__ import annotations

import enum
import types
from typing import TYPE_CHECKING, Any

import torch

from pdyn.base.errors import UserException
from pdyn.guards.guards import CallResultGuard
from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.frame_codegen import FrameCodegen

CONSTANT_TYPES = (
    type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented),
    range, slice, torch.dtype, torch.device, torch.layout, torch.memory_format,
)


def is_constant_value(value: Any) -> bool:
    """An immutable value that `==`, `is` and its repr can stand for; Enum members included (their
    identity is their value: read from a Source they are pinned by IdGuard, not EqualsGuard)."""
    if isinstance(value, enum.Enum):
        return True
    if isinstance(value, slice):
        return all(is_constant_value(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, (tuple, frozenset)):
        return all(is_constant_value(v) for v in value)
    return type(value) in CONSTANT_TYPES


# Objects fixed for the program's life that pdyn can stand for at trace time (their trackers fold
# attribute reads), so a dict key of these kinds is pinned by identity and may be iterated.
FIXED_KEY_TYPES = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)


def is_identity_key(value: Any) -> bool:
    """A dict key that Python finds by identity (its class keeps object's `==` and hash, or it is a
    class, function, builtin or module): the keys guard pins the very object, so a lookup with it is
    exact. Tensors and nn.Modules are excluded (they have trackers of their own)."""
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return False
    if isinstance(value, FIXED_KEY_TYPES):
        return True
    kind = type(value)
    return kind.__eq__ is object.__eq__ and kind.__hash__ is object.__hash__


FLAG_TYPES = (bool, int, float, str, type(None))


def guard_flag(tx: Tracer, obj: Any, name: str, value: Any) -> None:
    """`obj.name` read from a torch namespace or an object fixed at trace time is a flag one may set
    between calls (`torch.backends.cudnn.deterministic`, `torch.backends.cuda.matmul.allow_tf32`):
    guarded by reading it again."""
    if type(value) in FLAG_TYPES and not isinstance(obj, (torch.finfo, torch.iinfo)):
        tx.ctx.add_guard(CallResultGuard(None, fn=getattr, args=(obj, name), expected=value, loc=tx.loc()))


class ObjectConstantVariable(VariableTracker):
    """A Python object fixed at trace time: a builtin, a class, a torch function, a module,
    torch.finfo, and (ConstantVariable) the plain constants. Subclasses say what calling it means;
    reading its attributes is folded at trace time."""

    def __init__(self, value: Any, source: Source | None = None):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        try:
            value = getattr(self.value, name)
        except AttributeError as e:
            raise UserException(e) from None
        # an opaque object of torch's (`torch.backends.cuda.matmul`): its attribute may be a flag; a
        # library's fixed object (a dataclass Field) is read as it was, unguarded, as every such read
        if type(self) is ObjectConstantVariable and type(self.value).__module__.startswith("torch"):
            guard_flag(tx, self.value, name, value)
        return tx.wrap_constant(value)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        """The same object: it was fixed at trace time, so the frame code refers to it."""
        if self.source is not None:
            return codegen.source_expr(self.source)
        name = getattr(self.value, "__name__", None)
        return codegen.constant(self.value, name if isinstance(name, str) and name.isidentifier() else "obj")


class ConstantVariable(ObjectConstantVariable):
    """A None/bool/int/float/str/... fixed at trace time."""

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        if isinstance(self.value, (range, str, bytes, tuple, frozenset)):
            return [tx.wrap_constant(v) for v in self.value]
        return super().iterate(tx)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return codegen.constant(self.value)

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"
