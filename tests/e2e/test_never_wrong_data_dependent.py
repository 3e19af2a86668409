"""Never wrong with data-dependent sizes: a question only the data answers (is this unbacked size
1?) is never answered by the trace in a way that changes the result. A runtime assert is eager's
exact condition, since a graph that writes an input is not rerun eagerly when it raises; a size
whose 1-ness decides the result's rank breaks the graph."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton's first import: kernels run on the CPU

import pytest  # noqa: E402
import torch  # noqa: E402

import pdyn  # noqa: E402
from tests.e2e.test_data_dependent import run  # noqa: E402
from tests.helpers import assert_same  # noqa: E402


def upto(k, n=8):
    return torch.arange(n) < k


def writes_first(fn):
    """`fn` after an in-place write to an input: a graph that raises is not rerun eagerly."""
    def f(x, m, z):
        z.add_(1)
        return fn(x, m, z)
    return f


def calls(*counts):
    x = torch.randn(8)
    return [(x, upto(k), torch.zeros(3)) for k in counts]


def test_expand_of_a_data_dependent_size_of_one_stretches_as_eager():
    """expand/expand_as/broadcast_to of x[m] to 3: eager stretches a single element; the assert
    was `u0 == 3`, which raised where eager returns."""
    run(writes_first(lambda x, m, z: (x[m].expand(3) * 2, x[m].expand_as(z) + 1, x[m].broadcast_to((3,)))),
        calls(3, 1, 3, 2, 0), graphs=1)


def test_expand_to_another_data_dependent_size():
    run(writes_first(lambda x, m, z: x[m].view(-1, 1).expand(-1, 3).expand(x[~m].shape[0], 3) * 2),
        calls(4, 1, 2, 7, 0), graphs=1)


def test_addmm_input_of_a_data_dependent_size_of_one_broadcasts_as_eager():
    w, v = torch.randn(3, 2), torch.randn(2, 3)
    run(writes_first(lambda x, m, z: (torch.addmm(x[m], w, v), torch.addmv(x[m], w, v[:, 0]))),
        calls(3, 1, 2), graphs=1)


def test_squeeze_of_a_data_dependent_dim_breaks_the_graph():
    """The result's rank is the data's: 0-d where the mask selects one element."""
    def f(x, m, z):
        y = (x[m] * 2).view(1, -1).squeeze()
        return y.dim(), y.shape, y + 1
    run(f, calls(3, 1, 0, 1), graphs=4, breaks=1)  # the resume: one graph for 3, for 1, for 0


def test_squeeze_of_nonzero_with_one_hit_is_0d_as_eager():
    def f(x):
        idx = torch.nonzero(x > 0).squeeze()
        return idx.dim(), idx * 2
    run(f, [(torch.tensor([1.0, -1.0, 2.0]),), (torch.tensor([-1.0, 3.0, -1.0]),), (-torch.ones(3),)],
        graphs=4, breaks=1)


def test_squeeze_of_a_static_dim_next_to_a_data_dependent_one_stays_one_graph():
    run(lambda x, m, z: (x[m].view(-1, 1).squeeze(1) * 2, torch.nonzero(x[m] > 0).squeeze(-1)),
        calls(3, 1, 0), graphs=1)


def test_triton_broadcast_of_a_data_dependent_size_of_one():
    from pdyn.backends.triton import triton_backend

    def f(x, m, z):
        return (x[m] + z) * 2
    opt = pdyn.optimize(f, backend=triton_backend)
    x, z = torch.arange(8.0) + 100, torch.randn(4096)  # 4095 reads past a 1-element buffer
    for k in (8, 1):
        assert_same(opt(x, upto(k), z[:k] if k > 1 else z), f(x, upto(k), z[:k] if k > 1 else z))
