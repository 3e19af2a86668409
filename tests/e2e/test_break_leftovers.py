"""Issue 13's leftovers: loop counts, ranges, iterators and handled exceptions around graph breaks.
Each case is compared with eager, with the exact compiles, breaks and graphs per code object."""

from __future__ import annotations

import io

import pytest
import torch

import pdyn
from pdyn.sources import AttrSource, LocalSource, SizeSource
from tests.break_counts import by_code, compiles_by_code
from tests.helpers import check_calls

pytestmark = pytest.mark.filterwarnings("error:pdyn")

SINK = io.StringIO()


def brk():
    print("break", file=SINK)


def run(fn, calls):
    pdyn.reset()
    return check_calls(fn, *calls)


def _resume_frames(fn):
    """The Frames of the resume functions the entries of optimized `fn` call."""
    frames = []
    for entry in fn._pdyn_frame.cache.entries:
        frames += [v._pdyn_frame for v in entry.run.__globals__.values() if hasattr(v, "_pdyn_frame")]
    return frames


def test_a_loop_over_a_changing_size_compiles_once_per_length_with_no_break():
    """The trace unrolls the loop, so its count is pinned (an equality guard): a break at the range
    would add a graph before it and the resume function would still compile once per length."""
    def loop_over_rows(x):
        out = x[0]
        for i in range(1, x.size(0)):
            out = out + x[i]
        return out

    run(loop_over_rows, [(torch.randn(n, 4),) for n in (3, 5, 8, 5, 3)])
    assert compiles_by_code() == {loop_over_rows.__qualname__: (3, 0, 0)}
    assert [len(g) for g in by_code()[loop_over_rows.__qualname__]["graphs"]] == [5, 9, 15]


def test_a_range_of_a_size_crosses_a_break_as_its_bounds():
    def range_crosses(x):
        r = range(1, x.size(0))
        print("break", file=SINK)
        return x.new_zeros(len(r)) + r.stop

    name = range_crosses.__qualname__
    opt = run(range_crosses, [(torch.randn(n, 3),) for n in range(2, 8)])
    assert compiles_by_code() == {name: (1, 1, 0), f"{name}.<resume 1>": (1, 0, 0)}
    assert by_code()[f"{name}.<resume 1>"]["graphs"] == [("sub", "new_zeros", "add")]   # len(r) = s0 - 1 computed in the graph
    # the resume function reads r.stop as the parent's size
    (resume,) = _resume_frames(opt)
    assert resume.inherited.parent_of[SizeSource(AttrSource(LocalSource("r"), "stop"), None)] == \
        SizeSource(LocalSource("x"), 0)


def test_a_range_input_stays_symbolic_until_a_loop_pins_it():
    def f(x, r):
        return x[: len(r)] * r.stop

    run(f, [(torch.randn(9), range(n)) for n in range(2, 8)])
    assert compiles_by_code() == {f.__qualname__: (1, 0, 0)}


def test_an_iterator_held_in_a_local_is_followed_after_the_break():
    def iter_crosses(x, y):
        it = iter((x, y))
        a = next(it) * 2
        print("break", file=SINK)
        return a + next(it)

    name = iter_crosses.__qualname__
    run(iter_crosses, [(torch.randn(n), torch.randn(n)) for n in range(2, 8)])
    assert compiles_by_code() == {name: (1, 1, 0), f"{name}.<resume 1>": (1, 0, 0)}
    assert by_code()[f"{name}.<resume 1>"]["graphs"] == [("add",)]


def test_a_for_loop_over_an_input_list_breaking_in_its_body_keeps_the_real_iterator():
    def loop(xs, log):
        total = 0
        for x in xs:
            total = total + x.sin()
            log.append(len(log))   # a side effect on the list, replayed before each break
            print("break", file=SINK)
        return total

    name = loop.__qualname__
    log_e, log_c = [], []
    xs = [torch.randn(3) for _ in range(3)]
    expected = loop(xs, log_e)
    pdyn.reset()
    opt = pdyn.optimize(loop)
    got = opt(xs, log_c)
    torch.testing.assert_close(got, expected)
    assert log_c == log_e
    counts = compiles_by_code()
    assert counts[name] == (1, 1, 0) and counts[f"{name}.<resume 1>"][2] == 0, counts


