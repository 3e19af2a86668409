"""LazyStringVariable: an f-string whose parts include symbolic sizes (`f"bad shape {x.shape}"`).

Formatting a symbolic size reads its value (a specialization); most such strings are assert or
error messages that are built but never used when the check passes. The string is made, and the
sizes it shows read, only when something needs its value.
"""

from __future__ import annotations

from typing import Any, Callable, Union

from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import SequenceVariable, python_value
from pdyn.trace.variables.values.symint import SymIntVariable

# a part: text, or (value, conversion such as repr or None, format spec)
Part = Union[str, tuple[VariableTracker, Union[Callable[[Any], Any], None], str]]


def formats_lazily(value: VariableTracker) -> bool:
    """A symbolic int, or a tuple/Size/list of sizes and constants: formatted only when read."""
    if isinstance(value, SymIntVariable):
        return True
    return isinstance(value, SequenceVariable) and all(
        isinstance(i, SymIntVariable) or i.is_python_constant() for i in value.items) and not value.is_python_constant()


class LazyStringVariable(ConstantVariable):
    """A str constant whose `value` is computed on first read (each symbolic part a value read)."""

    def __init__(self, parts: list[Part]):  # noqa: super().__init__ would set `value`
        self.parts = parts
        self.source = None
        self._text: str | None = None

    @classmethod
    def join(cls, parts: list[VariableTracker]) -> LazyStringVariable:
        """BUILD_STRING over constants and lazy strings."""
        out: list[Part] = []
        for p in parts:
            out.extend(p.parts if isinstance(p, LazyStringVariable) else [p.as_python_constant()])
        return cls(out)

    @property  # type: ignore[override]
    def value(self) -> str:
        if self._text is None:
            text = []
            for part in self.parts:
                if isinstance(part, str):
                    text.append(part)
                    continue
                vt, convert, spec = part
                v = python_value(vt, "str() or formatting")
                text.append(format(convert(v) if convert else v, spec))
            self._text = "".join(text)
        return self._text

    def python_type(self) -> type:
        return str

    def __repr__(self) -> str:
        return f"LazyStringVariable({self.parts})"
