"""Graph breaks: the graph before a break is compiled, the instruction runs for real, and a resume
function (optimized on its own) runs the rest. Results, exceptions and side effects equal eager's;
graph and break counts are exact (counted over the frame and its resume functions)."""

from __future__ import annotations

import sys
import traceback

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, assert_same, check


def check_breaks(fn, *args, graphs: int, graph_breaks: int, fallbacks: int = 0, calls: int = 2):
    """`check`, then the break and fallback counts over every frame pdyn compiled for it (the
    optimized one, its resume functions, and the callees its breaks called)."""
    opt = check(fn, *args, graphs=graphs, calls=calls, fallbacks=pdyn.stats(fn)["eager_fallbacks"]
                if hasattr(fn, "_pdyn_frame") else fallbacks)
    stats = pdyn.stats()
    assert stats["graph_breaks"] == graph_breaks, stats
    assert stats["eager_fallbacks"] == fallbacks, stats
    return opt


def test_print_in_the_middle_breaks_once(capsys):
    def f(x):
        y = x.sin()
        print("y has", y.shape[0], "rows")
        return y.cos() + 1

    check_breaks(f, torch.randn(4), graphs=2, graph_breaks=1)
    assert capsys.readouterr().out == "y has 4 rows\n" * 4  # eager and pdyn, two calls each


def test_two_breaks_in_one_function():
    def f(x):
        a = x + 1
        print("a")
        b = a * 2
        pdyn.graph_break()
        return b - x

    check_breaks(f, torch.randn(3), graphs=3, graph_breaks=2)


def test_break_inside_a_while_loop_body():
    def f(x):
        i = 0
        while i < 3:
            x = x * 2
            print(i)
            i += 1
        return x + 1

    check_breaks(f, torch.randn(2), graphs=4, graph_breaks=3)


def test_break_inside_a_for_loop_keeps_the_iterator():
    def f(x, items):
        for k in items:
            x = x + k
            pdyn.graph_break()
        return x

    # the resume function after the break is the loop's body and runs once per remaining item
    check_breaks(f, torch.randn(2), [2, 3, 4], graphs=3, graph_breaks=3)


def level3(x):
    y = x * 3
    print("deep")
    return y + 1


def level2(x):
    return level3(x - 1) * 2


def level1(x):
    return level2(x + 1).sum()


def test_break_in_an_inlined_call_three_calls_deep():
    def f(x):
        return level1(x.relu())

    # f, level1, level2 and level3 each break once (at the call, or at the print) and each
    # compiles a graph before the break and one in its resume function, except f's last part
    check_breaks(f, torch.randn(3), graphs=7, graph_breaks=4)


def test_live_tensors_and_python_values_on_the_stack_and_in_locals():
    def f(x, scale, names):
        y = x * scale
        n = len(names)
        label = names[0] + "!"
        out = torch.stack([y, x + n, torch.full_like(x, float(pdyn_print(label, y)))])
        return out * n, label

    # f breaks at the call of pdyn_print, which breaks at its print
    check_breaks(f, torch.randn(2), 3.0, ["a", "b"], graphs=2, graph_breaks=2)


def pdyn_print(label, y):
    print(label, y.shape)
    return 7


def test_return_mixes_graph_outputs_and_python_values_after_a_break():
    def f(x, n):
        y = x + n
        print("between")
        return (y, y * 2, n, "done", [x, None], {"k": y.sum()})

    check_breaks(f, torch.randn(2), 5, graphs=2, graph_breaks=1)


def test_side_effects_before_a_break_happen_before_it_in_order(capsys):
    class Box:
        pass

    def f(x, items, box):
        items.append(1)
        items.append(x + 1)
        box.size = len(items)
        print(len(items), items[0], box.size)   # sees both appends and the attribute
        items.append(3)
        box.size = len(items)
        return x * 2

    opt = pdyn.optimize(f, backend=CountingBackend())
    items: list = []
    box = Box()
    assert_same(opt(torch.ones(2), items, box), torch.ones(2) * 2)
    assert capsys.readouterr().out == "2 1 2\n"
    assert items[0] == 1 and torch.equal(items[1], torch.full((2,), 2.0)) and items[2] == 3 and box.size == 3
    assert pdyn.stats()["graph_breaks"] == 1 and pdyn.stats()["eager_fallbacks"] == 0