def test_an_input_iterator_is_advanced_as_eager_advances_it():
    def take_two(it):
        return next(it) + next(it)

    for make in (lambda: iter([torch.ones(2), torch.ones(2) * 2, torch.ones(2) * 3]),
                 lambda: iter((torch.ones(2), torch.ones(2) * 2, torch.ones(2) * 3))):
        pdyn.reset()
        opt = pdyn.optimize(take_two)
        it_e, it_c = make(), make()
        torch.testing.assert_close(opt(it_c), take_two(it_e))
        torch.testing.assert_close(next(it_c), next(it_e))   # both stand at the third item
        it_c2 = make()
        next(it_c2), next(it_c2)   # another position: the guard fails, the trace raises what eager raises
        with pytest.raises(StopIteration):
            opt(it_c2)
        assert compiles_by_code() == {take_two.__qualname__: (1, 0, 0)}
        assert pdyn.stats()["frames_without_graph"] == 1


def test_a_store_to_a_closure_cell_in_an_inlined_callee():
    def outer(x):
        total = x

        def add(v):
            nonlocal total
            total = total + v

        add(x)
        add(x * 2)
        return total

    run(outer, [(torch.randn(3),), (torch.randn(3),)])
    assert compiles_by_code() == {outer.__qualname__: (1, 0, 0)}


def test_a_generator_input_crosses_a_break_as_itself():
    """pdyn cannot run a real generator's frame in a trace: `next(gen)` in the resume function is a
    break of its own, and the generator the caller holds is the one advanced."""
    def f(x, gen):
        a = x * 2
        print("break", file=SINK)
        return a + next(gen)

    def make():
        yield torch.ones(2)
        yield torch.ones(2) * 3

    pdyn.reset()
    opt = pdyn.optimize(f)
    gen_e, gen_c = make(), make()
    torch.testing.assert_close(opt(torch.ones(2), gen_c), f(torch.ones(2), gen_e))
    torch.testing.assert_close(next(gen_c), next(gen_e))
    counts = compiles_by_code()
    name = f.__qualname__   # <resume 1> breaks at next(gen); <resume 2> adds
    assert counts == {name: (1, 1, 0), f"{name}.<resume 1>": (1, 1, 0), f"{name}.<resume 2>": (1, 0, 0)}, counts


RANGE_USES = {   # what Python does with a range of a size -> compiles over lengths 3, 4, 5, 4
    "len stays symbolic": (lambda x: x[:len(range(1, x.size(0)))].sum(), 1),
    "bool of len": (lambda x: x * bool(range(x.size(0) - 2)), 1),
    "reversed": (lambda x: [x * i for i in reversed(range(x.size(0)))][0], 3),
    "slice": (lambda x: [x * i for i in range(x.size(0))[1:]][0], 3),
    "in": (lambda x: x * (2 in range(x.size(0))), 3),
    "==": (lambda x: x * (range(x.size(0)) == range(3)), 3),
    "str": (lambda x: x * len(str(range(x.size(0)))), 3),
    "step": (lambda x: x * len(range(0, x.size(0), 2)), 3),
    "sum of a generator": (lambda x: sum(x[i] for i in range(x.size(0))), 3),
}


@pytest.mark.parametrize("use", RANGE_USES)
def test_a_range_of_a_size_is_a_range_everywhere(use):
    fn, compiles = RANGE_USES[use]
    pdyn.reset()
    check_calls(fn, *[(torch.ones(n),) for n in (3, 4, 5, 4)])
    stats = pdyn.stats()
    assert (stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]) == (compiles, 0, 0)
