"""In-place writes of a training graph's own tensors become their out-of-place ops, so the joint
builder sees a pure graph: `h += bias` (T5's position bias), `mask.masked_fill_(...)`,
`x.mul_(2)` on a tensor the graph made and nothing else views.

A write is rewritten only where eager's autograd could not have told the difference. Eager
raises at backward when an op saved the written tensor before the write (`y = x.sigmoid();
y.mul_(2)`: sigmoid's backward reads its result); the rewritten graph would not. So the written
tensor's producer must be an op whose backward does not read its result, and every earlier
reader an op whose backward does not read its inputs; anything else stays a write, and the graph
runs with torch as before (counted and reported).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from pdyn.backends.autograd.builder import example
from pdyn.backends.autograd.partition import NotDifferentiable
from pdyn.ops import canonical, op_of
from pdyn.ops.aliasing import AliasClasses, functional_op, members_by_class, private_write
from pdyn.ops.effects import mutates
from pdyn.ops.table import is_in_place_operator, plain_operator

# Ops whose backward never reads their result: a write to that result is invisible to autograd
# (the write itself is functional now, so later readers see the new value)
RESULT_NOT_SAVED = frozenset({
    "add", "sub", "mul", "div", "neg", "matmul", "mm", "bmm", "linear", "addmm", "baddbmm", "clone",
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "new_zeros",
    "new_ones", "new_full", "new_empty", "arange", "cat", "stack", "to", "float", "half", "bfloat16",
    "double", "type", "sum", "mean", "masked_fill", "where", "embedding", "gelu", "silu", "layer_norm",
    "group_norm", "rms_norm", "dropout", "tensor", "scalar_tensor",
})
# Ops whose backward never reads their tensor inputs: reading the tensor before the write saves nothing
INPUTS_NOT_SAVED = frozenset({"add", "sub", "neg", "clone", "to", "float", "half", "bfloat16", "double", "type",
                              "cat", "stack", "sum", "size", "dim", "numel", "stride",
                              # no gradient at all: comparisons, predicates, integer results
                              "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_not",
                              "logical_and", "logical_or", "any", "all", "argmax", "argmin", "long", "int", "bool"})


def functionalize(gm: torch.fx.GraphModule) -> int:
    """Rewrite, in place, every write `functional_writes` allows; the number rewritten."""
    rewritten = 0
    for node in functional_writes(gm):
        _rewrite(gm.graph, node)
        rewritten += 1
    if rewritten:
        gm.graph.lint()
        gm.recompile()
    return rewritten


def functional_writes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The writes of alias classes whose every write can be rewritten, in graph order."""
    classes = AliasClasses(gm, tensors_only=True)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    found: list[torch.fx.Node] = []
    for nodes in members_by_class(gm, classes).values():
        writes = [n for n in nodes if mutates(n)]
        if writes and all(_rewritable(classes, n, nodes, order) for n in writes):
            found += writes
    return sorted(found, key=order.__getitem__)


def setitem_copy(tensor: torch.Tensor, index: Any, value: Any) -> torch.Tensor:
    """`tensor[index] = value` out of place: what an item assignment becomes (its backward is
    torch's, as for any op without a derivative rule)."""
    out = tensor.clone()
    out[index] = value
    return out


def _rewritable(classes: AliasClasses, node: torch.fx.Node, members: list[torch.fx.Node],
                order: dict[torch.fx.Node, int]) -> bool:
    has_twin = node.target is operator.setitem or functional_op(node) is not None
    if not has_twin or _functional_target(node) is None or not _private(classes, node, members, order):
        return False
    target = node.args[0]
    if target.op not in ("call_function", "call_method"):
        return False
    if not (mutates(target) or op_of(target).name in RESULT_NOT_SAVED):
        return False
    return all(mutates(user) or op_of(user).name in INPUTS_NOT_SAVED
               for user in target.users if order[user] < order[node])


def _private(classes: AliasClasses, node: torch.fx.Node, members: list[torch.fx.Node],
             order: dict[torch.fx.Node, int]) -> bool:
    """The written tensor is the graph's own: its class holds it, writes of it, and views made
    after the last write (they view the final value, which the rewrite gives them)."""
    last_write = max(order[m] for m in members if mutates(m))
    early = [m for m in members if mutates(m) or order[m] < last_write]
    return private_write(classes, node, early, chains=True)


def _functional_target(node: torch.fx.Node) -> Any:
    """The out-of-place callable (or method name) of an in-place node."""
    target = node.target
    if node.op == "call_method":
        name = target[:-1] if target.endswith("_") else None
        return name if name and hasattr(torch.Tensor, name) else None
    if target is operator.setitem:
        return setitem_copy
    if is_in_place_operator(target):
        plain = plain_operator(target)
        return plain if plain is not target else None
    name = getattr(target, "__name__", "")
    if not name.endswith("_"):
        return None
    owner = torch.Tensor if getattr(target, "__qualname__", "").startswith("Tensor.") else torch
    return getattr(owner, name[:-1], None)


def _rewrite(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """`node` (writing its first argument) becomes its out-of-place op, cast to the written dtype;
    later readers of the written tensor, and readers of `node`, read the new value."""
    target = node.args[0]
    like = node if isinstance(node.meta.get("example_value"), torch.Tensor) else target  # setitem returns None
    written = like.meta.get("example_value")
    with graph.inserting_after(node):
        new = graph.create_node(node.op, _functional_target(node), node.args, dict(node.kwargs),
                                name=f"{node.name}_functional")
        _stamp(new, like, written)
    result = new
    if written is not None and _dtype_of(new) not in (None, written.dtype):
        with graph.inserting_after(new):
            result = graph.call_function(torch.Tensor.to, (new, written.dtype))
            _stamp(result, like, written)
    if not mutates(target):  # NOTE: the trace's fake of the root was written too: it would claim a grad
        _stamp(target, target, written)
    after = False
    for user in list(graph.nodes):
        if user is node:
            after = True
        elif after and user not in (new, result) and target in user.all_input_nodes:
            user.replace_input_with(target, result)
    node.replace_all_uses_with(result, delete_user_cb=lambda u: u not in (new, result))
    graph.erase_node(node)


def _stamp(new: torch.fx.Node, like: torch.fx.Node, written: Any) -> None:
    """`new` gets `like`'s stamps (sizes, strides, source) and its own row and fake example."""
    new.meta.update({k: v for k, v in like.meta.items() if k not in ("op", "example_value")})
    new.meta["op"] = canonical(new.target)
    mode = getattr(written, "fake_mode", None)
    if mode is None:
        return
    args, kwargs = example(new.args), example(new.kwargs)
    try:
        with mode:
            if new.op == "call_method":
                new.meta["example_value"] = getattr(args[0], new.target)(*args[1:], **kwargs)
            else:
                new.meta["example_value"] = new.target(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  # NOTE: without an example the builder cannot decide grads
        raise NotDifferentiable(f"{new.name}: no fake example ({type(e).__name__}: {e})") from e


def _dtype_of(node: torch.fx.Node) -> Any:
    example = node.meta.get("example_value")
    return getattr(example, "dtype", None)

