"""Recompute torch.compile's graph and break counts for tests/e2e/dynamo_programs.py's programs.

    python -m tests.e2e.dynamo_programs_counts          # prints the TORCH_COUNTS table

Each program runs once under torch._dynamo.explain (torch.compile with backend="eager") after
torch._dynamo.reset(), on the arguments its make_args builds; see `torch_counts` for what counts as
a break. pdyn's numbers for the same call come from pdyn.stats().
"""

from __future__ import annotations

import copy
import io
import contextlib
from typing import Any, Callable

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from tests.e2e.dynamo_programs import PROGRAMS


def torch_counts(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[int, int] | None:
    """(graphs, graph breaks) of one torch.compile call of `fn(*args)`, through torch._dynamo.explain;
    None where torch.compile raises and eager does not. explain's break count misses a break before a
    frame's first op (no graph to end), which counters["graph_break"] holds; that counter misses a
    data-dependent jump: the larger of the two."""
    torch._dynamo.reset()
    counters.clear()
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            out = torch._dynamo.explain(fn)(*copy.deepcopy(args))
        except Exception:
            try:
                fn(*copy.deepcopy(args))
            except Exception:   # the program raises, as eagerly: count what torch compiled before it
                return 0, sum(counters["graph_break"].values())
            return None
    return out.graph_count, max(out.graph_break_count, sum(counters["graph_break"].values()))


def main() -> None:
    torch.manual_seed(0)
    print("TORCH_COUNTS = {")
    for name, (fn, make_args) in PROGRAMS.items():
        print(f"    {name!r}: {torch_counts(fn, make_args())},")
    print("}")


if __name__ == "__main__":
    main()
