"""`Fn.apply(*args)` of a `torch.autograd.Function` subclass: one graph node that calls `Fn.apply`
at run time, so autograd sees the Function exactly as eager does (its `backward` runs, its saved
tensors are eager's) and the model stays one graph.

To learn what the node returns, the Function's `forward` is traced inline under no_grad (as
autograd runs it) with a stand-in `ctx`: that gives its outputs' symbolic sizes and dtypes and the
guards its Python needs. The nodes that trace recorded are then erased; the one `apply` node takes
their place. Its fake result comes from `_Replay`, a Function whose forward returns the traced
outputs, so `requires_grad`, `is_leaf` and non-differentiable outputs follow autograd's own rules.

A forward that changes Python state, writes a tensor it did not make, reads tensor data, or
returns something other than tensors and constants is a graph break at the call (the call then
runs eagerly); so is a class that overrides `apply` or calls `mark_dirty`.
"""

from __future__ import annotations

import contextlib
import types
from typing import TYPE_CHECKING, Any, Iterator

import torch
import torch.fx

from pdyn.base.errors import Unsupported, UserException
from pdyn.ops import op_of
from pdyn.ops.effects import mutates
from pdyn.shapes import graph_meta
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.builtins import ClassVariable
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import TupleVariable
from pdyn.trace.variables.torch.fx_args import as_fake
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable, wrap_fx_result
from pdyn.trace.variables.objects.user_objects import class_attr

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

FUNCTION_APPLY = torch.autograd.Function.apply.__func__  # type: ignore[attr-defined]
NONE = ConstantVariable(None)


def is_autograd_function(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, torch.autograd.Function) \
        and value is not torch.autograd.Function


def is_function_apply(value: Any) -> bool:
    """`Fn.apply` taken as a value (`gelu = GeluFunction.apply`): torch's own apply, bound to a Function."""
    return isinstance(value, types.MethodType) and value.__func__ is FUNCTION_APPLY \
        and is_autograd_function(value.__self__)


class ApplyFunction:
    """The graph node's target: `Fn.apply(*args)`. One object per Function class, named after it
    (fx prints a target by its name; `Fn.apply` itself would print as torch's unbound apply)."""

    _made: dict[type, ApplyFunction] = {}

    def __init__(self, fn_cls: type):
        self.fn_cls = fn_cls
        self.__name__ = f"{fn_cls.__name__}_apply"
        self.__qualname__ = self.__name__

    @classmethod
    def of(cls, fn_cls: type) -> ApplyFunction:
        if fn_cls not in cls._made:
            cls._made[fn_cls] = cls(fn_cls)
        return cls._made[fn_cls]

    def __call__(self, *args: Any) -> Any:
        return self.fn_cls.apply(*args)

    def __repr__(self) -> str:
        return f"{self.fn_cls.__qualname__}.apply"


class _Replay(torch.autograd.Function):
    """The fake result of the node: the traced outputs, returned through autograd's wrapping of a
    Function's outputs (so a differentiable output of an input that requires grad requires grad)."""

    @staticmethod
    def forward(ctx: Any, outputs: tuple[Any, ...], non_differentiable: tuple[int, ...], *inputs: Any) -> Any:
        made = tuple(o.clone() if isinstance(o, torch.Tensor) else o for o in outputs)
        ctx.mark_non_differentiable(*(made[i] for i in non_differentiable))
        return made

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # never run: only fake tensors pass through
        raise AssertionError("_Replay runs on fake tensors only")


class AutogradFunctionClassVariable(ClassVariable):
    """A `torch.autograd.Function` subclass: `apply` is traced as one node; the rest as any class."""

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "apply" and class_attr(tx, self.value, "apply") is torch.autograd.Function.__dict__["apply"]:
            return AutogradApplyVariable(self.value)
        return super().getattr(tx, name)


class AutogradApplyVariable(VariableTracker):
    """`Fn.apply`, bound to its Function class (guarded by identity where it was read)."""

    def __init__(self, fn_cls: type, source: Any = None):
        self.fn_cls = fn_cls
        self.source = source

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if kwargs:
            raise Unsupported("autograd_function", f"pdyn traces {self.fn_cls.__qualname__}.apply() with "
                              "positional arguments only", loc=tx.loc())
        return apply_function(tx, self.fn_cls, args)

    def __repr__(self) -> str:
        return f"AutogradApplyVariable({self.fn_cls.__qualname__})"


class FunctionCtxVariable(VariableTracker):
    """The `ctx` a traced forward gets: what it saves or marks matters only to the real run."""

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self.attrs: dict[str, VariableTracker] = {}
        self.non_differentiable: list[VariableTracker] = []

    def python_type(self) -> type:
        return torch.autograd.function.FunctionCtx

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return TupleVariable([ConstantVariable(b) for b in self.needs_input_grad])
        if name in CTX_METHODS:
            return CtxMethodVariable(self, name)
        raise Unsupported("autograd_function", f"pdyn cannot trace ctx.{name} in an autograd.Function's forward",
                          loc=tx.loc())

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        self.attrs[name] = value  # for backward only: the real run's ctx gets the real value


CTX_METHODS = frozenset({"save_for_backward", "save_for_forward", "mark_non_differentiable", "set_materialize_grads",
                         "mark_dirty"})


class CtxMethodVariable(VariableTracker):
    """A method of the traced forward's ctx."""

    def __init__(self, ctx: FunctionCtxVariable, name: str):
        self.ctx = ctx
        self.name = name

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.name == "mark_dirty":
            raise Unsupported("autograd_function", "pdyn cannot trace an autograd.Function that writes its "
                              "inputs (ctx.mark_dirty)", loc=tx.loc())
        if self.name == "mark_non_differentiable":
            self.ctx.non_differentiable.extend(args)
        return NONE


