"""Trackers for user callables: functions (inlined), bound methods and functools.partial, and
Python's argument binding over trackers. Builtins and classes are in `variables/builtins.py`.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import Guard, IdGuard
from pdyn.sources import AttrSource, DefaultSource, ItemSource, PinnedSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.cell import CellVariable, real_cell
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, TupleVariable

if TYPE_CHECKING:
    from pdyn.trace.breaks.callees import BreakCallee
    from pdyn.trace.frame_codegen import ResumeCodegen
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
        self.attrs: dict[str, VariableTracker] = {}  # set on a function made in the trace
        # a function from the frame guarded by its code, not its identity: this guard pins the object
        self.identity_guard: Guard | None = None

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        if not isinstance(self.value, types.FunctionType):
            return None
        return callee.function(self.value, method_of, None if self.source is None else self)

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        if self.value is None and self.source is None:
            return codegen.made_function(self)   # a def or lambda the trace ran
        return self.reconstruct(codegen)

    def pin_identity(self, tx: Tracer) -> None:
        """An `is` decided by which object this is: the object itself is guarded from now on."""
        if self.identity_guard is not None:
            tx.ctx.add_guard(self.identity_guard)

    @classmethod
    def nested(cls, code: types.CodeType, f_globals: dict[str, Any], defaults: list[VariableTracker],
               kwdefaults: VariableTracker | None, closure: list[Any]) -> UserFunctionVariable:
        kw = dict(kwdefaults.items) if isinstance(kwdefaults, DictVariable) else {}
        return cls(None, code=code, f_globals=f_globals, defaults=list(defaults), kwdefaults=kw, closure=list(closure))

    def python_type(self) -> type:
        return types.FunctionType

    def parts_source(self) -> Source | None:
        """Where this function's rebindable parts are read from: its source, or for a function from
        outside the trace reached without one (a method found in its class, pinned there), the
        object itself; None for a function made in the trace."""
        if self.source is not None or self.value is None:
            return self.source
        return PinnedSource(id(self.value), self.value)

    def guard_code(self, tx: Tracer) -> None:
        """The code about to be inlined is the function's code on later calls too: `f.__code__` can
        be rebound on the very object its identity guard pins."""
        source = self.parts_source()
        if source is not None:
            tx.ctx.add_guard(IdGuard(AttrSource(source, "__code__"), self.code, loc=tx.loc()))

    def defaults(self, tx: Tracer) -> list[VariableTracker]:
        if self._defaults is None:
            values = self.value.__defaults__ or ()  # type: ignore[union-attr]
            source = self.parts_source()
            self._defaults = [self._wrap_part(tx, v, DefaultSource(source, i) if source else None)
                              for i, v in enumerate(values)]
        return self._defaults

    def kwdefaults(self, tx: Tracer) -> dict[str, VariableTracker]:
        if self._kwdefaults is None:
            values = self.value.__kwdefaults__ or {}  # type: ignore[union-attr]
            source = self.parts_source()
            self._kwdefaults = {k: self._wrap_part(tx, v, DefaultSource(source, k) if source else None)
                                for k, v in values.items()}
        return self._kwdefaults

    def closure_cells(self, tx: Tracer) -> list[CellVariable]:
        if self._closure is None:
            cells = []
            source = self.parts_source()
            for i, cell in enumerate(self.value.__closure__ or ()):  # type: ignore[union-attr]
                cell_src = ItemSource(AttrSource(source, "__closure__"), i) if source else None
                src = AttrSource(cell_src, "cell_contents") if cell_src is not None else None
                cells.append(real_cell(tx, cell, cell_src, lambda v, src=src: self._wrap_part(tx, v, src)))
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
        self.guard_code(tx)
        return tx.inline_call(self, args, kwargs)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        """A function's attributes as values (`f.__code__.co_varnames`, `functools.wraps`' `__wrapped__`).
        `__code__` is fixed by the function's IdGuard, or its code's (made where it was read); the other attributes
        can be rebound, so a function from the frame has them read, and guarded, through its source."""
        if name == "__code__":
            return ConstantVariable(self.code)
        if name in self.attrs:
            return self.attrs[name]
        if self.value is None:
            return self._made_attr(tx, name)
        try:
            value = getattr(self.value, name)
        except AttributeError as e:
            raise UserException(e, tx.loc()) from None
        if name in ("__globals__", "__closure__", "__builtins__", "__annotations__"):
            raise Unsupported("function_attr", f"pdyn cannot read {name} of {self.code.co_name}()", loc=tx.loc())
        if self.source is not None:
            return tx.wrap(value, AttrSource(self.source, name))
        return tx.wrap_constant(value)

    def _made_attr(self, tx: Tracer, name: str) -> VariableTracker:
        """An attribute of a function made during the trace (a nested def or lambda)."""
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(self.code.co_name if name == "__name__" else self.code.co_qualname)
        if name == "__module__":
            return ConstantVariable(self.f_globals.get("__name__"))
        if name == "__doc__":
            first = self.code.co_consts[0] if self.code.co_consts else None
            return ConstantVariable(first if isinstance(first, str) else None)
        if name == "__defaults__":
            return TupleVariable(list(self._defaults)) if self._defaults else ConstantVariable(None)
        if name == "__kwdefaults__":
            return DictVariable(dict(self._kwdefaults)) if self._kwdefaults else ConstantVariable(None)
        if name == "__dict__":
            return DictVariable(self.attrs)
        raise UserException(AttributeError(f"'function' object has no attribute {name!r}"), tx.loc())

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        """Setting an attribute of a function made in the trace (`functools.wraps` on a nested def);
        a function from the frame is not written to."""
        if self.value is not None or name in ("__code__", "__defaults__", "__kwdefaults__", "__closure__"):
            super().store_attr(tx, name, value)
        self.attrs[name] = value

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.code.co_name})"


class UserMethodVariable(VariableTracker):
    """A function bound to an object the trace knows (`self.helper`): calls pass `obj` first."""

    def __init__(self, fn: VariableTracker, obj: VariableTracker):
        self.fn = fn
        self.obj = obj

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        return None if method_of is not None else self.fn.callee_at_break(callee, self.obj)

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        return f"{codegen.constant(types.MethodType, 'MethodType')}({codegen.reconstruct(self.fn)}, {codegen.reconstruct(self.obj)})"

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call(tx, [self.obj, *args], kwargs)

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        """A bound method's own `__func__`/`__self__`; other reads go to its function, as Python's do."""
        if name == "__func__":
            return self.fn
        if name == "__self__":
            return self.obj
        return self.fn.getattr(tx, name)


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
