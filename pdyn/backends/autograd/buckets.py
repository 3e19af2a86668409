"""A training graph compiled inside DistributedDataParallel's forward, cut where DDP's gradient
buckets end, so that all-reduce overlaps the backward.

DDP all-reduces a bucket once autograd has accumulated the gradient of each of its parameters.
One autograd Function per graph returns every gradient at the end of its backward, so nothing
would overlap. Here the graph is cut into pieces whose parameters fill about one bucket each,
walking back from the output as DDP fills its buckets (the last layers' parameters first); each
piece is compiled on its own, its own Function, so the last piece's gradients are accumulated
(and their bucket's all-reduce launched) while the earlier pieces' backwards still run.
torch.compile does the same (its DDPOptimizer).

Every piece takes the graph's size symbols as leading int inputs (as a backward graph does), then
the graph inputs and earlier pieces' values it reads. A value crossing a cut is passed laid out
contiguously; size arithmetic and constants are recomputed in each piece that reads them.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

from pdyn.backends.autograd.joint import needs_grad, stamp_items
from pdyn.backends.report import COUNT_LATER, REPORT, BackendReport, report_of
from pdyn.shapes.graph_meta import EXPR, SIZE_NODE, SIZES, STRIDES, SYMBOLS, UNBACKED, GraphSymbols, \
    SymbolBinding, contiguous_strides
from pdyn.sources import LocalSource

log = logging.getLogger("pdyn.lowering")

PIECE = "pdyn_bucket_piece"  # gm.meta: a piece of a cut graph (never cut again)
Lower = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


def active_ddp() -> Any | None:
    """The DistributedDataParallel whose forward is running on this thread, if any."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:  # pragma: no cover  # a torch built without distributed
        return None
    get = getattr(DistributedDataParallel, "_get_active_ddp_module", None)
    return get() if get is not None else None


def bucket_caps(ddp: Any) -> tuple[int, int]:
    """(first bucket's bytes, every later bucket's bytes) as DDP fills them."""
    cap = int(ddp.bucket_bytes_cap)
    first = getattr(torch.distributed, "_DEFAULT_FIRST_BUCKET_BYTES", cap)
    return (min(first, cap) if getattr(ddp, "bucket_bytes_cap_default", True) else cap), cap


@dataclass
class Piece:
    """One compiled piece: it reads `reads` (("arg", i): the graph's i-th input; ("value", node):
    a value an earlier piece returned) after the size symbols, and returns `writes` in order."""

    gm: torch.fx.GraphModule
    reads: list[tuple[str, Any]]
    writes: list[torch.fx.Node]
    call: Callable[..., Any] | None = None
    extra: list[torch.fx.Node] = field(default_factory=list)  # recomputed here (size arithmetic, constants)
    nodes: list[torch.fx.Node] = field(default_factory=list)  # the graph's nodes this piece runs


def assign(gm: torch.fx.GraphModule, example_inputs: list[Any], first: int, cap: int) -> list[list[torch.fx.Node]]:
    """The graph's op nodes in pieces (forward order): walking back from the output, a piece is
    closed once its parameters' bytes reach the bucket size. A parameter counts in the piece of
    its first reader: its gradient is complete once that piece's backward ran (a tied embedding
    read again by the head is ready only then)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    params = {n: v.numel() * v.element_size() for n, v in zip(placeholders, example_inputs)
              if isinstance(v, torch.nn.Parameter) and v.requires_grad}
    first_reader: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        for arg in node.all_input_nodes:
            if arg in params:
                first_reader.setdefault(arg, node)
    pieces: list[list[torch.fx.Node]] = [[]]
    filled = [0]
    for node in reversed(list(gm.graph.nodes)):
        if node.op in ("placeholder", "output", "get_attr") or _follows_producer(node):
            continue
        if filled[0] >= (first if len(pieces) == 1 else cap):
            pieces.insert(0, [])
            filled.insert(0, 0)
        pieces[0].append(node)
        filled[0] += sum(params[p] for p in node.all_input_nodes if p in params and first_reader[p] is node)
    if len(pieces) > 1 and filled[0] == 0:  # a preamble without parameters joins the next piece
        pieces[1].extend(pieces.pop(0))
    where = {n: k for k, nodes in enumerate(pieces) for n in nodes}
    for node in gm.graph.nodes:  # an item of a tuple result stays with its producer
        if _follows_producer(node):
            where[node] = where.get(node.args[0], 0)
    order = {n: k for k, n in enumerate(gm.graph.nodes)}
    return [sorted((n for n, k in where.items() if k == i), key=order.__getitem__) for i in range(len(pieces))]


def _follows_producer(node: torch.fx.Node) -> bool:
    """An item of a tuple or list result (not a tensor's indexing, also `operator.getitem`)."""
    return node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) \
        and isinstance(node.args[0].meta.get("example_value"), (tuple, list))


