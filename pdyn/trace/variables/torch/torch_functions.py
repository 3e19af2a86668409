"""Trackers for torch's API and Python modules: torch functions become graph nodes, modules
(`torch`, `math`, `torch.nn.functional`) are namespaces, and opaque constants (finfo) answer
attribute reads. `pin_sizes_read` guards the non-tensor answers ops give about tensors.

A torch function written in Python that the op table does not declare (`F._canonical_mask`,
`F.multi_head_attention_forward`) is inlined like user code, as torch.compile does: recorded
whole it would run on fake tensors of this trace's sizes and pin them; inlined, the ops inside
it, which have shape rules, keep sizes symbolic. A declared row (`F.relu`, `F.layer_norm`) stays
one node: it has a shape rule and a lowering.
"""

from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any

import torch
from torch._library.custom_ops import CustomOpDef

from pdyn.base.errors import SourceLoc, Unsupported, UserException
from pdyn.ops import Op, canonical
from pdyn.sources import AttrSource
from pdyn.shapes.shape_env import ShapeEnv
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable, ObjectConstantVariable, guard_flag
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable
from pdyn.trace.variables.torch.fx_args import as_fake
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.int_tensors import note_int_value
from pdyn.trace.variables.torch.tensor import TensorVariable
from pdyn.trace.variables.registry import rule_of
from pdyn.trace.variables.torch.torch_queries import QUERIES, state_rule

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

# torch functions that spell a Tensor method: they answer through the tensor's tracker, as the
# method does (`torch.numel(x)` is `x.numel()`, symbolic where the sizes are).
TENSOR_QUERIES = {torch.numel: "numel", torch.is_floating_point: "is_floating_point",
                  torch.is_complex: "is_complex", torch.is_same_size: "is_same_size"}
# Calls whose non-tensor answer depends on no size: on type, dtype, device, rank or requires_grad
# only, which the inputs' TensorGuards pin (`x == None` is False whatever x's size).
SIZE_FREE_FUNCTIONS = frozenset({torch.is_tensor, torch.is_floating_point, torch.is_complex, torch.is_storage,
                                 torch.get_default_dtype, torch.promote_types, torch.result_type, torch.can_cast,
                                 operator.eq, operator.ne})
SIZE_FREE_METHODS = frozenset({"is_floating_point", "is_complex", "is_signed", "element_size", "get_device",
                               "type", "dim", "ndimension", "__eq__", "__ne__"})


def _torch_namespace_functions() -> dict[int, Any]:
    namespaces = [torch, torch.nn.functional, torch.linalg, torch.fft, torch.special, torch.nn.init,
                  torch._C._nn, torch._C._linalg, torch._C._fft, torch._C._special, torch._C._VariableFunctions]
    found: dict[int, Any] = {}
    for namespace in namespaces:
        for name in dir(namespace):
            value = getattr(namespace, name, None)
            if callable(value) and not isinstance(value, type):
                found[id(value)] = value
    return found


TORCH_FUNCTIONS = _torch_namespace_functions()
# torch functions with a rule for a NumPy array argument (numpy_functions.py); None from the rule: no array
ARRAY_RULES: dict[Any, Any] = {}


def is_torch_function(value: Any) -> bool:
    """A function of torch's namespaces (an op to record); methods of torch classes, such as
    nn.Linear.forward, are user code to inline."""
    if id(value) in TORCH_FUNCTIONS or _is_query(value):   # a torch._C query (`_get_tracing_state`)
        return True
    module = getattr(value, "__module__", None) or ""
    if not callable(value) or isinstance(value, type) or not (module == "torch" or module.startswith("torch.")):
        return False
    return "." not in getattr(value, "__qualname__", "") and not module.startswith("torch.nn.modules")


def _array_rule(value: Any) -> Any:
    try:
        return ARRAY_RULES.get(value)
    except TypeError:   # unhashable
        return None


def _is_query(value: Any) -> bool:
    try:
        return value in QUERIES
    except TypeError:   # unhashable
        return False


def is_inlined(value: Any, op: Op) -> bool:
    """Whether a torch function is traced through rather than recorded: Python code that no row of
    the op table declares (so no shape rule) and that is not refused."""
    return isinstance(value, types.FunctionType) and not op.declared and op.refused is None


