"""Trackers for user callables: functions (inlined), bound methods and functools.partial, and
Python's argument binding over trackers. Builtins and classes are in `variables/builtins.py`.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.sources import AttrSource, DefaultSource, ItemSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.cell import CellVariable
from pdyn.trace.variables.constant import ConstantVariable
from pdyn.trace.variables.containers import DictVariable, TupleVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


class UserFunctionVariable(VariableTracker):
    """A Python function whose bytecode pdyn inlines: a global helper, a method's function, a
    lambda, a nested function or comprehension made during the trace (`value` is None then)."""

    def __init__(self, value: types.FunctionType | None, source: Source | None = None, *,
                 code: types.CodeType | None = None, f_globals: dict[str, Any] | None = None,
                 defaults: list[VariableTracker] | None = None,
                 kwdefaults: dict[str, VariableTracker] | None = None,
                 closure: list[CellVariable] | None = None):
        self.value = value
        self.source = source
        self.code: types.CodeType = code if code is not None else value.__code__  # type: ignore[union-attr]
        self.f_globals: dict[str, Any] = f_globals if f_globals is not None else value.__globals__  # type: ignore[union-attr]
        self._defaults = defaults
        self._kwdefaults = kwdefaults
        self._closure = closure

    @classmethod
    def nested(cls, code: types.CodeType, f_globals: dict[str, Any], defaults: list[VariableTracker],
               kwdefaults: VariableTracker | None, closure: list[Any]) -> UserFunctionVariable:
        kw = dict(kwdefaults.items) if isinstance(kwdefaults, DictVariable) else {}
        return cls(None, code=code, f_globals=f_globals, defaults=list(defaults), kwdefaults=kw, closure=list(closure))

    def python_type(self) -> type:
        return types.FunctionType

    def defaults(self, tx: Tracer) -> list[VariableTracker]:
        if self._defaults is None:
            values = self.value.__defaults__ or ()  # type: ignore[union-attr]
            self._defaults = [self._wrap_part(tx, v, DefaultSource(self.source, i) if self.source else None)
                              for i, v in enumerate(values)]
        return self._defaults

    def kwdefaults(self, tx: Tracer) -> dict[str, VariableTracker]:
        if self._kwdefaults is None:
            values = self.value.__kwdefaults__ or {}  # type: ignore[union-attr]
            self._kwdefaults = {k: self._wrap_part(tx, v, DefaultSource(self.source, k) if self.source else None)
                                for k, v in values.items()}
        return self._kwdefaults

    def closure_cells(self, tx: Tracer) -> list[CellVariable]:
        if self._closure is None:
            cells = []
            for i, cell in enumerate(self.value.__closure__ or ()):  # type: ignore[union-attr]
                try:
                    contents = cell.cell_contents
                except ValueError:
                    cells.append(CellVariable(None))
                    continue
                src = AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i), "cell_contents") \
                    if self.source else None
                cells.append(CellVariable(self._wrap_part(tx, contents, src)))
            self._closure = cells
        return self._closure

    def _wrap_part(self, tx: Tracer, value: Any, source: Source | None) -> VariableTracker:
        if source is not None:
            return tx.wrap(value, source)
        vt = tx.wrap_constant(value)
        if not vt.is_python_constant() and not isinstance(vt, UserFunctionVariable):
            raise Unsupported("closure", f"pdyn cannot guard a closure variable of {self.code.co_name}()",
                              loc=tx.loc())
        return vt

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return tx.inline_call(self, args, kwargs)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(self.code.co_name if name == "__name__" else self.code.co_qualname)
        return super().getattr(tx, name)

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.code.co_name})"


class UserMethodVariable(VariableTracker):
    """A function bound to an object the trace knows (`self.helper`): calls pass `obj` first."""

    def __init__(self, fn: VariableTracker, obj: VariableTracker):
        self.fn = fn
        self.obj = obj

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call(tx, [self.obj, *args], kwargs)


class PartialVariable(VariableTracker):
    """A functools.partial: calls prepend its stored arguments; its keywords yield to the call's."""

    def __init__(self, fn: VariableTracker, args: list[VariableTracker], keywords: dict[str, VariableTracker],
                 source: Source | None = None):
        self.fn = fn
        self.args = args
        self.keywords = keywords
        self.source = source

    @classmethod
    def from_input(cls, tx: Tracer, value: functools.partial[Any], source: Source) -> PartialVariable:
        """A partial read from the frame: its parts are read, and guarded, through their own sources."""
        parts = [tx.wrap(getattr(value, name), AttrSource(source, name)) for name in ("func", "args", "keywords")]
        return cls(parts[0], parts[1].items, dict(parts[2].items), source)  # type: ignore[attr-defined]

    def python_type(self) -> type:
        return functools.partial

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call(tx, [*self.args, *args], {**self.keywords, **kwargs})

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "func":
            return self.fn
        if name in ("args", "keywords"):
            return TupleVariable(self.args) if name == "args" else DictVariable(self.keywords)
        return super().getattr(tx, name)


def bind_arguments(fn: UserFunctionVariable, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                   tx: Tracer) -> dict[str, VariableTracker]:
    """Python's argument binding over trackers; a mismatch is the TypeError eager would raise."""
    code = fn.code
    names = code.co_varnames
    n_pos, n_kwonly = code.co_argcount, code.co_kwonlyargcount
    pos_names, kwonly_names = names[:n_pos], names[n_pos:n_pos + n_kwonly]
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    extra_index = n_pos + n_kwonly
    bound: dict[str, VariableTracker] = dict(zip(pos_names, args))

    def fail(message: str) -> UserException:
        return UserException(TypeError(f"{code.co_name}() {message}"), tx.loc())

    if len(args) > n_pos and not has_varargs:
        raise fail(f"takes {n_pos} positional arguments but {len(args)} were given")
    if has_varargs:
        bound[names[extra_index]] = TupleVariable(list(args[n_pos:]))
    extra_kw: dict[str, VariableTracker] = {}
    for key, value in kwargs.items():
        if key in kwonly_names or key in pos_names[code.co_posonlyargcount:]:
            if key in bound:
                raise fail(f"got multiple values for argument {key!r}")
            bound[key] = value
        elif has_varkw:
            extra_kw[key] = value
        else:
            raise fail(f"got an unexpected keyword argument {key!r}")
    defaults = fn.defaults(tx)
    first_default = n_pos - len(defaults)
    for i, name in enumerate(pos_names):
        if name not in bound:
            if i < first_default:
                raise fail(f"missing required positional argument {name!r}")
            bound[name] = defaults[i - first_default]
    kwdefaults = fn.kwdefaults(tx)
    for name in kwonly_names:
        if name not in bound:
            if name not in kwdefaults:
                raise fail(f"missing required keyword-only argument {name!r}")
            bound[name] = kwdefaults[name]
    if has_varkw:
        bound[names[extra_index + has_varargs]] = DictVariable(extra_kw)
    return bound