def _recomputed(node: torch.fx.Node) -> bool:
    """Cheap values each piece makes for itself: constants and size arithmetic."""
    return node.op == "get_attr" or (node.op != "placeholder" and bool(node.meta.get(SIZE_NODE)))


def build_pieces(gm: torch.fx.GraphModule, groups: list[list[torch.fx.Node]]) -> list[Piece]:
    symbols: GraphSymbols = gm.meta[SYMBOLS]
    order = list(symbols.bindings)
    output = gm.graph.find_nodes(op="output")[0]
    pieces = []
    for k, nodes in enumerate(groups):
        inside = set(nodes)
        reads: list[tuple[str, Any]] = []
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        arg_index = {n: i for i, n in enumerate(placeholders)}
        extra: list[torch.fx.Node] = []  # recomputed nodes, in graph order

        seen: set[torch.fx.Node] = set()

        def need(value: torch.fx.Node) -> None:
            if value in inside or value in seen:
                return
            seen.add(value)
            if _recomputed(value):
                for arg in value.all_input_nodes:
                    need(arg)
                extra.append(value)
            else:
                reads.append(("arg", arg_index[value]) if value in arg_index else ("value", value))

        for node in nodes:
            for arg in node.all_input_nodes:
                need(arg)
        pieces.append(Piece(None, reads, [], extra=extra, nodes=nodes))  # type: ignore[arg-type]
    returned = set(output.all_input_nodes)
    if any(isinstance(r, (tuple, list, dict)) for r in output.args[0]):
        raise _Uncuttable("a nested output")
    made: set[torch.fx.Node] = set()
    for k, piece in enumerate(pieces):
        if any(kind == "value" and v not in made for kind, v in piece.reads):
            raise _Uncuttable(f"piece {k} reads a value no earlier piece makes")
        made.update(piece.nodes)
        read_later = {v for later in pieces[k + 1:] for kind, v in later.reads if kind == "value"}
        piece.writes = [n for n in piece.nodes if n in returned or n in read_later]
    if any(n not in made and n.op != "placeholder" for n in returned):
        raise _Uncuttable("an output no piece makes")
    for piece in pieces:
        piece.gm = _piece_module(gm, symbols, order, piece.reads, placeholders, piece.extra, piece.nodes, piece.writes)
    return pieces


def _piece_module(gm: torch.fx.GraphModule, symbols: GraphSymbols, order: list[Any], reads: list[tuple[str, Any]],
                  placeholders: list[torch.fx.Node], extra: list[torch.fx.Node], nodes: list[torch.fx.Node],
                  writes: list[torch.fx.Node]) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    sources = []
    for sym in order:
        p = graph.placeholder(f"sym_{sym.name}")
        p.meta.update({EXPR: sym, "example_value": symbols.hints[sym]})
        sources.append(LocalSource(p.name))
    for kind, what in reads:
        original = placeholders[what] if kind == "arg" else what
        p = graph.placeholder(original.name)
        if kind == "arg":
            p.meta.update(original.meta)
            sources.append(symbols.sources[what])
        else:
            sizes = original.meta.get(SIZES)
            if not isinstance(original.meta.get("example_value"), torch.Tensor) or sizes is None:
                raise _Uncuttable(f"{original.name} crosses a cut and is not a tensor with sizes")
            p.meta.update({"example_value": original.meta["example_value"], SIZES: sizes,
                           STRIDES: contiguous_strides(tuple(sizes))})
            sources.append(LocalSource(p.name))
        env[original] = p
    order_of = {n: i for i, n in enumerate(gm.graph.nodes)}
    for node in sorted([*extra, *nodes], key=order_of.__getitem__):
        env[node] = graph.node_copy(node, lambda x: env[x])
    graph.output(tuple(env[n] for n in writes))
    piece = torch.fx.GraphModule(gm, graph, class_name="PdynBucketPiece")
    piece.meta.update({k: v for k, v in gm.meta.items() if k not in (REPORT,)})
    bindings = {s: SymbolBinding(i, None, sources[i]) for i, s in enumerate(order)}
    piece.meta[SYMBOLS] = GraphSymbols(bindings, dict(symbols.hints), list(symbols.facts), sources)
    piece.meta[PIECE] = True
    return piece


