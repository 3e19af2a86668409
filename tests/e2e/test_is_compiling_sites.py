"""`torch.compiler.is_compiling()` answered per call site (pdyn/trace/variables/restart.py):
True, as torch.compile answers, unless the trace then broke and answering eager's False at the
last site captured more ops; a site is the chain of calls from the frame, so one helper that asks
is answered per caller."""

import torch

import pdyn
from tests.helpers import CountingBackend, assert_same


def compiling():
    """A library's helper, as transformers' is_torchdynamo_compiling."""
    return torch.compiler.is_compiling()


def scan(x):
    """A path for compilers that pdyn breaks on (print here; transformers' Mamba: associative_scan),
    and the eager path, which traces."""
    if compiling():
        print("compiler path")
        return x.cumsum(0)
    return torch.cumsum(x, 0)


def checked(x):
    """Under a compiler the library skips a data-dependent check (a break for pdyn)."""
    if not compiling() and bool((x < -100).any()):
        raise ValueError("out of range")
    return x * 2


def run(fn, calls):
    pdyn.reset()
    backend = CountingBackend()
    optimized = pdyn.optimize(fn, backend=backend)
    for args in calls:
        assert_same(optimized(*args), fn(*args))
    stats = pdyn.stats()
    return len(backend.graphs), stats["graph_breaks"], stats["compiles"]


def calls():
    return [(torch.randn(5, 3),), (torch.randn(7, 3),), (torch.randn(2, 3),)]


def test_eagers_answer_where_the_compiler_path_breaks(capsys):
    def f(x):
        return scan(x + 1) * 3
    assert run(f, calls()) == (1, 0, 1)   # one graph, no break: scan() answered False
    assert "compiler path" not in capsys.readouterr().out


def test_true_where_eagers_answer_breaks_sooner():
    def f(x):
        y = checked(x + 1)
        print("a break after the check")
        return y - 1
    # True: the check is skipped and the graph runs up to print(); False would break at the check
    assert run(f, calls()) == (2, 1, 2)


def test_one_helper_is_answered_per_caller(capsys):
    def f(x):
        y = checked(x + 1)
        z = scan(y)
        print("a break after both")
        return z - 1
    assert run(f, calls()) == (2, 1, 2)   # only print() breaks: checked() True, scan() False
    assert "compiler path" not in capsys.readouterr().out
