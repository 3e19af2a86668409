"""Sources: where a traced value came from in the frame, as a Python expression over L and G.

`L` is the frame's locals (arguments and closure variables), `G` its globals. A source is data
plus one rendering, `code`: guards, frame code and resume code all read values through it, and
`expr()` is the same text for people (a key that is no literal shown by its repr).
"""

from __future__ import annotations

import enum
import math
import sys
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

# (object, name hint) -> a name bound to the object in the generated code's scope
Const = Callable[[Any, str], str]
NO_NAMES: Mapping[Source, str] = {}


def reads_back(value: Any) -> bool:
    """`repr(value)` is Python source for an equal value of the same type (so -0.0 yes, inf no)."""
    kind = type(value)
    if kind in (int, str, bytes, bool, type(None)):
        return True
    if kind is float:
        return math.isfinite(value)
    return kind is tuple and all(reads_back(v) for v in value)


def literal(value: Any, const: Const) -> str:
    """`value` as source text: its repr where that reads back as itself, else a named constant."""
    return repr(value) if reads_back(value) else const(value, "key")


def _shown(value: Any, hint: str) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"  # not `<Color.RED: 1>`
    return repr(value)


@dataclass(frozen=True)
class Source(ABC):
    """Where a traced value came from: an expression over L (locals) and G (globals)."""

    def expr(self) -> str:
        """The expression as people read it (not always runnable: `L['d'][inf]`)."""
        return self.code(_shown)

    def code(self, const: Const, bound: Mapping[Source, str] = NO_NAMES) -> str:
        """The runnable expression: keys that are no literal are named by `const`, and the
        expression starts from the nearest source already bound to a name in `bound`."""
        name = bound.get(self) if bound else None
        return name if name is not None else self._code(const, bound)

    @abstractmethod
    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        """This source's step on top of its base's `code`."""

    @abstractmethod
    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        """The value this source names in a frame with locals `L` and globals `G` (what `code`
        evaluates to, without compiling it); raises what the expression would raise."""

    def root(self) -> Source:
        return self

    def __str__(self) -> str:
        return self.expr()


@dataclass(frozen=True)
class LocalSource(Source):
    """An argument or closure variable of the optimized frame: `L['x']`."""

    name: str

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"L[{self.name!r}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return L[self.name]


@dataclass(frozen=True)
class GlobalSource(Source):
    """A module-level name of the frame's globals: `G['w']`."""

    name: str

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"G[{self.name!r}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return G[self.name]


@dataclass(frozen=True)
class AttrSource(Source):
    """An attribute of another source: `L['self'].linear.weight`."""

    base: Source
    attr: str

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        base = self.base.code(const, bound)
        return f"{base}.{self.attr}" if self.attr.isidentifier() else f"getattr({base}, {self.attr!r})"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return getattr(self.base.read(L, G), self.attr)

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class ModuleMemberSource(AttrSource):
    """A parameter, buffer or submodule of an nn.Module: read from its table (`_parameters`,
    `_buffers`, `_modules`) directly, which is what `Module.__getattr__` would do, only faster;
    shown as the attribute (`L['self'].fc.weight`, `L['self'].layers[0]`)."""

    table: str = "_modules"

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        # NOTE: through the module's `__dict__` where one is bound, as `Module.__getattr__` reads it
        table = bound.get(AttrSource(self.base, "__dict__")) if bound else None
        if table is not None:
            return f"{table}[{self.table!r}][{self.attr!r}]"
        return f"{self.base.code(const, bound)}.{self.table}[{self.attr!r}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return getattr(self.base.read(L, G), self.table)[self.attr]

    def __str__(self) -> str:
        base = str(self.base)
        return f"{base}.{self.attr}" if self.attr.isidentifier() else f"{base}[{self.attr}]"


@dataclass(frozen=True)
class ItemSource(Source):
    """An item of a list, tuple or dict source, by a constant index or key: `L['xs'][0]`. A key
    whose repr is no literal (inf, a dtype, an Enum member) is a named constant in the code."""

    base: Source
    index: object

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"{self.base.code(const, bound)}[{literal(self.index, const)}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return self.base.read(L, G)[self.index]

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class PinnedSource(Source):
    """An object read by identity where the trace found it, not through L or G: a method's function
    found in its class's `__dict__`, which a guard on the class pins. Its rebindable parts
    (`__code__`, `__defaults__`, closure cells) are read, and guarded, through it."""

    key: int                                              # id(value): one source per object
    value: Any = field(compare=False, hash=False, repr=False)

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return const(self.value, getattr(self.value, "__name__", "obj"))

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return self.value

    def __str__(self) -> str:
        return getattr(self.value, "__qualname__", None) or repr(self.value)


