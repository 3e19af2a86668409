"""What running an fx node does besides computing its outputs: writing to a tensor it is given
(`mutates`), or drawing from a random generator (`draws_random`). The Triton backend runs a graph
with a write with torch (its IR reads lazily); the frame code can rerun a graph that raised eagerly
only when the graph wrote nothing, and restores the generator first when it drew.

The op table (pdyn/ops) answers per op: the argument its row writes, its random draws, whether it
surely allocates. What depends on one call is decided here: `out=`, an `inplace` flag, and the
ops that write an argument only for some values of another (`CONDITIONAL_WRITES`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch
import torch.fx

import torch.nn.functional as F

from pdyn.ops import op_of


def _given(flag: str) -> Any:
    return lambda args: args.get(flag) is not None


def _true(flag: str, default: bool) -> Any:
    # a traced constant as a rule; anything else (a value only the call knows) counts as a write
    return lambda args: args.get(flag, default) is not False


_BN = ["input", "weight", "bias", "running_mean", "running_var"]  # torch.batch_norm's own order
_STATS = ("running_mean", "running_var")
# target -> (its leading parameters, in order; the arguments written; when they are written).
# Eager writes these in place, though aten's schemas mark nothing: an embedding with `max_norm`
# renormalizes the weight's rows it looks up, a batch norm in training and an instance norm using
# the input's statistics update the running statistics they are given.
CONDITIONAL_WRITES: dict[Any, tuple[list[str], tuple[str, ...], Any]] = {
    F.embedding: (["input", "weight", "padding_idx", "max_norm"], ("weight",), _given("max_norm")),
    F.embedding_bag: (["input", "weight", "offsets", "max_norm"], ("weight",), _given("max_norm")),
    F.batch_norm: (["input", "running_mean", "running_var", "weight", "bias", "training"], _STATS,
                   _true("training", False)),
    F.instance_norm: (["input", "running_mean", "running_var", "weight", "bias", "use_input_stats"], _STATS,
                      _true("use_input_stats", True)),
    torch.batch_norm: ([*_BN, "training"], _STATS, _true("training", True)),
    torch.native_batch_norm: ([*_BN, "training"], _STATS, _true("training", True)),
    torch.instance_norm: ([*_BN, "use_input_stats"], _STATS, _true("use_input_stats", True)),
}


def conditional_writes(node: torch.fx.Node) -> list[Any]:
    """The arguments `node` writes because of the values of others (CONDITIONAL_WRITES)."""
    try:
        rule = CONDITIONAL_WRITES.get(node.target) if node.op == "call_function" else None
    except TypeError:  # an unhashable target
        return []
    if rule is None:
        return []
    params, written, when = rule
    args = dict(zip(params, node.args))
    args.update(node.kwargs)
    if not when(args):
        return []
    return [args[name] for name in written if args.get(name) is not None]


def mutates(node: torch.fx.Node) -> bool:
    """Whether running `node` may write to one of its tensor arguments."""
    if node.op not in ("call_function", "call_method"):
        return False
    if node.kwargs.get("out") is not None:
        return True
    op = op_of(node)
    return op.mutates is not None or _inplace_flag(node) or bool(conditional_writes(node))


def writes_an_input(graph: torch.fx.Graph) -> bool:
    """Whether running `graph` may write to memory its inputs own: a write to an input, or to a value
    that may be a view of one. Values of ops that surely allocate (`clone`, `x + 1`) are the graph's own."""
    return any(mutates(node) and any(_may_alias_input(t) for t in _written(node)) for node in graph.nodes)


def written_inputs(graph: torch.fx.Graph) -> list[int] | None:
    """The positions of the placeholders whose memory running `graph` may write (through views
    too), or None where a write may reach memory that is no input's (a parameter, a buffer)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    found: set[torch.fx.Node] = set()
    for node in graph.nodes:
        if not mutates(node):
            continue
        for value in _written(node):
            roots = _roots(value, set())
            if roots is None:
                return None
            found |= roots
    return [i for i, p in enumerate(placeholders) if p in found]


def writes_under_grad(graph: torch.fx.Graph, grad_enabled: bool) -> bool:
    """Whether some write in `graph` runs in grad mode (`grad_enabled` at its start, then as its
    `_set_grad_enabled` nodes say) to a tensor that requires grad (its traced value, after the
    write): autograd records it in the tensor's history, which copying old values back does not undo."""
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled and node.args:
            grad_enabled = node.args[0] is not False  # a value only the call knows: grad mode, maybe
        elif grad_enabled and mutates(node) and any(_requires_grad(v) for v in [node, *_written(node)]):
            return True
    return False


