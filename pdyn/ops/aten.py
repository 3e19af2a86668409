"""Facts read from aten's schemas and tags, by op name: which argument an op writes, whether it
draws from a random generator, whether it surely allocates its result. They fill the op table's
columns for rows nobody declared by hand (and for declared rows, whose names are aten's).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

# composite ops whose schema promises a new tensor but which may return their argument itself
RETURNS_ITS_ARGUMENT = frozenset("""type_as dropout alpha_dropout feature_dropout feature_alpha_dropout resolve_conj
resolve_neg positive einsum sum_to_size atleast_1d atleast_2d atleast_3d lift lift_fresh""".split())


@functools.lru_cache(maxsize=None)
def overloads(name: str) -> tuple[Any, ...]:
    """Every overload of `aten::<name>`; none where aten has no op of that name."""
    packet = getattr(torch.ops.aten, name, None) if name else None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return ()
    return tuple(getattr(packet, o) for o in packet.overloads())


def written_argument(schema: Any) -> int | None:
    """The position of a tensor the op writes to (`Tensor(a!) self`). `out=` variants do not count
    (an out argument is a keyword, checked on the node itself), nor TorchScript's `list.sort`."""
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write and not a.kwarg_only \
                and str(a.type) in ("Tensor", "Optional[Tensor]"):
            return i
    return None


@functools.lru_cache(maxsize=None)
def writes(name: str) -> int | None:
    """The argument some overload of `aten::<name>` writes to (add_, __ixor__, copy_...), if any."""
    if not name or name.startswith("_") and not name.startswith("__"):
        return None
    for op in overloads(name):
        index = written_argument(op._schema)
        if index is not None:
            return index
    return None


@functools.lru_cache(maxsize=None)
def seeded(name: str) -> bool:
    """Whether an overload of `aten::<name>` is tagged `nondeterministic_seeded` (dropout, randn_like...)."""
    return not name.startswith("_") and any(torch.Tag.nondeterministic_seeded in op.tags for op in overloads(name))


@functools.lru_cache(maxsize=None)
def allocates(name: str) -> bool:
    """An aten op none of whose overloads returns an alias of an argument, other than an `out=`."""
    if name in RETURNS_ITS_ARGUMENT or name.endswith("_") or not overloads(name):
        return False
    return not any(r.alias_info is not None and not r.alias_info.is_write
                   for op in overloads(name) for r in op._schema.returns)
