"""Sources: where a traced value came from in the frame, as a Python expression over L and G.

`L` is the frame's locals (arguments and closure variables), `G` its globals. A source is data
plus one rendering; guards and the code that reads graph inputs are built from `expr()`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class Source(ABC):
    """Where a traced value came from: an expression over L (locals) and G (globals)."""

    @abstractmethod
    def expr(self) -> str:
        """The Python expression that reads the value from L and G."""

    def root(self) -> Source:
        return self

    def __str__(self) -> str:
        return self.expr()


@dataclass(frozen=True)
class LocalSource(Source):
    """An argument or closure variable of the optimized frame: `L['x']`."""

    name: str

    def expr(self) -> str:
        return f"L[{self.name!r}]"


@dataclass(frozen=True)
class GlobalSource(Source):
    """A module-level name of the frame's globals: `G['w']`."""

    name: str

    def expr(self) -> str:
        return f"G[{self.name!r}]"


@dataclass(frozen=True)
class AttrSource(Source):
    """An attribute of another source: `L['self'].linear.weight`."""

    base: Source
    attr: str

    def expr(self) -> str:
        base = self.base.expr()
        return f"{base}.{self.attr}" if self.attr.isidentifier() else f"getattr({base}, {self.attr!r})"

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class ModuleMemberSource(AttrSource):
    """A parameter, buffer or submodule of an nn.Module: read from its table (`_parameters`,
    `_buffers`, `_modules`) directly, which is what `Module.__getattr__` would do, only faster;
    shown as the attribute (`L['self'].fc.weight`, `L['self'].layers[0]`)."""

    table: str = "_modules"

    def expr(self) -> str:
        return f"{self.base.expr()}.{self.table}[{self.attr!r}]"

    def __str__(self) -> str:
        base = str(self.base)
        return f"{base}.{self.attr}" if self.attr.isidentifier() else f"{base}[{self.attr}]"


@dataclass(frozen=True)
class ItemSource(Source):
    """An item of a list, tuple or dict source, by a constant index or key: `L['xs'][0]`."""

    base: Source
    index: object

    def expr(self) -> str:
        return f"{self.base.expr()}[{self.index!r}]"

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class DefaultSource(Source):
    """A default argument value of a traced function: `L['f'].__defaults__[0]`."""

    base: Source
    index: int | str

    def expr(self) -> str:
        if isinstance(self.index, str):
            return f"{self.base.expr()}.__kwdefaults__[{self.index!r}]"
        return f"{self.base.expr()}.__defaults__[{self.index}]"

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class ModuleSource(Source):
    """A Python module by name, for the globals of a function inlined from another module."""

    name: str

    def expr(self) -> str:
        return f"_modules[{self.name!r}]"