@contextlib.contextmanager
def _no_grad_at_trace_time() -> Iterator[None]:
    """autograd runs forward under no_grad: the trace-time mode only (the nodes are erased)."""
    prior = torch.is_grad_enabled()
    torch._C._set_grad_enabled(False)
    try:
        yield
    finally:
        torch._C._set_grad_enabled(prior)


def apply_function(tx: Tracer, fn_cls: type, args: list[VariableTracker]) -> VariableTracker:
    """Trace `fn_cls.apply(*args)` as one node (the module docstring says how)."""
    forward = class_attr(tx, fn_cls, "forward")
    if isinstance(forward, staticmethod):
        forward = forward.__func__
    if not isinstance(forward, types.FunctionType):
        raise Unsupported("autograd_function", f"pdyn cannot trace {fn_cls.__qualname__}.forward: it is not a "
                          "Python function", loc=tx.loc())
    setup_context = class_attr(tx, fn_cls, "setup_context")
    separate_ctx = torch.autograd.function._is_setup_context_defined(  # type: ignore[attr-defined]
        setup_context.__func__ if isinstance(setup_context, staticmethod) else setup_context)
    needs = tuple(isinstance(a, TensorVariable) and a.example.requires_grad for a in args)
    ctx = FunctionCtxVariable(needs)
    output, loc = tx.output, tx.loc()
    window = _Window(tx)
    with _no_grad_at_trace_time():
        result = UserFunctionVariable(forward).call(tx, list(args) if separate_ctx else [ctx, *args], {})
    window.check_pure(fn_cls)
    items = result.items if type(result) is TupleVariable else [result]
    for item in items:
        if not isinstance(item, TensorVariable) and not (item.is_python_constant() and not isinstance(item, SymIntVariable)):
            raise Unsupported("autograd_function", f"pdyn cannot trace {fn_cls.__qualname__}.forward returning "
                              f"{item}: only tensors and constants", loc=loc)
    tensors = [i for i in items if isinstance(i, TensorVariable)]
    if not tensors:
        raise Unsupported("autograd_function", f"{fn_cls.__qualname__}.forward returns no tensor", loc=loc)
    non_diff = tuple(n for n, i in enumerate(items) if any(i is m for m in ctx.non_differentiable))
    outputs = tuple(i.example if isinstance(i, TensorVariable) else i.as_python_constant() for i in items)
    try:
        with output.fake_mode:
            fake = _Replay.apply(outputs, non_diff, *(as_fake(a) for a in args))
    except Exception as e:  # autograd rejected the call (an input in an unsupported state): eager raises too
        raise UserException(e, loc) from None
    example: Any = fake if type(result) is TupleVariable else fake[0]
    window.erase()
    node = output._record("call_function", ApplyFunction.of(fn_cls), args, {}, example, loc)
    sizes = [t.sizes for t in tensors]
    graph_meta.stamp_result(node, example, sizes)
    sources = frozenset().union(*(getattr(a, "input_sources", frozenset()) for a in args))
    return wrap_fx_result(output, node, example, sources, sizes, tx.wrap_constant)


class _Window:
    """The nodes and Python state a traced forward adds, to check it is pure and erase its nodes."""

    def __init__(self, tx: Tracer):
        self.tx = tx
        self.graph: torch.fx.Graph = tx.output.graph
        self.before = set(self.graph.nodes)
        effects = tx.ctx.side_effects
        self.effects = len(effects.order), len(effects.containers), len(effects.calls)
        self.unbacked = len(tx.ctx.shape_env.unbacked)

    def added(self) -> list[torch.fx.Node]:
        return [n for n in self.graph.nodes if n not in self.before]

    def check_pure(self, fn_cls: type) -> None:
        effects = self.tx.ctx.side_effects
        why = None
        if (len(effects.order), len(effects.containers), len(effects.calls)) != self.effects:
            why = "changes Python state"
        elif len(self.tx.ctx.shape_env.unbacked) != self.unbacked:
            why = "reads tensor data"
        elif any(mutates(n) and self._reaches_outside(_written(n)) for n in self.added()):
            why = "writes a tensor it did not make"
        if why is not None:
            raise Unsupported("autograd_function", f"pdyn cannot trace {fn_cls.__qualname__}.apply(): its "
                              f"forward {why}", loc=self.tx.loc())

    def _reaches_outside(self, values: list[Any]) -> bool:
        """Whether a written value may be (a view of) a tensor from before the call."""
        stack = [v for v in values if isinstance(v, torch.fx.Node)]
        seen: set[torch.fx.Node] = set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in self.before:
                return True
            if node.op in ("call_function", "call_method") and op_of(node).allocates:
                continue
            stack.extend(node.all_input_nodes)
        return False

    def erase(self) -> None:
        """Erase the forward's nodes: its ops, and the sizes computed from them. A size node of
        values from before the call stays (a tracker outside may hold it)."""
        derived: set[torch.fx.Node] = set()
        for node in self.added():
            if node.op == "placeholder":
                continue
            if not node.meta.get(graph_meta.SIZE_NODE) or any(a in derived for a in node.all_input_nodes):
                derived.add(node)
        for node in reversed(self.added()):
            if node in derived:
                if node.users:
                    raise Unsupported("autograd_function", "a value made in an autograd.Function's forward is "
                                      "used outside it", loc=self.tx.loc())
                self.graph.erase_node(node)


def _written(node: torch.fx.Node) -> list[Any]:
    """The arguments a writing node writes (its `out=`, else the op table's written argument)."""
    out = node.kwargs.get("out")
    if out is not None:
        return list(out) if isinstance(out, (list, tuple)) else [out]
    index = op_of(node).mutates or 0
    return [node.args[index]] if len(node.args) > index else list(node.kwargs.values())
