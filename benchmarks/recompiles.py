"""Compile counts and first-call times on shape-varying workloads: pdyn next to torch.compile with
dynamic=None, False and True, all measured in this one run.

Both frontends use an eager backend (pdyn's "eager", torch.compile's backend="eager"), so the table
compares what the frontends decide (how often they trace and compile), not kernel speed. Each
workload is called once per size in its list; each cell counts the graphs handed to the backend
(for pdyn, with its graph breaks and frames that ran eagerly), and the first call's time.

    python benchmarks/recompiles.py [--pdyn-only]
"""

from __future__ import annotations

import io
import math
import os
import sys
import time
from typing import Any, Callable

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's pdyn
import pdyn  # noqa: E402


def mlp(x, w1, w2):
    return F.gelu(x @ w1) @ w2


def flatten_rows(x):
    return x.view(x.size(0), -1) * 2


def branch_on_width(x):
    return x.sum(1) if x.size(1) > 8 else x.mean(1)


def loop_over_rows(x):
    out = x[0]
    for i in range(1, x.size(0)):
        out = out + x[i]
    return out


def int_in_tensor_math(x, n):
    return x * n + torch.arange(n).sum()


def int_in_range(x, n):
    for _ in range(n):
        x = x * 0.5
    return x


def like_size(x):
    return torch.ones(x.size()) + x


def concat(a, b):
    return torch.cat([a, b], dim=0).relu()


def conv(img, w):
    return F.max_pool2d(F.conv2d(img, w, padding=1).relu(), 2)


def attention(q, k, v):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
    return F.softmax(scores, dim=-1) @ v


def masked_mean(x, lengths_mask):
    return x.masked_fill(lengths_mask.unsqueeze(-1), 0.0).sum(1) / x.size(1)


def norm_linear(x, w):
    return F.linear(F.layer_norm(x, (x.size(-1),)), w)


# -- graph breaks: values that cross a break (a print to a buffer: both frontends break on it) -------

SINK = io.StringIO()


def size_crosses_break(x):
    new = x.size()[:-1] + (4, 8)
    print("break", file=SINK)
    return x.view(*new)


def range_after_break(x):
    y = x * 2
    print("break", file=SINK)
    for _ in range(x.size(0)):
        y = y + 1
    return y


def int_crosses_break(x):
    n = x.size(0) * 2
    print("break", file=SINK)
    return x.new_zeros(n) + n


def iterator_crosses_break(x, y):
    it = iter((x, y))
    a = next(it)
    print("break", file=SINK)
    return a + next(it)


def _breaking_callee(x, scale):
    x = x.sin()
    print("break", file=SINK)
    return x * scale


def break_in_kwargs_callee(x):
    return _breaking_callee(*(x,), **{"scale": 2.0}).relu()


def sizes_in_list_cross_break(x, y):
    shapes = [x.shape, y.shape]
    print("break", file=SINK)
    return x.reshape(shapes[1]).t() + y.reshape(shapes[0])


# -- 0/1 sizes: batch 1, lists of lengths with 0 and 1, chunked attention over sequence lengths -------

def kjt_pool(values, lengths):
    """KeyedJaggedTensor-style pooling: each feature's piece of `values`, 0, 1 or more rows."""
    pieces = values.split(lengths.tolist())
    return torch.stack([p.sum(0) for p in pieces])


def split_sizes(values, sizes):
    """A list[int] of split sizes, elements 0, 1 or more."""
    return torch.cat([p * 2 for p in values.split(sizes)])


WINDOW = 4


