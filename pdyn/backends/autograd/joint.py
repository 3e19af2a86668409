"""The joint forward/backward of one captured graph, in pdyn's symbolic world.

`build_joint` copies the forward graph, marks the values a gradient flows to (from inputs that
require grad), rewrites training-mode dropouts to keep their masks, then walks the nodes in
reverse applying each op's derivative rule (rules*.py; torch's own backward of the op where a
row has none). The backward graph's inputs are the forward's size symbols, the output gradients
and the values the partitioner chose to save; the forward graph returns the user's outputs and
then the saved values. Both carry graph_meta stamps over the same symbols, so the Triton backend
compiles each once for every size.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import sympy
import torch
import torch.fx

from pdyn.backends.autograd import rules_linalg, rules_nn_ops, rules_pointwise, rules_views  # noqa: F401  # rules
from pdyn.backends.autograd.builder import BackwardBuilder, sizes_of
from pdyn.backends.autograd.partition import NotDifferentiable, Partitioner
from pdyn.backends.autograd.rules import RULES, bind, extern_rule
from pdyn.backends.autograd.rules_nn import rewrite_random
from pdyn.ops import op_of
from pdyn.shapes.graph_meta import SIZES, SYMBOLS, UNBACKED, GraphSymbols, SymbolBinding
from pdyn.sources import LocalSource

BOXED_CALL = "pdyn_boxed_call"  # gm.meta: compile `call(args)`, which empties the list (function.py)


@dataclass
class Joint:
    """The two graphs and how the autograd Function wires them: `saved[k]` is ("input", i) (the
    forward's i-th input) or ("output", j) (the forward graph's j-th extra output); the backward
    takes `symbols`' values, then the gradients of outputs `diff_outputs`, then the saved values,
    and returns the gradients of inputs `grad_inputs`."""

    forward: torch.fx.GraphModule
    backward: torch.fx.GraphModule
    n_outputs: int
    saved: list[tuple[str, int]]
    diff_outputs: list[int]
    grad_inputs: list[int]
    symbols: list[tuple[sympy.Symbol, SymbolBinding]]
    rebuild: Callable[[list[int]], "Variant"] | None = None  # see `Variant`


@dataclass
class Variant:
    """The backward of a call where only the outputs `diff` (a subset of `diff_outputs`) received
    a gradient (autograd passes None for an output the loss does not reach: the logits, a KV
    cache): no zeros of their sizes are made, no work flows from them. It reads the saved values
    at positions `saved` of the full list (the same partitioner decisions over fewer nodes: a
    subset) and returns the gradients of inputs `grad_inputs`."""

    backward: torch.fx.GraphModule
    diff: list[int]
    saved: list[int]
    grad_inputs: list[int]


def _is_float(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_is_float(v) for v in value)
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


def needs_grad(graph: torch.fx.Graph, example_inputs: list[Any]) -> set[torch.fx.Node]:
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    needs = {n for n, v in zip(placeholders, example_inputs)
             if isinstance(v, torch.Tensor) and v.requires_grad and _is_float(v)}
    for node in graph.nodes:
        if node.op in ("call_function", "call_method") and _is_float(node.meta.get("example_value")) \
                and any(a in needs for a in node.all_input_nodes) and _tracked(node.meta.get("example_value")):
            needs.add(node)
    return needs


def _tracked(value: Any) -> bool:
    """Whether eager's result requires grad, as the trace's fake run says (false for `detach`,
    `full_like`, `new_zeros`...: no gradient flows, and the output must not require grad)."""
    if isinstance(value, (tuple, list)):
        return any(_tracked(v) for v in value)
    return not isinstance(value, torch.Tensor) or value.requires_grad


def stamp_items(graph: torch.fx.Graph) -> None:
    """An item of a tuple result gets its example and sizes from its producer's stamps (the
    tracer stamps the producer only)."""
    for node in graph.nodes:
        if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) \
                and isinstance(node.args[1], int) and "example_value" not in node.meta:
            items = node.args[0].meta.get("example_value")
            sizes = node.args[0].meta.get(SIZES)
            if isinstance(items, (tuple, list)) and node.args[1] < len(items):
                node.meta["example_value"] = items[node.args[1]]
                if isinstance(sizes, (tuple, list)) and node.args[1] < len(sizes):
                    node.meta[SIZES] = sizes[node.args[1]]


def _fake_mode(graph: torch.fx.Graph) -> Any:
    for node in graph.nodes:
        mode = getattr(node.meta.get("example_value"), "fake_mode", None)
        if mode is not None:
            return mode
    raise NotDifferentiable("the graph has no fake tensors")


def build_joint(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Joint:
    symbols: GraphSymbols = gm.meta[SYMBOLS]
    graph = torch.fx.Graph()
    output = graph.output(graph.graph_copy(gm.graph, {}))
    if any(UNBACKED in n.meta for n in graph.nodes):
        raise NotDifferentiable("a data-dependent size")
    stamp_items(graph)
    needs = needs_grad(graph, example_inputs)
    fake_mode = _fake_mode(graph)
    rewrite_random(graph, needs, fake_mode)
    order = list(symbols.bindings.items())
    outputs = list(output.args[0])
    diff = [i for i, o in enumerate(outputs) if isinstance(o, torch.fx.Node) and o in needs
            and isinstance(o.meta.get("example_value"), torch.Tensor)]
    # NOTE: the backward variants are built later, from a copy (the backend may rewrite the forward)
    pristine, copied = torch.fx.Graph(), {}  # type: ignore[var-annotated]
    pristine.output(pristine.graph_copy(graph, copied))
    pristine_needs = {copied[n] for n in needs}

    def backward_of(present: list[int], graph: torch.fx.Graph = graph,
                    needs: set[torch.fx.Node] = needs) -> tuple[BackwardBuilder, torch.fx.GraphModule, list[int]]:
        outputs = list(graph.find_nodes(op="output")[0].args[0])
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        bx = BackwardBuilder(graph, {s: symbols.hints[s] for s, _ in order}, Partitioner(needs, fake_mode))
        for i in present:
            fake = outputs[i].meta["example_value"]
            bx.accumulate(outputs[i], bx.placeholder(f"grad_{i}", fake, sizes_of(outputs[i])))
        _walk(bx, graph)
        grad_inputs = [i for i, n in enumerate(placeholders) if bx.grads.get(n) is not None]
        bx.graph.output(tuple(bx.grads[placeholders[i]] for i in grad_inputs))
        bx.graph.eliminate_dead_code()
        backward = torch.fx.GraphModule(torch.nn.Module(), bx.graph, class_name="PdynBackward")
        backward.meta[SYMBOLS] = _backward_symbols(bx, symbols, order)
        backward.meta[BOXED_CALL] = True
        return bx, backward, grad_inputs

    bx, backward, grad_inputs = backward_of(diff)
    saved, extra = _saved(bx, [n for n in graph.nodes if n.op == "placeholder"])
    output.args = (tuple(outputs) + tuple(extra),)
    forward = torch.fx.GraphModule(gm, graph, class_name="PdynForward")
    forward.meta.update(gm.meta)
    where = {node.name: k for k, node in enumerate(bx.saved)}  # the copy keeps the node names

    def rebuild(present: list[int]) -> Variant:
        sub, sub_backward, sub_inputs = backward_of(present, pristine, pristine_needs)
        if any(node.name not in where for node in sub.saved):
            raise NotDifferentiable("a backward variant reads a value the forward did not save")
        return Variant(sub_backward, present, [where[node.name] for node in sub.saved], sub_inputs)

    return Joint(forward, backward, len(outputs), saved, diff, grad_inputs, order, rebuild)


def _walk(bx: BackwardBuilder, graph: torch.fx.Graph) -> None:
    """Each node's rule, users before producers, with the node's summed gradient."""
    for node in reversed(list(graph.nodes)):
        if node.op not in ("call_function", "call_method") or node not in bx.grads:
            continue
        grad = bx.grads.pop(node)
        if isinstance(grad, dict):
            grad = [grad.get(i) for i in range(len(node.meta["example_value"]))]
            if all(g is None for g in grad):
                continue
        entry = RULES.get(op_of(node).name)
        if entry is None:
            extern_rule(bx, node, grad)
            continue
        params, defaults, rule = entry
        rule(bx, node, bind(node, params, defaults), grad)


def _saved(bx: BackwardBuilder, placeholders: list[torch.fx.Node]) -> tuple[list[tuple[str, int]], list[torch.fx.Node]]:
    index = {n: i for i, n in enumerate(placeholders)}
    saved: list[tuple[str, int]] = []
    extra: list[torch.fx.Node] = []
    for node in bx.saved:
        if node in index:
            saved.append(("input", index[node]))
        else:
            saved.append(("output", len(extra)))
            extra.append(node)
    return saved, extra


def _backward_symbols(bx: BackwardBuilder, symbols: GraphSymbols,
                      order: list[tuple[sympy.Symbol, SymbolBinding]]) -> GraphSymbols:
    """The forward's symbols, each read from its own int input of the backward."""
    placeholders = [n for n in bx.graph.nodes if n.op == "placeholder"]
    sources = [LocalSource(n.name) for n in placeholders]
    bindings = {s: SymbolBinding(i, None, sources[i]) for i, (s, _) in enumerate(order)}
    return GraphSymbols(bindings, dict(symbols.hints), list(symbols.facts), sources)
