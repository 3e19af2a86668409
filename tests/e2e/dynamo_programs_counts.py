"""Recompute torch.compile's graph and break counts for tests/e2e/dynamo_programs.py's programs.

    python -m tests.e2e.dynamo_programs_counts          # prints the TORCH_COUNTS table
    python -m tests.e2e.dynamo_programs_counts --pdyn   # pdyn's breaks beside the table's, and totals

Each program runs once under torch._dynamo.explain (torch.compile with backend="eager") after
torch._dynamo.reset(), on the arguments its make_args builds; see `torch_counts` for what counts as
a break. pdyn's numbers for the same call come from pdyn.stats().
"""

from __future__ import annotations

import copy
import io
import contextlib
import sys
import warnings
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


def pdyn_breaks(fn: Callable[..., Any], args: tuple[Any, ...]) -> int:
    """Graph breaks and eager fallbacks of pdyn's one call of `fn(*args)` (backend eager)."""
    import pdyn

    pdyn.reset()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            pdyn.optimize(fn, backend="eager")(*copy.deepcopy(args))
        except Exception:
            pass   # the program raises, as eagerly: count what pdyn did before it
    stats = pdyn.stats()
    return stats["graph_breaks"] + stats["eager_fallbacks"]


def compare() -> None:
    """pdyn's breaks beside torch.compile's (the TORCH_COUNTS table), per program where pdyn breaks
    more, and the totals over the programs torch.compile runs."""
    from tests.e2e.test_dynamo_programs import TORCH_COUNTS

    ours = theirs = 0
    for name, (fn, make_args) in PROGRAMS.items():
        if TORCH_COUNTS[name] is None:
            continue
        breaks, torch_breaks = pdyn_breaks(fn, make_args()), TORCH_COUNTS[name][1]
        ours, theirs = ours + breaks, theirs + torch_breaks
        if breaks > torch_breaks:
            print(f"{name}: pdyn {breaks}, torch.compile {torch_breaks}")
    print(f"{len(PROGRAMS)} programs; graph breaks: pdyn {ours}, torch.compile {theirs}")


def main() -> None:
    torch.manual_seed(0)
    if "--pdyn" in sys.argv:
        compare()
        return
    print("TORCH_COUNTS = {")
    for name, (fn, make_args) in PROGRAMS.items():
        print(f"    {name!r}: {torch_counts(fn, make_args())},")
    print("}")


if __name__ == "__main__":
    main()
