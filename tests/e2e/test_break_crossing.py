"""Values crossing a graph break. Sizes stay sizes (ints, torch.Size, tuples, lists and dicts of
sizes, a size held by an object made in the trace): six calls with changing sizes compile the
function once and its resume function once, and the resume function knows which of its parent's
sizes each one is. Values of other types (iterators held in locals, code objects, modules, objects
of unknown classes) reach the resume function as they are. Each case is compared with eager."""

from __future__ import annotations

import io
import math

import pytest
import torch

import pdyn
from pdyn.sources import ItemSource, LocalSource, SizeSource
from tests.break_counts import by_code, compiles_by_code
from tests.helpers import check_calls

# an internal error (pdyn runs the code eagerly and warns) fails the test
pytestmark = pytest.mark.filterwarnings("error:pdyn")

SINK = io.StringIO()
ONCE = (1, 1, 0), (1, 0, 0)   # the function: one compile that breaks; its resume function: one compile


def brk():
    print("break", file=SINK)


def run(fn, calls):
    pdyn.reset()
    return check_calls(fn, *calls)


def assert_once(name):
    assert compiles_by_code() == {name: ONCE[0], f"{name}.<resume 1>": ONCE[1]}, compiles_by_code()


def test_torch_size_crosses_as_sizes():
    def size_crosses(x):
        new = x.size()[:-1] + (4, 8)
        print("break", file=SINK)
        return x.view(*new)

    run(size_crosses, [(torch.randn(2, n, 32),) for n in range(2, 8)])
    assert_once("test_torch_size_crosses_as_sizes.<locals>.size_crosses")
    assert by_code()["test_torch_size_crosses_as_sizes.<locals>.size_crosses.<resume 1>"]["graphs"] == [("view",)]


def test_int_crosses_as_a_size():
    def int_crosses(x):
        n = x.size(0) * 2
        print("break", file=SINK)
        return x.new_zeros(n) + n

    run(int_crosses, [(torch.randn(n, 3),) for n in range(2, 8)])
    assert_once("test_int_crosses_as_a_size.<locals>.int_crosses")


def test_tuple_of_sizes_crosses():
    def tuple_crosses(x):
        s = (x.size(0), x.size(1) * 2)
        print("break", file=SINK)
        return x.new_ones(s)

    run(tuple_crosses, [(torch.randn(n, n + 1),) for n in range(2, 8)])
    assert_once("test_tuple_of_sizes_crosses.<locals>.tuple_crosses")


def test_list_and_dict_of_sizes_cross():
    def list_crosses(x, y):
        shapes = [x.shape, y.shape]
        named = {"rows": x.size(0)}
        print("break", file=SINK)
        return x.reshape(shapes[1]).t() + y.reshape(shapes[0]) + named["rows"]

    run(list_crosses, [(torch.randn(n, 3), torch.randn(3, n)) for n in range(2, 8)])
    assert_once("test_list_and_dict_of_sizes_cross.<locals>.list_crosses")


class Box:
    pass


def test_size_inside_an_object_made_in_the_trace_crosses():
    def object_crosses(x):
        box = Box()
        box.n = x.size(0)
        print("break", file=SINK)
        return x.new_ones(box.n) * box.n

    run(object_crosses, [(torch.randn(n, 3),) for n in range(2, 8)])
    assert_once("test_size_inside_an_object_made_in_the_trace_crosses.<locals>.object_crosses")


def _resume_frames(fn):
    """The Frames of the resume functions the entries of optimized `fn` call."""
    frames = []
    for entry in fn._pdyn_frame.cache.entries:
        frames += [v._pdyn_frame for v in entry.run.__globals__.values() if hasattr(v, "_pdyn_frame")]
    return frames


def test_the_resume_function_knows_its_parents_sizes_inside_containers():
    def f(x):
        shapes = [x.shape, (x.size(1), 5)]
        print("break", file=SINK)
        return x.reshape(shapes[0]) + shapes[1][0]

    opt = run(f, [(torch.randn(3, 4),)])
    (resume,) = _resume_frames(opt)
    shapes = LocalSource("shapes")
    x = LocalSource("x")
    assert resume.inherited.parent_of == {
        SizeSource(ItemSource(ItemSource(shapes, 0), 0), None): SizeSource(x, 0),
        SizeSource(ItemSource(ItemSource(shapes, 0), 1), None): SizeSource(x, 1),
        SizeSource(ItemSource(ItemSource(shapes, 1), 0), None): SizeSource(x, 1),
        SizeSource(x, 0): SizeSource(x, 0), SizeSource(x, 1): SizeSource(x, 1)}


