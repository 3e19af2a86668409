"""Guards: the facts about a call's inputs that a cache entry assumed, and the GuardSet of one trace.

Each guard knows the condition under which it fails, as Python source over a bound local name,
and the sentence that names it. `guard_codegen` turns a GuardSet into one function.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from pdyn.errors import SourceLoc
from pdyn.sources import Source

Hoist = Callable[[Any, str], str]  # (object, name hint) -> name of a constant in the guard's scope


@dataclass(frozen=True, eq=False)
class Guard(ABC):
    """One assumption about the value at `source`; `loc` is the user line that made it."""

    source: Source | None
    loc: SourceLoc | None = field(default=None, kw_only=True)

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source)

    @abstractmethod
    def fail_expr(self, v: str, hoist: Hoist) -> str:
        """Python source that is true when the guard fails, over the bound name `v`."""

    @abstractmethod
    def sentence(self) -> str:
        """What the guard asserts, as the recompile log and the guard source show it."""

    def checks(self, v: str, hoist: Hoist) -> list[tuple[str, str]]:
        """(condition under which it fails, the sentence that then failed), cheapest first."""
        return [(self.fail_expr(v, hoist), self.sentence())]

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        """`checks` with every source this guard reads bound to a name by `bind` (guard_codegen
        binds each source once per check function)."""
        return self.checks(bind(self.source) if self.source is not None else "", hoist)


def _type_name(t: type) -> str:
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


@dataclass(frozen=True, eq=False)
class TypeGuard(Guard):
    """The value's exact type: objects whose attributes the trace read but did not need by identity."""

    type: type

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"type({v}) is not {hoist(self.type, self.type.__name__)}"

    def sentence(self) -> str:
        return f"type({self.source}) is {_type_name(self.type)}"


@dataclass(frozen=True, eq=False)
class IdGuard(Guard):
    """The very same object: modules, functions, classes and Python modules (ID_MATCH)."""

    obj: Any

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{v} is not {hoist(self.obj, getattr(self.obj, '__name__', type(self.obj).__name__))}"

    def sentence(self) -> str:
        name = getattr(self.obj, "__qualname__", None) or type(self.obj).__qualname__
        kind = "class" if isinstance(self.obj, type) else f"{type(self.obj).__name__} object"
        return f"{self.source} is the same {kind} ({name})"


@dataclass(frozen=True, eq=False)
class EqualsGuard(Guard):
    """A constant: same type and equal value (None, bools, ints, floats, strings, dtypes, ...)."""

    value: Any

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        if self.value is None or isinstance(self.value, bool):
            return f"{v} is not {self.value!r}"
        kind = type(self.value)
        if kind is float and self.value != self.value:
            return f"type({v}) is not float or {v} == {v}"  # NaN: the one float unequal to itself
        if kind in (int, float, str, bytes, complex):
            lit = repr(self.value)
            if "nan" in lit or "inf" in lit:
                lit = hoist(self.value, "value")
            return f"type({v}) is not {kind.__name__} or {v} != {lit}"
        return f"type({v}) is not {hoist(kind, kind.__name__)} or {v} != {hoist(self.value, 'value')}"

    def sentence(self) -> str:
        return f"{self.source} == {self.value!r}"


@dataclass(frozen=True, eq=False)
class LenGuard(Guard):
    """A list, tuple or nn container of the same type and length."""

    type: type
    length: int

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"type({v}) is not {hoist(self.type, self.type.__name__)} or len({v}) != {self.length}"

    def sentence(self) -> str:
        return f"{self.source} is a {self.type.__name__} of length {self.length}"


@dataclass(frozen=True, eq=False)
class DictKeysGuard(Guard):
    """A dict with the same keys in the same order (iteration order is part of what was traced)."""

    type: type
    keys: tuple[Any, ...]

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"type({v}) is not {hoist(self.type, self.type.__name__)} or tuple({v}) != {hoist(self.keys, 'keys')}"

    def sentence(self) -> str:
        return f"{self.source} is a {self.type.__name__} with keys {list(self.keys)!r}"


