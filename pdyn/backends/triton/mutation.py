"""Which fx nodes write to a tensor they are given. The Triton backend reads values lazily (a value
is recomputed or stored where a consumer needs it), so a graph with a write runs with torch.

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
    packet = getattr(torch.ops.aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    return any(_writes(getattr(packet, o)._schema) for o in packet.overloads())


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