class _Uncuttable(Exception):
    pass


def cut_for_ddp(gm: torch.fx.GraphModule, example_inputs: list[Any], lower: Lower) -> Callable[..., Any] | None:
    """The graph as pieces at DDP's bucket boundaries, each compiled by `lower`, behind one
    callable; None where no DDP forward runs, the graph fills one bucket, or it cannot be cut."""
    ddp = active_ddp()
    if ddp is None or gm.meta.get(PIECE) or any(UNBACKED in n.meta for n in gm.graph.nodes):
        return None
    stamp_items(gm.graph)  # NOTE: items of tuple results get examples and sizes: they may cross a cut
    groups = assign(gm, example_inputs, *bucket_caps(ddp))
    if len(groups) < 2:
        return None
    try:
        pieces = build_pieces(gm, groups)
    except _Uncuttable as e:
        log.info("pdyn autograd: the graph is not cut at DDP's buckets: %s", e)
        return None
    needs = needs_grad(gm.graph, example_inputs)
    symbols: GraphSymbols = gm.meta[SYMBOLS]
    hints = [symbols.hints[s] for s in symbols.bindings]
    for piece in pieces:
        examples = [*hints, *(example_inputs[i] if kind == "arg" else _example(v, v in needs)
                              for kind, i in piece.reads for v in [i])]
        piece.call = lower(piece.gm, examples)
    return _runner(gm, pieces)


def _example(node: torch.fx.Node, grad: bool) -> Any:
    value = node.meta["example_value"]
    return value.detach().requires_grad_(grad) if grad else value.detach()


def _runner(gm: torch.fx.GraphModule, pieces: list[Piece]) -> Callable[..., Any]:
    symbols: GraphSymbols = gm.meta[SYMBOLS]
    bindings = list(symbols.bindings.values())
    results = gm.graph.find_nodes(op="output")[0].args[0]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    arg_index = {n: i for i, n in enumerate(placeholders)}

    def call(*args: Any) -> Any:
        sizes = [int(args[b.placeholder]) if b.dim is None else args[b.placeholder].shape[b.dim] for b in bindings]
        values: dict[torch.fx.Node, Any] = {}
        for piece in pieces:
            inputs = [args[i] if kind == "arg" else _dense(values[i]) for kind, i in piece.reads]
            outs = piece.call(*sizes, *inputs)  # type: ignore[misc]
            del inputs
            values.update(zip(piece.writes, outs))
        return tuple(_result(r, args, values, arg_index) for r in results)

    def merge() -> None:
        gm.meta[REPORT] = _merged([r for r in (report_of(p.gm) for p in pieces) if r is not None])

    def count_later(report: BackendReport | None) -> None:  # a piece's backward, compiled at its first backward
        merge()
        count = gm.meta.get(COUNT_LATER)
        if count is not None:
            count(report)

    for piece in pieces:
        piece.gm.meta[COUNT_LATER] = count_later
    merge()
    call.assumptions = [a for p in pieces for a in getattr(p.call, "assumptions", [])]  # type: ignore[attr-defined]
    triton = [getattr(p.call, "pdyn_triton", None) for p in pieces]
    call.pdyn_triton = next((t for t in triton if t is not None), None)  # type: ignore[attr-defined]
    call.pdyn_pieces = pieces  # type: ignore[attr-defined]
    log.info("pdyn autograd: graph cut at DDP's buckets into %d pieces", len(pieces))
    return call


def _result(r: Any, args: tuple[Any, ...], values: dict[torch.fx.Node, Any], arg_index: dict[torch.fx.Node, int]) -> Any:
    if not isinstance(r, torch.fx.Node):
        return r
    return args[arg_index[r]] if r in arg_index else values[r]


def _dense(value: Any) -> Any:
    return value.contiguous() if isinstance(value, torch.Tensor) and not value.is_contiguous() else value


def _merged(reports: list[BackendReport]) -> BackendReport | None:
    if not reports:
        return None
    on_torch = "; ".join(f"piece {i} of {len(reports)}: {r.on_torch}" for i, r in enumerate(reports)
                         if r.on_torch) or None
    if on_torch is not None:  # NOTE: counted as a graph on torch, though its other pieces run kernels
        return BackendReport(reports[0].backend, on_torch=on_torch)
    notes = [n for r in reports for n in r.notes]
    return BackendReport(reports[0].backend, sum(r.kernels for r in reports), None,
                         tuple(e for r in reports for e in r.externs), sum(r.lowered for r in reports), notes)