@dataclass(frozen=True, eq=False)
class TensorGuard(Guard):
    """A tensor's type, dtype, device, requires_grad and rank, and its static sizes and strides.

    `sizes[i]`/`strides[i]` is None for a dim left dynamic (TENSOR_MATCH_DYNAMIC); with all present
    this is TENSOR_MATCH_STATIC.
    """

    type: type
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...] | None
    contiguous: bool | None = None   # with dynamic dims, strides are checked as far as this

    def checks(self, v: str, hoist: Hoist) -> list[tuple[str, str]]:
        src = self.source
        out = [(f"type({v}) is not {hoist(self.type, self.type.__name__)}", f"type({src}) is {_type_name(self.type)}")]
        dtype = str(self.dtype).removeprefix("torch.")
        grad = f"{v}.requires_grad" if not self.requires_grad else f"not {v}.requires_grad"
        meta = f"{v}.dtype is not {hoist(self.dtype, dtype)} or {_device_differs(v, self.device, hoist)} or {grad}"
        out.append((meta, f"{src} is a {dtype} {self.device} tensor{'' if self.requires_grad else ' not'} "
                          "requiring grad"))
        if all(s is not None for s in self.sizes):
            out.append((f"{v}.shape != {tuple(self.sizes)!r}", f"{src}.size() == {tuple(self.sizes)!r}"))
        else:
            fixed = [(i, s) for i, s in enumerate(self.sizes) if s is not None]
            cond = " or ".join([f"{v}.dim() != {len(self.sizes)}"] + [f"{v}.shape[{i}] != {s}" for i, s in fixed])
            text = " and ".join([f"{src}.dim() == {len(self.sizes)}"] + [f"{src}.size({i}) == {s}" for i, s in fixed])
            out.append((cond, text))
        if self.strides is not None and all(s is not None for s in self.strides):
            out.append((f"{v}.stride() != {tuple(self.strides)!r}", f"{src}.stride() == {tuple(self.strides)!r}"))
        elif self.strides is not None and any(s is not None for s in self.strides):
            fixed = [(i, s) for i, s in enumerate(self.strides) if s is not None]
            out.append((" or ".join(f"{v}.stride({i}) != {s}" for i, s in fixed),
                        " and ".join(f"{src}.stride({i}) == {s}" for i, s in fixed)))
        if self.contiguous is not None:
            out.append((f"{'not ' if self.contiguous else ''}{v}.is_contiguous()",
                        f"{src} is {'' if self.contiguous else 'not '}contiguous"))
        return out

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return " or ".join(cond for cond, _ in self.checks(v, hoist))

    def sentence(self) -> str:
        sizes = ", ".join("*" if s is None else str(s) for s in self.sizes)
        grad = ", requires_grad" if self.requires_grad else ""
        return (f"{self.source} is a {str(self.dtype).removeprefix('torch.')} {self.device} "
                f"{self.type.__name__} of size ({sizes}){grad}")


def _device_differs(v: str, device: torch.device, hoist: Hoist) -> str:
    """The cheapest exact test that `v` is not on `device` (a torch.device is built on each read)."""
    if device.type == "cpu":
        return f"not {v}.is_cpu"
    if device.type == "cuda" and device.index is not None:
        return f"not {v}.is_cuda or {v}.get_device() != {device.index}"
    return f"{v}.device != {hoist(device, device.type)}"


@dataclass(frozen=True, eq=False)
class NoHooksGuard(Guard):
    """A called nn.Module still has no forward or backward hooks (pdyn inlines `forward`, not `__call__`)."""

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return (f"{v}._forward_hooks or {v}._forward_pre_hooks or {v}._backward_hooks or "
                f"{v}._backward_pre_hooks")

    def sentence(self) -> str:
        return f"{self.source} has no forward or backward hooks"


@dataclass(frozen=True, eq=False)
class AliasGuard(Guard):
    """Two sources are (or are not) the same object, as they were when traced."""

    other: Source = None  # type: ignore[assignment]  # always given; dataclass order needs a default
    same: bool = True

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.source, self.other)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return self._fail(v, self.other.expr())

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        return [(self._fail(bind(self.source), bind(self.other)), self.sentence())]  # type: ignore[arg-type]

    def _fail(self, v: str, other: str) -> str:
        return f"{v} {'is not' if self.same else 'is'} {other}"

    def sentence(self) -> str:
        return f"{self.source} is {'' if self.same else 'not '}{self.other}"


@dataclass(frozen=True, eq=False)
class GlobalNameGuard(Guard):
    """A builtin the trace used is not shadowed by a module global of the same name."""

    name: str = ""

    def key(self) -> tuple[Any, ...]:
        return (type(self), self.name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{self.name!r} in G"

    def sentence(self) -> str:
        return f"no global named {self.name!r} shadows the builtin"


@dataclass(frozen=True, eq=False)
class GradModeGuard(Guard):
    """torch's grad mode is what it was when traced."""

    enabled: bool = True

    def key(self) -> tuple[Any, ...]:
        return (type(self),)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{hoist(torch.is_grad_enabled, 'is_grad_enabled')}() is not {self.enabled}"

    def sentence(self) -> str:
        return f"torch.is_grad_enabled() is {self.enabled}"


class GuardSet:
    """The guards of one trace, deduplicated, in the order they were made."""

    def __init__(self) -> None:
        self._guards: dict[tuple[Any, ...], Guard] = {}

    def add(self, guard: Guard) -> None:
        self._guards.setdefault(guard.key(), guard)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._guards.values())

    def __len__(self) -> int:
        return len(self._guards)
