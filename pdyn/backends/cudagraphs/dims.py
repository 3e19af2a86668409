"""Which size symbols of a captured graph may be padded: a symbol `s` qualifies when every value
the graph computes at index i of an `s`-sized dim depends only on inputs at index i of their
`s`-sized dims. Then running the graph on inputs padded along `s` and slicing its outputs back
gives exactly the unpadded results (the padded rows are computed and thrown away).

Read from the fx graph and pdyn's own stamps (node.meta["pdyn_sizes"], the size nodes'
"pdyn_expr"): a symbol is refused where it appears other than as a whole dim (a view merged it with
another dim), where an op runs along one of its dims (reduction, contraction, scan, sort, cat,
index), where its value is computed with (`x / x.shape[0]`), or where an op nobody classified here
touches it. Each refusal has a reason, for the log.

Per dim and per op: a view may merge `s` with the dims after it when `s` is outermost (the rows of
`x.view(-1, h)`: padding appends to the flat layout, so every row keeps its place); indexing by
`arange(s)` laid on the output's own `s` dim reads row i at row i; a cat, gather or index along
another dim leaves `s` alone. Symbols that had one value in the example call (a batch read from
`input_ids` and from `attention_mask`) may be padded as one group when the graph passes with them
read as one symbol; a call where they differ runs unpadded.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import sympy
import torch
import torch.fx

from pdyn.ops.catalogue import BINARY, CONVERSIONS, REDUCTIONS, UNARY
from pdyn.ops.effects import draws_random
from pdyn.ops.table import op_of
from pdyn.shapes.exprs import substitute
from pdyn.shapes.graph_meta import EXPR, SIZE_NODE, SIZES, SYMBOLS
from pdyn.shapes.shape_env import FloorDiv

# ops whose every output element reads only the same index of each (broadcast) operand
POINTWISE = frozenset(UNARY + BINARY + CONVERSIONS) | {"where", "alias", "masked_fill"} \
    | {n for n in dir(torch.Tensor) if n.startswith("__r") and n.endswith("__")}
# ops that reorder, add or drop dims of size 1 without mixing elements of different indices
REORDER = frozenset("""permute transpose swapaxes swapdims t movedim moveaxis squeeze unsqueeze expand
expand_as broadcast_to stack""".split())
VIEWS = frozenset("view reshape flatten unflatten view_as reshape_as".split())
ALONG_DIM = frozenset(REDUCTIONS + """softmax log_softmax cumsum cumprod logcumsumexp sort argsort topk
cummax cummin split split_with_sizes chunk unbind select narrow cat concat concatenate index_select""".split())
FACTORIES = frozenset("empty zeros ones full arange new_zeros new_ones new_empty new_full empty_like zeros_like "
                      "ones_like full_like".split())
CONTRACT_LAST = {"linear": (0,), "matmul": (0,), "mm": (0,), "bmm": (0,), "addmm": (1,), "baddbmm": (1,),
                 "mv": (0,)}
ALL_DIMS = object()


def has(expr: Any, s: sympy.Symbol) -> bool:
    return isinstance(expr, sympy.Basic) and s in expr.free_symbols


def tensor_sizes(node: Any) -> list[tuple[Any, ...]]:
    """The sizes of each tensor `node` stands for (one, or one per tuple item)."""
    if not isinstance(node, torch.fx.Node):
        return []
    sizes = node.meta.get(SIZES)
    if sizes is None and node.target is operator.getitem and isinstance(node.args[1], int):
        items = tensor_sizes(node.args[0])  # an item of a tuple result (split): its own sizes
        return [items[node.args[1]]] if len(items) > 1 and node.args[1] < len(items) else []
    if not isinstance(sizes, tuple):
        return []
    if sizes and all(isinstance(x, tuple) or x is None for x in sizes):
        return [x for x in sizes if x is not None]
    return [sizes]


def s_dims(node: Any, s: sympy.Symbol) -> list[int]:
    sizes = tensor_sizes(node)
    return [i for i, d in enumerate(sizes[0]) if d == s] if len(sizes) == 1 else []


def carry_dims(node: Any, s: sympy.Symbol) -> list[int]:
    """The dims whose index carries `s`'s: a dim of size `s`, or the outermost dim of a view that
    merged `s` with the dims after it (`x.view(-1, h)` of a (s, n, h) tensor: size s*n, every dim
    before it of size 1). Padding `s` appends to the flat layout there, so the unpadded elements
    keep their places: row i of the merged dim is row i padded or not."""
    sizes = tensor_sizes(node)
    if len(sizes) != 1:
        return []
    out = []
    for i, d in enumerate(sizes[0]):
        if d == s or (_merged(d, s) and all(e == 1 for e in sizes[0][:i])):
            out.append(i)
    return out


def _merged(d: Any, s: sympy.Symbol) -> bool:
    """`d` is s times a factor free of s."""
    if not isinstance(d, sympy.Mul) or not has(d, s):
        return False
    rest, part = d.as_independent(s, as_Add=False)
    return part == s


def _ndim(node: Any) -> int:
    sizes = tensor_sizes(node)
    return len(sizes[0]) if len(sizes) == 1 else 0


def _arg(node: torch.fx.Node, pos: int, name: str, default: Any = None) -> Any:
    if name in node.kwargs:
        return node.kwargs[name]
    return node.args[pos] if len(node.args) > pos else default


def _dims(value: Any, ndim: int) -> set[int] | object:
    if value is None:
        return ALL_DIMS
    if isinstance(value, int) and not isinstance(value, bool):
        return {value % max(ndim, 1)}
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value):
        return {v % max(ndim, 1) for v in value} if value else ALL_DIMS
    return ALL_DIMS


def _runs_along(node: torch.fx.Node, name: str, s: sympy.Symbol) -> str | None:
    """An op running along a `dim` argument: refused where that dim is one of `s`'s."""
    x = node.args[0] if node.args else None
    if name in ("cat", "concat", "concatenate"):
        x = x[0] if isinstance(x, (list, tuple)) and x else None
        dim = _arg(node, 1, "dim", 0)
    elif name in ("max", "min") and isinstance(_arg(node, 1, "other", _arg(node, 1, "dim")), torch.fx.Node):
        return None  # max(a, b): pointwise
    elif name == "norm":
        dim = _arg(node, 2, "dim")
    elif name in ("split", "split_with_sizes", "chunk"):
        dim = _arg(node, 2, "dim", 0)
    elif name in ("unbind", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"):
        dim = _arg(node, 1, "dim", 0)
    elif name in ("sort", "argsort"):
        dim = _arg(node, 1, "dim", -1)
    elif name == "topk":
        dim = _arg(node, 2, "dim", -1)
    elif name == "index_select":
        dim = _arg(node, 1, "dim")
    else:
        dim = _arg(node, 1, "dim", _arg(node, 1, "axis"))
        if isinstance(dim, bool):  # var(x, unbiased)
            dim = None
    dims = _dims(dim, _ndim(x))
    along = set(carry_dims(x, s))
    if dims is ALL_DIMS:
        return f"{name} runs over every dim" if along else None
    return f"{name} runs along a dim of size {s}" if along & dims else None  # type: ignore[operator]


def _view(node: torch.fx.Node, s: sympy.Symbol) -> str | None:
    """A view keeps each `s` dim whole: the elements before it number the same in and out."""
    before, after = tensor_sizes(node.args[0]), tensor_sizes(node)
    if len(before) != 1 or len(after) != 1:
        return f"{node.target} of an unknown shape"
    src, dst = before[0], after[0]
    out_dims = set(carry_dims(node, s))
    for i in carry_dims(node.args[0], s):
        lead = sympy.Mul(*src[:i])
        match = [j for j in out_dims if sympy.simplify(sympy.Mul(*dst[:j]) - lead) == 0]
        if not match:
            return f"a view moves a dim of size {s}"
        out_dims.discard(match[0])
    return f"a view makes a dim of size {s}" if out_dims else None


def _contraction(node: torch.fx.Node, name: str, s: sympy.Symbol) -> str | None:
    offset = CONTRACT_LAST[name][0]
    a, b = node.args[offset], node.args[offset + 1] if len(node.args) > offset + 1 else node.kwargs.get("weight")
    if _ndim(a) and (_ndim(a) - 1) in carry_dims(a, s):
        return f"{name} contracts a dim of size {s}"
    if name == "linear":
        return f"linear's weight has a dim of size {s}" if any(has(d, s) for z in tensor_sizes(b) for d in z) else None
    nb = _ndim(b)
    if nb and (nb - 2 if nb >= 2 else 0) in carry_dims(b, s):
        return f"{name} contracts a dim of size {s}"
    return None


def _attention(node: torch.fx.Node, s: sympy.Symbol) -> str | None:
    q, k, v = node.args[:3]
    mask = _arg(node, 3, "attn_mask")
    checks = [(q, -1), (k, -1), (k, -2), (v, -2), (mask, -1)]
    for t, d in checks:
        n = _ndim(t)
        if n and (n + d) in carry_dims(t, s):
            return f"attention contracts a dim of size {s}"
    return None


def _getitem(node: torch.fx.Node, s: sympy.Symbol) -> str | None:
    src, index = node.args[0], node.args[1]
    if len(tensor_sizes(src)) != 1 or not isinstance(src.meta.get("example_value"), torch.Tensor):
        return None  # an item of a tuple result
    entries = list(index) if isinstance(index, tuple) else [index]
    along = set(carry_dims(src, s))
    if entries and all(isinstance(e, torch.fx.Node) for e in entries):
        return _gather_by_tensors(entries, along, s)
    consumed = sum(1 for e in entries if e is not None and e is not Ellipsis)
    dim = 0
    for e in entries:
        if e is Ellipsis:
            dim += _ndim(src) - consumed
        elif e is None:
            continue
        elif isinstance(e, torch.fx.Node) or isinstance(e, (list, bool)):
            return f"indexing with a tensor or list where a dim of size {s} is"
        else:
            if dim in along and e != slice(None, None, None):
                return f"indexing along a dim of size {s}"
            dim += 1
    return None


def _gather_by_tensors(entries: list[torch.fx.Node], along: set[int], s: sympy.Symbol) -> str | None:
    """`src[i0, i1, ...]` with index tensors on its leading dims: each output element reads src at
    its indices. A dim of size `s` is indexed by `arange(s)` laid along the output's own `s` dim
    (row i reads row i, a padded row a padded row); any other dim by an index with no `s` dim (its
    values do not change with the padding)."""
    for dim, e in enumerate(entries):
        if dim in along:
            if not _identity_index(e, s):
                return f"indexing a dim of size {s} with other than arange({s})"
        elif carry_dims(e, s) or any(has(d, s) for z in tensor_sizes(e) for d in z):
            return f"an index with a dim of size {s} gathers along another dim"
    return None


def _identity_index(node: torch.fx.Node, s: sympy.Symbol) -> bool:
    """`arange(s)`, with unit dims added by `[:, None]` or unsqueeze: its value at i is i."""
    while node.op in ("call_function", "call_method"):
        name = op_of(node).name
        if name == "getitem":
            index = node.args[1] if isinstance(node.args[1], tuple) else (node.args[1],)
            if not all(e is None or e == slice(None, None, None) for e in index):
                return False
            node = node.args[0]
        elif name == "unsqueeze":
            node = node.args[0]
        elif name == "arange":
            end = node.args[0] if len(node.args) == 1 else None
            dtype = node.kwargs.get("dtype")
            return (set(node.kwargs) <= {"device", "dtype"} and dtype in (None, torch.int64, torch.int32)
                    and isinstance(end, torch.fx.Node) and end.meta.get(EXPR) == s)
        else:
            return False
        if not isinstance(node, torch.fx.Node):
            return False
    return False


def _norm(node: torch.fx.Node, name: str, s: sympy.Symbol) -> str | None:
    x = node.args[0]
    n, along = _ndim(x), set(carry_dims(x, s))
    if name in ("layer_norm", "rms_norm"):
        shape = _arg(node, 1, "normalized_shape")
        k = len(shape) if isinstance(shape, (tuple, list)) else 1
        return f"{name} normalizes a dim of size {s}" if along & set(range(n - k, n)) else None
    if name == "group_norm":
        return f"group_norm normalizes a dim of size {s}" if along - {0} else None
    if name == "batch_norm":
        training = _arg(node, 5, "training", False)
        return f"batch_norm in training or over {s}" if training or along & {1} else None
    return None


RULES: dict[str, Callable[[torch.fx.Node, str, sympy.Symbol], str | None]] = {}
for _n in ALONG_DIM:
    RULES[_n] = _runs_along
for _n in VIEWS:
    RULES[_n] = lambda node, name, s: _view(node, s)
for _n in CONTRACT_LAST:
    RULES[_n] = _contraction
for _n in ("layer_norm", "rms_norm", "group_norm", "batch_norm"):
    RULES[_n] = _norm
RULES["scaled_dot_product_attention"] = lambda node, name, s: _attention(node, s)
RULES["getitem"] = lambda node, name, s: _getitem(node, s)
RULES["embedding"] = lambda node, name, s: (f"embedding's table has a dim of size {s}"
                                            if carry_dims(node.args[1], s) else None)
RULES["torch.embedding"] = lambda node, name, s: (f"embedding's table has a dim of size {s}"
                                                  if carry_dims(node.args[0], s) else None)
RULES["pad"] = lambda node, name, s: (f"pad along a dim of size {s}" if set(carry_dims(node.args[0], s))
                                      & set(range(_ndim(node.args[0]) - len(node.args[1]) // 2, _ndim(node.args[0])))
                                      else None)
for _n in POINTWISE | REORDER | FACTORIES:
    RULES.setdefault(_n, lambda node, name, s: None)
SHAPE_ARGS = VIEWS | REORDER | FACTORIES  # ops that may take a size computed from `s` as a size


def _is_size_node(node: Any) -> bool:
    return isinstance(node, torch.fx.Node) and (bool(node.meta.get(SIZE_NODE)) or
                                                (node.op == "placeholder" and node.meta.get(EXPR) is not None))


def refusal(gm: torch.fx.GraphModule, s: sympy.Symbol) -> str | None:
    """Why `s` may not be padded in `gm`, or None when it may."""
    for node in gm.graph.nodes:
        carried = set(carry_dims(node, s))
        for sizes in tensor_sizes(node):
            mixed = [d for i, d in enumerate(sizes) if has(d, s) and not (d == s or i in carried)]
            if mixed:
                return f"{node.name} has a dim {mixed[0]} mixing {s} with others"
        ends = [node] if node.op == "placeholder" else node.all_input_nodes if node.op == "output" else []
        if any(set(carry_dims(n, s)) != set(s_dims(n, s)) for n in ends):
            return f"{node.name} has a dim merging {s} with others"  # pad.py pads whole dims
        if _is_size_node(node):
            if node.op == "placeholder" and node.meta[EXPR] != s and has(node.meta[EXPR], s):
                return f"input {node.name} = {node.meta[EXPR]}"
            if not has(node.meta.get(EXPR), s) and node.meta.get(EXPR) is not None:
                continue
            if node.meta.get(EXPR) is None and node.op != "placeholder" and not _reads(node, s):
                continue
            for user in node.users:
                if user.op == "output":
                    return f"the graph returns a size computed from {s}"
                if _is_size_node(user):
                    continue
                name = op_of(user).name if user.op in ("call_function", "call_method") else ""
                if name not in SHAPE_ARGS or (name in ("full", "new_full") and node is _arg(user, -1, "fill_value")):
                    return f"{user.name} ({name or user.op}) computes with {s}"
            continue
        if node.op not in ("call_function", "call_method"):
            continue
        if not _touches(node, s):
            continue
        name = op_of(node).name
        if draws_random(node):
            return f"{name} draws random numbers"
        if name == "runtime_assert":
            return f"a runtime assert reads {s}"
        if name in POINTWISE and (why := _broadcast(node, s)):
            return why
        rule = RULES.get(name)
        if rule is None:
            return f"{name} is not known to keep the indices of {s} apart"
        why = rule(node, name, s)
        if why:
            return why
    return None


def _broadcast(node: torch.fx.Node, s: sympy.Symbol) -> str | None:
    """A pointwise op pairs its operands' dims from the right: where one is `s`, each other must be
    `s` or 1, else padding `s` alone would pair a padded dim with an unpadded one (equal only by a
    guard, as `x * mask.view(b, -1)` pairs x's length with the mask's)."""
    out = tensor_sizes(node)
    if len(out) != 1:
        return None
    for arg in node.all_input_nodes:
        sizes = tensor_sizes(arg)
        if len(sizes) != 1 or _is_size_node(arg):
            continue
        for o, i in zip(reversed(out[0]), reversed(sizes[0])):
            if (has(o, s) or has(i, s)) and i != o and i != 1:
                return f"{node.name} pairs a dim of size {o} with one of size {i}"
    return None


def _reads(node: torch.fx.Node, s: sympy.Symbol) -> bool:
    """A size node without an int expression (a float size): whether `s` flows into it."""
    return any(_touches_value(a, s) for a in node.all_input_nodes)


def _touches_value(node: torch.fx.Node, s: sympy.Symbol) -> bool:
    if node.meta.get(EXPR) is not None:
        return has(node.meta[EXPR], s)
    if node.target == "size" or getattr(node.target, "__name__", "") == "size":  # x.size() or x.size(d)
        x, dims = node.args[0], _dims(_arg(node, 1, "dim"), _ndim(node.args[0]))
        along = set(carry_dims(x, s))
        return bool(along) if dims is ALL_DIMS else bool(along & dims)  # type: ignore[operator]
    return bool(node.meta.get(SIZE_NODE)) and _reads(node, s)


def _touches(node: torch.fx.Node, s: sympy.Symbol) -> bool:
    nodes = [node, *node.all_input_nodes]
    return any(has(d, s) for n in nodes for sizes in tensor_sizes(n) for d in sizes) \
        or any(_is_size_node(n) and _touches_value(n, s) for n in node.all_input_nodes)


def paddable(gm: torch.fx.GraphModule) -> dict[sympy.Symbol, str | None]:
    """Each size symbol read from a tensor input's dim, with None where it may be padded and the
    reason where it may not."""
    return analyse(gm)[0]


def analyse(gm: torch.fx.GraphModule) -> tuple[dict[sympy.Symbol, str | None], dict[sympy.Symbol, sympy.Symbol]]:
    """`paddable`'s verdicts, and the tied symbols: a symbol refused alone may still be padded
    together with the others that had its value in the example call (a batch read from two inputs,
    `input_ids` and `attention_mask`, that the trace never equated): the graph read as if they were
    one symbol passes. Each tied symbol maps to its group's first; a call where the group's values
    differ runs unpadded (pad.padded_sizes)."""
    symbols = gm.meta.get(SYMBOLS)
    if symbols is None:
        return {}, {}
    dims = [s for s, b in symbols.bindings.items() if b.dim is not None]
    verdicts: dict[sympy.Symbol, str | None] = {}
    ties: dict[sympy.Symbol, sympy.Symbol] = {}
    for s in dims:
        if s in verdicts:
            continue
        verdicts[s] = refusal(gm, s)
        others = [t for t in dims if t != s and t not in verdicts and symbols.hints.get(t) == symbols.hints.get(s)]
        if verdicts[s] is None or not others:
            continue
        with substituted(gm, {t: s for t in others}):
            why = refusal(gm, s)
        if why is None:
            verdicts[s] = None
            for t in others:
                verdicts[t], ties[t] = None, s
            ties[s] = s
    return verdicts, ties


class substituted:
    """The graph's size stamps with `subs` applied (and `a*b // a` cancelled) while inside."""

    def __init__(self, gm: torch.fx.GraphModule, subs: dict[sympy.Symbol, sympy.Symbol]) -> None:
        self.gm, self.subs = gm, subs
        self.saved: list[tuple[torch.fx.Node, str, Any]] = []

    def __enter__(self) -> None:
        for node in self.gm.graph.nodes:
            for key in (SIZES, EXPR):
                if key in node.meta:
                    self.saved.append((node, key, node.meta[key]))
                    node.meta[key] = _subs(node.meta[key], self.subs)

    def __exit__(self, *exc: Any) -> None:
        for node, key, value in self.saved:
            node.meta[key] = value


def _subs(value: Any, subs: dict[sympy.Symbol, sympy.Symbol]) -> Any:
    if isinstance(value, tuple):
        return tuple(_subs(v, subs) for v in value)
    if isinstance(value, list):
        return [_subs(v, subs) for v in value]
    if isinstance(value, sympy.Basic):
        return substitute(value, subs).replace(lambda e: isinstance(e, FloorDiv), _cancel)
    return value


def _cancel(e: Any) -> Any:
    q = sympy.cancel(e.args[0] / e.args[1])
    return q if q.as_numer_denom()[1] == 1 else e
