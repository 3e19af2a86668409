"""What running an fx node does besides computing its outputs: writing to a tensor it is given
(`mutates`), or drawing from a random generator (`draws_random`). The Triton backend runs a graph
with a write with torch (its IR reads lazily); the frame code can rerun a graph that raised eagerly
only when the graph wrote nothing, and restores the generator first when it drew.

Derived, not listed: Python's in-place operators from the `operator` module, Tensor's in-place
dunders, aten schemas (an argument that is written and is not an `out=`), `inplace=` and `out=`.
"""

from __future__ import annotations

import functools
import inspect
import operator
from typing import Any

import torch
import torch.fx

# operator.iadd, ixor, imatmul, ...: each `i<name>` whose out-of-place `<name>` exists too
IN_PLACE_OPERATORS = frozenset(
    [getattr(operator, n) for n in dir(operator)
     if n.startswith("i") and (hasattr(operator, n[1:]) or hasattr(operator, n[1:] + "_"))]
    + [operator.setitem, operator.delitem])

PURE_OPERATORS = frozenset(getattr(operator, n) for n in dir(operator)
                           if callable(getattr(operator, n))) - IN_PLACE_OPERATORS

# Tensor.__iadd__, __ixor__, __idiv__, ...: each `__i<name>__` whose `__<name>__` exists too
IN_PLACE_DUNDERS = frozenset(n for n in dir(torch.Tensor)
                             if n.startswith("__i") and hasattr(torch.Tensor, "__" + n[3:]))


def mutates(node: torch.fx.Node) -> bool:
    """Whether running `node` may write to one of its tensor arguments."""
    if node.op not in ("call_function", "call_method"):
        return False
    target = node.target
    if target in IN_PLACE_OPERATORS or node.kwargs.get("out") is not None:
        return True
    if target in PURE_OPERATORS:  # operator.and_, or_: the trailing `_` only avoids a keyword
        return False
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if isinstance(target, torch._ops.OpOverload):
        return _writes(target._schema)
    if name in IN_PLACE_DUNDERS or _aten_writes(name) or _inplace_flag(node):
        return True
    return name.endswith("_") and not name.startswith("_")  # torch.nn.init.normal_, ...


def writes_an_input(graph: torch.fx.Graph) -> bool:
    """Whether running `graph` may write to memory its inputs own: a write to an input, or to a value
    that may be a view of one. Values of ops that surely allocate (`clone`, `x + 1`) are the graph's own."""
    return any(mutates(node) and any(_may_alias_input(t) for t in _written(node)) for node in graph.nodes)


def _written(node: torch.fx.Node) -> list[Any]:
    out = node.kwargs.get("out")
    if out is not None:
        return list(out) if isinstance(out, (list, tuple)) else [out]
    return [node.args[0] if node.args else node.kwargs.get("input", node.kwargs.get("self"))]


def _may_alias_input(value: Any, seen: set[torch.fx.Node] | None = None) -> bool:
    if not isinstance(value, torch.fx.Node):
        return value is not None and not isinstance(value, (int, float, bool, str))
    seen = set() if seen is None else seen
    if value in seen:
        return False
    seen.add(value)
    if value.op in ("call_function", "call_method") and _allocates(_name(value.target)):
        return False
    if value.op in ("placeholder", "get_attr"):
        return True
    return any(_may_alias_input(arg, seen) for arg in value.all_input_nodes)


# composite ops whose schema promises a new tensor but which may return their argument itself
RETURNS_ITS_ARGUMENT = frozenset("""type_as dropout alpha_dropout feature_dropout feature_alpha_dropout resolve_conj
resolve_neg positive einsum sum_to_size atleast_1d atleast_2d atleast_3d lift lift_fresh""".split())


@functools.lru_cache(maxsize=None)
def _allocates(name: str) -> bool:
    """An aten op none of whose overloads returns an alias of an argument, other than an `out=`."""
    if name in RETURNS_ITS_ARGUMENT or name.endswith("_") or not _overloads(name):
        return False
    return not any(r.alias_info is not None and not r.alias_info.is_write
                   for op in _overloads(name) for r in op._schema.returns)


def _name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.name.removeprefix("aten::")
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def draws_random(node: torch.fx.Node) -> bool:
    """Whether running `node` advances a random generator: an aten op tagged `nondeterministic_seeded`
    under the node's name (`dropout`, `randn_like`, `bernoulli_`, ...)."""
    if node.op not in ("call_function", "call_method"):
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return torch.Tag.nondeterministic_seeded in target.tags
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    return _aten_seeded(name)


@functools.lru_cache(maxsize=None)
def _aten_seeded(name: str) -> bool:
    return not name.startswith("_") and any(torch.Tag.nondeterministic_seeded in op.tags for op in _overloads(name))


def _writes(schema: Any) -> bool:
    """A positional tensor the op writes to (`Tensor(a!) self`). `out=` variants do not count (an
    out argument is a keyword, checked on the node itself), nor TorchScript's `list.sort`."""
    return any(a.alias_info is not None and a.alias_info.is_write and not a.kwarg_only
               and str(a.type) in ("Tensor", "Optional[Tensor]") for a in schema.arguments)


@functools.lru_cache(maxsize=None)
def _aten_writes(name: str) -> bool:
    """Whether any overload of `aten::<name>` writes to an argument (add_, __ixor__, copy_...)."""
    if not name or name.startswith("_") and not name.startswith("__"):
        return False
    return any(_writes(op._schema) for op in _overloads(name))


@functools.lru_cache(maxsize=None)
def _overloads(name: str) -> tuple[Any, ...]:
    """Every overload of `aten::<name>`; none where aten has no op of that name."""
    packet = getattr(torch.ops.aten, name, None) if name else None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return ()
    return tuple(getattr(packet, o) for o in packet.overloads())


def _inplace_flag(node: torch.fx.Node) -> bool:
    """`F.relu(x, True)`, `F.dropout(x, 0.5, True, True)`: an `inplace` parameter, however passed."""
    if node.op != "call_function" or node.kwargs.get("inplace"):
        return bool(node.kwargs.get("inplace"))
    target: Any = node.target  # a callable: call_function
    try:
        bound = inspect.signature(target).bind(*node.args, **node.kwargs)
    except (TypeError, ValueError):  # builtins without a signature, or arguments it cannot bind
        return False
    return bool(bound.arguments.get("inplace"))