def chunked_attention(x):
    """Longformer's padding to a multiple of the window and `_chunk` (overlapping chunks by as_strided)."""
    b, seq, h = x.shape
    pad = (2 * WINDOW - seq % (2 * WINDOW)) % (2 * WINDOW)
    x = F.pad(x, (0, 0, 0, pad))
    x = x.view(b, x.size(1) // (2 * WINDOW), 2 * WINDOW, h)
    size, stride = list(x.size()), list(x.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    chunks = x.as_strided(size=size, stride=stride)
    return chunks.sum(-1) * (x.size(1) // WINDOW - 1)


def _lengths(n: int) -> list[int]:
    return [(n * 7 + i * 3) % 4 for i in range(5)]   # 0, 1, 2 and 3 among them


W1, W2, WC, WL = torch.randn(16, 32), torch.randn(32, 8), torch.randn(4, 3, 3, 3), torch.randn(16, 16)
SIZES = [3, 5, 8, 13, 21, 34]
BATCHES = [2, 1, 3, 5, 1, 7]
ONE_FIRST = [1, 2, 3, 5, 1, 7]


def squeeze_rows(x):
    return x.squeeze(0) * 2


def batched_attention(q, k, v):
    return attention(q, k, v).transpose(1, 2).reshape(q.size(0), q.size(2), -1)
# (name, function, arguments for one size, ideal compiles, sizes if not SIZES). The ideal: the fewest
# graphs a frontend needs that specializes only where the program's result differs (no 0/1
# specialization): one per branch Python takes, per trip count of a loop it unrolls, and per piece
# of code with tensor work between graph breaks.
WORKLOADS: list[tuple[Any, ...]] = [
    ("mlp over batch sizes", mlp, lambda n: (torch.randn(n, 16), W1, W2), 1),
    ("view(x.size(0), -1)", flatten_rows, lambda n: (torch.randn(n, 4, 3),), 1),
    ("if x.size(1) > 8", branch_on_width, lambda n: (torch.randn(2, n),), 2),
    ("range(x.size(0))", loop_over_rows, lambda n: (torch.randn(n, 4),), 6),
    ("int arg in tensor math", int_in_tensor_math, lambda n: (torch.randn(4), n), 1),
    ("int arg in range()", int_in_range, lambda n: (torch.randn(4), n), 6),
    ("torch.ones(x.size())", like_size, lambda n: (torch.randn(n, 3),), 1),
    ("cat of two lengths", concat, lambda n: (torch.randn(n, 4), torch.randn(n + 1, 4)), 1),
    ("conv2d over image sizes", conv, lambda n: (torch.randn(1, 3, n + 4, n + 4), WC), 1),
    ("attention over seq lens", attention, lambda n: tuple(torch.randn(2, n, 8) for _ in range(3)), 1),
    ("masked mean over seq lens", masked_mean, lambda n: (torch.randn(2, n, 8), torch.rand(2, n) > 0.5), 1),
    ("layer_norm + linear", norm_linear, lambda n: (torch.randn(n, 16), WL), 1),
    ("torch.Size crosses a break", size_crosses_break, lambda n: (torch.randn(2, n, 32),), 1),
    ("range(x.size(0)) after a break", range_after_break, lambda n: (torch.randn(n, 3),), 7),
    ("int crosses a break", int_crosses_break, lambda n: (torch.randn(n, 3),), 1),
    ("iterator crosses a break", iterator_crosses_break, lambda n: (torch.randn(n), torch.randn(n)), 1),
    ("break in a **kwargs callee", break_in_kwargs_callee, lambda n: (torch.randn(n),), 3),
    ("list of sizes crosses a break", sizes_in_list_cross_break, lambda n: (torch.randn(n, 3), torch.randn(3, n)), 1),
    ("mlp over batch 2, 1, 3, 5, 1, 7", mlp, lambda n: (torch.randn(n, 16), W1, W2), 1, BATCHES),
    ("mlp over batch 1, 2, 3, 5, 1, 7", mlp, lambda n: (torch.randn(n, 16), W1, W2), 1, ONE_FIRST),
    ("attention over batch 1, 2, 3, 5, 1, 7", batched_attention,
     lambda n: tuple(torch.randn(n, 2, 9, 8) for _ in range(3)), 1, ONE_FIRST),
    ("squeeze(0) over batch 1, 2, 3, 5, 1, 7", squeeze_rows, lambda n: (torch.randn(n, 4),), 2, ONE_FIRST),
    ("torch.Size crosses a break, 1 first", size_crosses_break, lambda n: (torch.randn(2, n, 32),), 1, ONE_FIRST),
    ("list of sizes crosses a break, 1 first", sizes_in_list_cross_break,
     lambda n: (torch.randn(n, 3), torch.randn(3, n)), 1, ONE_FIRST),
    ("KJT lengths.tolist() with 0 and 1", kjt_pool, lambda n: (torch.randn(sum(_lengths(n)), 4),
                                                             torch.tensor(_lengths(n))), 1),
    ("split sizes with 0 and 1", split_sizes, lambda n: (torch.randn(sum(_lengths(n)), 4), _lengths(n)), 1),
    ("chunked attention over seq lens", chunked_attention, lambda n: (torch.randn(2, n, 8),), 1),
]


class Counting:
    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        self.graphs += 1
        return gm.forward


def run(make_compiled: Callable[[Callable[..., Any], Counting], Callable[..., Any]], fn: Callable[..., Any],
        make_args: Callable[[int], tuple], sizes: list[int] = SIZES) -> tuple[int, float, float]:
    """(compiles, first-call ms, ms for all calls) of one frontend on one workload."""
    counter = Counting()
    compiled = make_compiled(fn, counter)
    start = time.perf_counter()
    first = 0.0
    for i, n in enumerate(sizes):
        compiled(*make_args(n))
        if i == 0:
            first = time.perf_counter() - start
    total = time.perf_counter() - start
    return counter.graphs, first * 1e3, total * 1e3


def torch_frontend(dynamic: bool | None) -> Callable[[Callable[..., Any], Counting], Callable[..., Any]]:
    def make(fn: Callable[..., Any], counter: Counting) -> Callable[..., Any]:
        torch._dynamo.reset()
        return torch.compile(fn, backend=counter, dynamic=dynamic)

    return make


def warm_up() -> None:
    """One-time start-up costs (imports, fake-tensor mode, dynamo's first trace) out of the table."""
    pdyn.optimize(lambda x: x + 1)(torch.ones(2))
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
    pdyn.reset()
    torch._dynamo.reset()


def pdyn_row(fn: Callable[..., Any], make_args: Callable[[int], tuple], sizes: list[int]) -> tuple[int, str]:
    """(graphs compiled, the table cell) of pdyn on one workload."""
    pdyn.reset()
    counter = Counting()
    optimized = pdyn.optimize(fn, backend=counter)
    start = time.perf_counter()
    first = 0.0
    for i, n in enumerate(sizes):
        optimized(*make_args(n))
        if i == 0:
            first = (time.perf_counter() - start) * 1e3
    stats = pdyn.stats()  # the function and the resume functions of its graph breaks
    extra = "".join(f", {stats[k]} {label}" for k, label in (("graph_breaks", "break"),
                                                              ("eager_fallbacks", "eager")) if stats[k])
    return counter.graphs, f"{counter.graphs}{extra} ({first:.1f} ms)"


def main() -> None:
    """`--pdyn-only`: the ideal and pdyn columns alone (no torch.compile runs)."""
    only_pdyn = "--pdyn-only" in sys.argv
    torch.manual_seed(0)
    warm_up()
    print(f"torch {torch.__version__}; each workload called with sizes {SIZES} unless it names its own")
    print("graphs compiled (first-call ms) for each frontend; pdyn also lists graph breaks\n")
    frontends = [] if only_pdyn else [None, False, True]
    names = ["torch.compile dynamic=None", "dynamic=False", "dynamic=True"][:len(frontends)]
    print("| workload | ideal | pdyn | " + " | ".join(names) + (" |" if names else ""))
    print("|" + " --- |" * (3 + len(frontends)))
    totals = [0] * (2 + len(frontends))
    for name, fn, make_args, ideal, *own in WORKLOADS:
        sizes = own[0] if own else SIZES
        graphs, cell = pdyn_row(fn, make_args, sizes)
        cells = [str(ideal), cell]
        totals[0] += ideal
        totals[1] += graphs
        for j, dynamic in enumerate(frontends):
            compiles, first_ms, _ = run(torch_frontend(dynamic), fn, make_args, sizes)
            cells.append(f"{compiles} ({first_ms:.1f} ms)")
            totals[j + 2] += compiles
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| **total compiles** | " + " | ".join(f"**{t}**" for t in totals) + " |")


if __name__ == "__main__":
    main()
