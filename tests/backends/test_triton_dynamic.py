"""One compile across sizes, sizes as kernel arguments, data-dependent sizes, fallbacks, grad mode,
logging, caches and backend selection."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

import pdyn
from pdyn.backends import resolve
from pdyn.backends.triton import runtime
from tests.backends.util import Recorder, check, randn


def test_one_compile_for_every_batch_size():
    fn = pdyn.optimize(lambda x, w: F.layer_norm(torch.relu(x), (16,), w), backend="triton")
    w = randn(16)
    for n in (2, 3, 8, 17, 33):
        x = randn(n, 16)
        torch.testing.assert_close(fn(x, w), F.layer_norm(torch.relu(x), (16,), w))
    assert pdyn.stats(fn)["compiles"] == 1


def test_kernels_take_sizes_as_arguments_not_example_values():
    rec = check(lambda x: torch.softmax(x, -1) * 2, (randn(37, 23),), (randn(5, 11),))
    text = "\n".join(rec.last.kernel_sources)
    assert "37" not in text and "23" not in text
    assert "rnumel" in text and "xnumel" in text


def test_data_dependent_sizes_are_read_back():
    check(lambda x: torch.nonzero(x > 0).float().sum(0) * 2, (randn(4, 6),), (randn(5, 9),))
    check(lambda x: x[x > 0].exp().sum(), (randn(4, 6),), (randn(5, 9),), compiles=None)


def test_ops_without_lowering_fall_back_to_torch():
    rec = check(lambda x: torch.logcumsumexp(x * 2, 1) + 1, (randn(3, 5),), (randn(4, 5),))
    assert rec.last.fallbacks and "logcumsumexp" in rec.last.fallbacks[0]
    assert rec.last.kernel_count == 2


def test_a_write_to_the_graphs_own_tensor_is_lowered_as_its_out_of_place_op():
    def fn(x):
        y = x * 2
        y.add_(1)
        return y

    rec = Recorder()
    compiled = pdyn.optimize(fn, backend=rec)
    x = randn(3, 4)
    torch.testing.assert_close(compiled(x), fn(x))
    assert rec.last.externs == [] and rec.last.kernel_count == 1  # tests/backends/test_triton_writes.py: more


def test_grad_mode_with_grad_inputs_trains_through_kernels_without_a_warning(caplog):
    """Autograd no longer sends a graph to torch: a forward and a backward graph (pdyn/backends/autograd)."""
    fn = pdyn.optimize(lambda x: (x * 2).sum(), backend="triton")
    x = randn(3, 4).requires_grad_()
    with caplog.at_level(logging.WARNING, logger="pdyn.lowering"):
        out = fn(x)
        fn(x)
    out.backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert pdyn.stats(fn)["backward_graphs"] == 1
    with torch.no_grad():
        torch.testing.assert_close(fn(x), (x * 2).sum())


def test_output_code_log_prints_wrapper_and_kernels(caplog):
    logger = logging.getLogger("pdyn.output_code")
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="pdyn.output_code"):
            pdyn.optimize(lambda x: x.sigmoid() + 1, backend="triton")(randn(3, 4))
    finally:
        logger.setLevel(old)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "def call(" in text and "@triton.jit" in text


def test_kernels_are_cached_by_source_on_disk(tmp_path, monkeypatch):
    source = "import triton\nimport triton.language as tl\n# pdyn cache test\n"
    with pdyn.config.patch(cache_dir=str(tmp_path)):
        module = runtime.load_kernel(source, True)
        assert runtime.load_kernel(source, True) is module
    assert len(list((tmp_path / "triton").glob("k*.py"))) == 1


def test_auto_backend_is_triton_only_with_cuda():
    expected = "triton" if torch.cuda.is_available() else "eager"
    assert resolve("auto").__name__ == expected


def test_int_argument_sizes_stay_dynamic():
    check(lambda x, n: x[:, :n] * n, (randn(4, 9), 3), (randn(4, 9), 5), (randn(6, 9), 7), compiles=None)


def test_torch_op_runs_every_kind_of_fx_node():
    """The wrapper's calls into torch: a function, a method, an attribute and a submodule."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2)
            self.scale = torch.nn.Parameter(torch.full((2,), 2.0))

        def forward(self, x):
            return torch.relu(self.lin(x).add(1)) * self.scale

    m = M()
    gm = torch.fx.symbolic_trace(m)
    x = torch.randn(4, 3)
    env: dict = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = x
        elif node.op != "output":
            env[node] = runtime.TorchOp(node, gm)(*[env[n] for n in node.all_input_nodes])
    ops = {n.op for n in gm.graph.nodes}
    assert {"call_module", "call_method", "call_function", "get_attr"} <= ops
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    torch.testing.assert_close(env[out], m(x))