class TorchFunctionVariable(ObjectConstantVariable):
    """A function from torch (`torch.relu`, `F.linear`, `torch.cat`): calling it records a node."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if isinstance(self.value, torch._ops.OpOverloadPacket):   # `torch.ops.ns.op(...)`: one overload's node
            return TorchFunctionVariable(_overload_called(tx, self.value, args, kwargs)).call(tx, args, kwargs)
        name = getattr(self.value, "__name__", repr(self.value))
        module = getattr(self.value, "__module__", "") or ""
        rule = rule_of(self.value)
        if rule is not None:  # not an op: a query of torch's state, or a check
            return rule(tx, args, kwargs)
        array_rule = _array_rule(self.value)
        if array_rule is not None and (result := array_rule(tx, self.value, args, kwargs)) is not None:
            return result   # a NumPy array passed to torch.from_numpy / as_tensor / tensor
        state = state_rule(tx, self.value, args, kwargs)
        if state is not None:  # a torch._C getter (answered) or setter (a break)
            return state(tx, self.value, args, kwargs)
        op = canonical(self.value)
        if op.refused is not None:
            refused = op.refused
            raise Unsupported(refused.kind, refused.message.format(what=f"{module}.{name}()"), hint=refused.hint,
                              loc=tx.loc())
        if is_inlined(self.value, op):
            return tx.inline_call(UserFunctionVariable(self.value), args, kwargs)
        if "out" in kwargs:
            raise Unsupported("out_argument", f"pdyn cannot trace {name}(out=...)", loc=tx.loc())
        method = TENSOR_QUERIES.get(self.value)
        if method is not None and args and isinstance(args[0], TensorVariable):
            return args[0].call_method(tx, method, list(args[1:]), kwargs)
        result = tx.output.call("call_function", self.value, args, kwargs, loc=tx.loc(),
                                mutates=op.mutates is not None)
        if isinstance(result, TensorVariable):   # torch.div(n, 2, rounding_mode="floor"): the int it holds
            note_int_value(tx, self.value, args, kwargs, result)
        return result

    def __repr__(self) -> str:
        return f"TorchFunctionVariable({getattr(self.value, '__name__', self.value)})"


def _overload_called(tx: Tracer, packet: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> Any:
    """The overload `packet(*args, **kwargs)` dispatches to: the dispatcher's own schema matching, on
    the trace-time values (it decides by their types, which the trace's guards fix)."""
    names = packet.overloads()
    if len(names) == 1:
        return getattr(packet, names[0])
    try:
        name = torch._C._jit_resolve_packet(packet._qualified_op_name, *[as_fake(a) for a in args],
                                            **{k: as_fake(v) for k, v in kwargs.items()})
    except Exception as e:  # no overload takes these arguments: eager raises it, for real
        raise Unsupported("op_packet", f"pdyn cannot tell which overload of {packet._qualified_op_name} this "
                          f"call takes: {e}", loc=tx.loc()) from None
    return getattr(packet, name)


def op_function(value: Any) -> TorchFunctionVariable | None:
    """An op packet (`torch.ops.aten.sin`) or a `torch.library.custom_op` object (calling it calls its
    overload) as the function it calls; None for anything else."""
    if isinstance(value, torch._ops.OpOverloadPacket):
        return TorchFunctionVariable(value)
    if isinstance(value, CustomOpDef):
        return TorchFunctionVariable(value._opoverload)
    return None


def pin_sizes_read(env: ShapeEnv, loc: SourceLoc | None, kind: str, target: Any, args: list[VariableTracker],
                   kwargs: dict[str, VariableTracker]) -> None:
    """An op answered a non-tensor (a count, a flag) from fake tensors of this trace's sizes: unless
    its answer depends on no size, the sizes it was given are pinned (each a value read), so that
    the answer is guarded. Symbolic answers come from the trackers (`x.numel()`), not from here."""
    if target in (SIZE_FREE_METHODS if kind == "call_method" else SIZE_FREE_FUNCTIONS):
        return
    if kind == "call_method" and target == "is_contiguous" and _contiguity_guarded(args, kwargs):
        return
    why = f"{getattr(target, '__name__', target)}(), whose answer depends on sizes"
    stack: list[Any] = [*args, *kwargs.values()]
    while stack:
        vt = stack.pop()
        if isinstance(vt, TensorVariable):
            for size in vt.sizes:
                env.specialize(size, loc, why)
        elif isinstance(vt, SymIntVariable):
            vt.value_read(why, loc)
        else:
            items = getattr(vt, "items", ())
            stack.extend(items.values() if isinstance(items, dict) else items)


def _contiguity_guarded(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """`x.is_contiguous()` of a graph input: its TensorGuard checks exactly that."""
    fmt = kwargs.get("memory_format", args[1] if len(args) > 1 else None)
    default = fmt is None or (fmt.is_python_constant() and fmt.as_python_constant() is torch.contiguous_format)
    x = args[0]
    return default and isinstance(x, TensorVariable) and x.node.op == "placeholder"


class PythonModuleVariable(ObjectConstantVariable):
    """A Python module used as a namespace (`torch`, `math`, `F`). Its functions and classes are not
    guarded: pdyn, like torch.compile, assumes nobody rebinds `torch.relu` between calls; a scalar
    read from torch's namespaces is a flag (`torch.backends.cudnn.enabled`) and is guarded."""

    def python_type(self) -> type:
        return types.ModuleType

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        try:
            value = getattr(self.value, name)
        except AttributeError as e:
            raise UserException(e) from None
        if self.value.__name__.startswith("torch") or isinstance(value, types.ModuleType) or self.source is None:
            guard_flag(tx, self.value, name, value)
            return tx.wrap_constant(value)
        return tx.wrap(value, AttrSource(self.source, name))

    def __repr__(self) -> str:
        return f"PythonModuleVariable({self.value.__name__})"