def test_a_parent_size_seen_changing_is_changing_in_the_resume_function():
    def f(x):
        n = x.size(0)
        y = x
        for _ in range(n):     # a loop count: pinned by an equality, one unrolled compile per length
            y = y + 1
        print("break", file=SINK)
        return y.sum() + n

    run(f, [(torch.randn(n, 2),) for n in range(2, 6)])
    name = "test_a_parent_size_seen_changing_is_changing_in_the_resume_function.<locals>.f"
    counts = compiles_by_code()
    # f: one compile per length (as torch.compile does), each breaking at the print; <resume 1>, after
    # the print, reads n only in tensor math: compiled once for every n
    assert counts == {name: (4, 4, 0), f"{name}.<resume 1>": (1, 0, 0)}, counts


def test_an_iterator_in_a_local_crosses():
    def iter_crosses(x, y):
        it = iter((x, y))
        a = next(it)
        print("break", file=SINK)
        return a + next(it)

    run(iter_crosses, [(torch.randn(3), torch.randn(3))] * 3)
    counts = by_code()
    assert all(c["eager"] == 0 for c in counts.values()), counts
    assert sum(len([g for g in c["graphs"] if g]) for c in counts.values()) == 1   # `a + next(it)`


def test_an_iterator_over_a_list_keeps_reading_the_list():
    def f(xs):
        it = iter(xs)
        first = next(it)
        print("break", file=SINK)
        xs.append(first * 10)
        return [t + 1 for t in it]

    run(f, [([torch.ones(2), torch.zeros(2)],)] * 3)
    assert all(c["eager"] == 0 for c in by_code().values())


def test_an_iterator_shared_by_a_local_and_a_loop_stays_one_iterator():
    def f(x):
        it = iter([x, x + 1, x + 2, x + 3])
        out = []
        for a in it:
            print("break", file=SINK)
            out.append(a + next(it))
        return out

    run(f, [(torch.randn(2),)] * 3)


def test_an_iterator_over_a_list_the_trace_changed_is_correct():
    def f(xs):
        xs.append(xs[0] * 2)
        it = iter(xs)
        next(it)
        print("break", file=SINK)
        return list(it)

    run(f, [([torch.ones(2)],)] * 2)


class Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


SLOTTED = Slotted(torch.randn(3))


def test_values_of_other_types_cross():
    def f(x):
        code = brk.__code__
        module = math
        obj = SLOTTED
        fresh = Slotted(x * 2)
        fn = brk
        print("break", file=SINK)
        return x * module.pi + obj.v + fresh.v + code.co_argcount + (fn is brk)

    run(f, [(torch.randn(3),)] * 3)
    name = "test_values_of_other_types_cross.<locals>.f"
    assert compiles_by_code() == {name: ONCE[0], f"{name}.<resume 1>": ONCE[1]}


def _helper(a, *rest, scale):
    print("break", file=SINK)
    return a * scale + rest[0].sum()


def test_a_callee_a_break_calls_knows_its_callers_sizes():
    def f(x, h):
        return _helper(x, *[h], scale=x.size(1)) * 2

    opt = run(f, [(torch.randn(3, 4), torch.randn(5))])
    callee = [frame for frame in _resume_frames(opt) if frame.code is _helper.__code__]
    assert len(callee) == 1
    x, h = LocalSource("x"), LocalSource("h")
    assert callee[0].inherited.parent_of == {
        SizeSource(LocalSource("a"), 0): SizeSource(x, 0), SizeSource(LocalSource("a"), 1): SizeSource(x, 1),
        SizeSource(ItemSource(LocalSource("rest"), 0), 0): SizeSource(h, 0),
        SizeSource(LocalSource("scale"), None): SizeSource(x, 1)}