@dataclass(frozen=True)
class DefaultSource(Source):
    """A default argument value of a traced function: `L['f'].__defaults__[0]`."""

    base: Source
    index: int | str

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        attr = "__kwdefaults__" if isinstance(self.index, str) else "__defaults__"
        return f"{self.base.code(const, bound)}.{attr}[{self.index!r}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        attr = "__kwdefaults__" if isinstance(self.index, str) else "__defaults__"
        return getattr(self.base.read(L, G), attr)[self.index]

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class WeakRefTargetSource(Source):
    """What a weak reference read from the frame refers to, now: `L['self']._refs[0]()` (None once
    the object is gone)."""

    base: Source

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"{self.base.code(const, bound)}()"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return self.base.read(L, G)()

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class ModuleSource(Source):
    """A Python module by name, for the globals of a function inlined from another module."""

    name: str

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"_modules[{self.name!r}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return sys.modules[self.name]


@dataclass(frozen=True)
class SizeSource(Source):
    """A size read at run time: dim `dim` of the tensor at `base` (`L['x'].size(0)`), or with
    `dim` None the int at `base` itself (`L['n']`). The identity of a symbol's origin: the recompile
    policy keys its history by it, and a resume function's sizes map to their parent's by it."""

    base: Source
    dim: int | None

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        base = self.base.code(const, bound)
        return base if self.dim is None else f"{base}.size({self.dim})"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        value = self.base.read(L, G)
        return value if self.dim is None else value.size(self.dim)

    def root(self) -> Source:
        return self.base.root()


def ndarray_tensor(arr: Any) -> Any:
    """The tensor over an ndarray's memory (torch.from_numpy, without its warning about arrays
    NumPy marks read-only: pdyn never writes one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.from_numpy(arr)


@dataclass(frozen=True)
class NdarrayTensorSource(Source):
    """The tensor over the memory of the ndarray at `base`: `ndarray_tensor(L['a'])` (it raises,
    so the entry does not apply, for an array torch cannot hold)."""

    base: Source

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"{const(ndarray_tensor, 'ndarray_tensor')}({self.base.code(const, bound)})"

    def expr(self) -> str:
        return f"ndarray_tensor({self.base.expr()})"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return ndarray_tensor(self.base.read(L, G))

    def root(self) -> Source:
        return self.base.root()


class _IteratorState:
    """(the sequence, the position) of a list or tuple iterator, from its pickling state, without
    advancing it; an exhausted one is ((), -1). Shown in guard sentences by its name."""

    def __call__(self, it: Any) -> tuple[Any, int]:
        state = it.__reduce__()
        return (state[1][0], state[2]) if len(state) > 2 else ((), -1)

    def __repr__(self) -> str:
        return "iterator_state"


iterator_state = _IteratorState()


@dataclass(frozen=True)
class IteratorStateSource(Source):
    """The sequence (`field` "seq") or the position ("index") of the list or tuple iterator at `base`."""

    base: Source
    field: str

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"{const(iterator_state, 'iterator_state')}({self.base.code(const, bound)})[{int(self.field == 'index')}]"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return iterator_state(self.base.read(L, G))[self.field == "index"]

    def root(self) -> Source:
        return self.base.root()


class _IteratorItem:
    """The item `ahead` places past where a list or tuple iterator stands, without advancing it:
    a loop's next layer read relative to the loop's position, so one entry serves every position."""

    def __call__(self, it: Any, ahead: int) -> Any:
        seq, index = iterator_state(it)
        if index < 0:
            raise IndexError("the iterator is exhausted")
        return seq[index + ahead]

    def __repr__(self) -> str:
        return "iterator_item"


iterator_item = _IteratorItem()


@dataclass(frozen=True)
class IteratorAheadSource(Source):
    """The item `ahead` places past the position of the iterator at `base` (read as the frame
    entered: frame code reads it before the steps the trace took are replayed)."""

    base: Source
    ahead: int

    def _code(self, const: Const, bound: Mapping[Source, str]) -> str:
        return f"{const(iterator_item, 'iterator_item')}({self.base.code(const, bound)}, {self.ahead})"

    def read(self, L: Mapping[str, Any], G: Mapping[str, Any]) -> Any:
        return iterator_item(self.base.read(L, G), self.ahead)

    def root(self) -> Source:
        return self.base.root()