def test_exception_after_a_break_has_the_users_type_message_and_line():
    def f(x):
        y = x + 1
        print("before")
        raise ValueError(f"bad {y.shape[0]}")

    check_breaks(f, torch.randn(2), graphs=1, graph_breaks=1)
    opt = pdyn.optimize(f)
    with pytest.raises(ValueError, match="bad 2") as info:
        opt(torch.randn(2))
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == __file__
    assert last.lineno == f.__code__.co_firstlineno + 3
    assert "raise ValueError" in last.line


def countdown(x, n):
    if n == 0:
        return x
    print("level", n)
    return countdown(x * 2, n - 1) + 1


def test_recursion_with_a_break_at_each_level():
    def f(x):
        return countdown(x, 3)

    # f breaks at the call; countdown breaks at its print and its resume function at the
    # recursive call; n stays symbolic (only `n == 0` is read), so n=3, 2 and 1 share entries
    # (n=1 too: `n == 0` is false for every n >= 1, so the entry is size-oblivious); graphs x*2
    # and +1; three breaks (f's, countdown's print, its resume function's recursive call)
    check_breaks(f, torch.randn(2), graphs=2, graph_breaks=3)


def test_data_dependent_branch_takes_each_way_with_a_resume_function_per_target():
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend)
    for x in (torch.ones(3), -torch.ones(3), torch.ones(3), -torch.ones(3)):
        assert_same(opt(x), f(x))
    assert len(backend.graphs) == 3
    assert pdyn.stats()["graph_breaks"] == 1 and pdyn.stats()["compiles"] == 3


def test_item_used_by_python_breaks_and_resumes():
    def f(x):
        s = x.sum().item()
        if s > 100:
            return x * 0
        return x * s

    check_breaks(f, torch.ones(3), graphs=2, graph_breaks=1)


def test_break_where_the_recompile_policy_made_a_dim_dynamic():
    def f(x):
        tag = str(x.size(0))   # a value read (a loop count would be pinned, not broken at)
        return x * 2 + len(tag)

    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend)
    for n in (3, 4, 5, 6):
        x = torch.randn(n)
        assert_same(opt(x), f(x))
    root = pdyn.stats(opt)
    assert root["compiles"] == 2 and root["graph_breaks"] == 1   # n=3 specialized, then the read breaks
    assert pdyn.stats()["eager_fallbacks"] == 0


def test_break_inside_a_try_block_resumes_inside_it():
    def f(x):
        try:
            print("in try")
            return x + 1
        except ValueError:
            return x

    check_breaks(f, torch.randn(2), graphs=1, graph_breaks=1)   # more in test_break_in_blocks.py


def test_fullgraph_raises_at_the_first_break_naming_the_users_line():
    def f(x):
        y = x + 1
        print(y)
        return y

    with pytest.raises(pdyn.Unsupported) as info:
        pdyn.optimize(f, fullgraph=True)(torch.randn(2))
    assert info.value.loc.lineno == f.__code__.co_firstlineno + 2 and info.value.loc.filename == __file__


def test_explain_lists_each_break_and_counts_graphs_across_resume_functions():
    def f(x):
        y = x + 1
        print("one")
        z = y * 2
        pdyn.graph_break()
        return z - 1

    out = pdyn.explain(f)(torch.randn(2))
    assert out.graph_count == 3 and out.graph_break_count == 2
    first = f.__code__.co_firstlineno
    assert [(r.key, r.filename, r.lineno) for r in out.break_reasons] == [
        ("print", __file__, first + 2), ("graph_break", __file__, first + 4)]


def test_graph_breaks_log_names_the_frame_and_reason(caplog):
    def f(x):
        print("x")
        return x + 1

    logger = "pdyn.graph_breaks"
    with caplog.at_level("INFO", logger=logger):
        pdyn.optimize(f)(torch.randn(2))
    lines = [r.getMessage() for r in caplog.records if r.name == logger]
    assert len(lines) == 1 and "graph break in f()" in lines[0] and "print()" in lines[0]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.11+ bytecode")
def test_resume_functions_are_cached_per_instruction():
    def f(x):
        print("p")
        return x + 1

    opt = pdyn.optimize(f)
    opt(torch.randn(2))
    opt(torch.randn(2, 3))  # a recompile of f breaks at the same print: same resume function
    from pdyn.bytecode.transform import RESUME_CODES

    assert sum(1 for point in RESUME_CODES if point.code is f.__code__) == 1
