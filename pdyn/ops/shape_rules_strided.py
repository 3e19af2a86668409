"""The shape rule of `as_strided`, for an input that owns its storage (contiguous at every size and
alone in its storage from offset 0: `SymTensor.owns_storage`); for any other input there is no rule
(its sizes are specialized), since eager's bound is the storage's size, which its sizes do not give.

Registered into `pdyn.ops.shape_rules.RULES` on import.
"""

from __future__ import annotations

import sympy

from pdyn.ops.shape_rules import OpCall, ShapeError, Sizes, as_tensor, known, prod, register


@register("as_strided")
def as_strided(c: OpCall) -> list[Sizes] | None:
    """The `size` argument, where eager's checks hold: strides >= 0, and the last element the view
    reaches (offset + sum((size - 1) * stride)) inside the storage, unless the view is empty."""
    a = c.bind("input", "size", "stride", "storage_offset", storage_offset=None)
    x = as_tensor(a["input"], "input")
    if not x.owns_storage:
        return None
    size, stride = [sympy.sympify(s) for s in a["size"]], [sympy.sympify(s) for s in a["stride"]]
    if len(size) != len(stride):
        raise ShapeError("as_strided: mismatch in length of strides and shape")
    for s in size:
        c.require(sympy.Ge(s, 0), "as_strided: a size is negative")
    for s in stride:
        c.require(sympy.Ge(s, 0), "as_strided: Negative strides are not supported")
    offset = sympy.sympify(a["storage_offset"] or 0)
    last = offset + sum(((s - 1) * st for s, st in zip(size, stride)), sympy.Integer(0))
    inside = sympy.Lt(last, prod(x.sizes))
    if all(known(c.env, sympy.Ge(s, 1)) for s in size):
        c.require(inside, "as_strided: the view reaches past the end of the storage")
    else:
        c.require(sympy.Or(inside, *(sympy.Eq(s, 0) for s in size)),
                  "as_strided: the view reaches past the end of the storage")
    return [tuple(size)]