def _requires_grad(value: Any) -> bool:
    example = value.meta.get("example_value") if isinstance(value, torch.fx.Node) else value
    examples = example if isinstance(example, (list, tuple)) else [example]
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in examples)


def _roots(value: Any, seen: set[torch.fx.Node]) -> set[torch.fx.Node] | None:
    """The placeholders `value` may be a view of; None if it may view a get_attr."""
    if not isinstance(value, torch.fx.Node) or value in seen:
        return set()
    seen.add(value)
    if value.op == "placeholder":
        return {value}
    if value.op == "get_attr":
        return None
    if value.op in ("call_function", "call_method") and op_of(value).allocates:
        return set()
    out: set[torch.fx.Node] = set()
    for arg in value.all_input_nodes:
        roots = _roots(arg, seen)
        if roots is None:
            return None
        out |= roots
    return out


def draws_random(node: torch.fx.Node) -> bool:
    """Whether running `node` advances a random generator: an aten op tagged `nondeterministic_seeded`
    under the node's name (`dropout`, `randn_like`, `bernoulli_`, ...), save a dropout in eval and an
    attention whose `dropout_p` is 0 (both traced constants)."""
    if node.op not in ("call_function", "call_method"):
        return False
    op = op_of(node)
    if op.name == "scaled_dot_product_attention":
        p = node.kwargs["dropout_p"] if "dropout_p" in node.kwargs else node.args[4] if len(node.args) > 4 else 0.0
        return not (type(p) in (int, float) and p == 0)
    return op.draws_random and not (op.name in DROPOUTS and _training_flag(node) is False)


# the dropouts whose third parameter (`training`, `train` for torch.dropout) turns them into the identity
DROPOUTS = frozenset({"dropout", "alpha_dropout", "feature_alpha_dropout"})


def _training_flag(node: torch.fx.Node) -> Any:
    """A dropout node's `training` argument as traced (a guarded constant: `self.training`)."""
    for name in ("training", "train"):
        if name in node.kwargs:
            return node.kwargs[name]
    return node.args[2] if len(node.args) > 2 else True


def _written(node: torch.fx.Node) -> list[Any]:
    out = node.kwargs.get("out")
    if out is not None:
        return list(out) if isinstance(out, (list, tuple)) else [out]
    if op_of(node).mutates is None and (conditional := conditional_writes(node)):
        return conditional
    index = op_of(node).mutates or 0
    if len(node.args) > index:
        return [node.args[index]]
    return [node.kwargs.get("input", node.kwargs.get("self"))]


def _may_alias_input(value: Any, seen: set[torch.fx.Node] | None = None) -> bool:
    if not isinstance(value, torch.fx.Node):
        return value is not None and not isinstance(value, (int, float, bool, str))
    seen = set() if seen is None else seen
    if value in seen:
        return False
    seen.add(value)
    if value.op in ("call_function", "call_method") and op_of(value).allocates:
        return False
    if value.op in ("placeholder", "get_attr"):
        return True
    return any(_may_alias_input(arg, seen) for arg in value.all_input_nodes)


def _inplace_flag(node: torch.fx.Node) -> bool:
    """`F.relu(x, True)`, `F.dropout(x, 0.5, True, True)`: an `inplace` parameter, however passed."""
    if node.op != "call_function" or node.kwargs.get("inplace"):
        return bool(node.kwargs.get("inplace"))
    try:
        signature = _signature(node.target)  # a callable: call_function
    except TypeError:  # an unhashable callable
        signature = _signature.__wrapped__(node.target)
    if signature is None or "inplace" not in signature.parameters:
        return False
    try:
        bound = signature.bind(*node.args, **node.kwargs)
    except TypeError:  # arguments it cannot bind
        return False
    return bool(bound.arguments.get("inplace"))


@functools.lru_cache(maxsize=4096)
def _signature(target: Any) -> inspect.Signature | None:
    """A target's signature, once (inspect builds it anew each call: slow for graphs of thousands
    of nodes); None for builtins without one."""
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def written_args(node: torch.fx.Node) -> list[Any]:
    """The arguments a node that `mutates` writes (its `out=`, the argument its row writes, or
    those CONDITIONAL_WRITES names)."""
    return _written(node)


def inplace_flag(node: torch.fx.Node) -> bool:
    """Whether the node passes `inplace=True` (however passed)."""
    return _inplace_flag(node)
