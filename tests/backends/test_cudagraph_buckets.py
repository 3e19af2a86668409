"""CUDA graphs that survive changing shapes: which dims pdyn may pad up to a bucket (an analysis of
the captured fx graph, run on CPU), padded-then-sliced results equal unpadded ones, and on a GPU the
captures themselves (skipped without CUDA)."""

from __future__ import annotations

import logging
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F

import pdyn
from pdyn.backends.cudagraphs import runner_for
from pdyn.backends.cudagraphs.pad import PadPlan, pad_args, padded_sizes, plan, unpad_outputs
from pdyn.backends.cudagraphs.runner import UNPAID_SHARE, GraphRunner

CUDA = torch.cuda.is_available()
# a padded run that fails raises inside the compiled graph, which pdyn then reruns eagerly with a
# warning: the warning fails the test
pytestmark = pytest.mark.filterwarnings("error::UserWarning")


class PaddingBackend:
    """Runs each graph twice per call, as is and padded to the buckets then sliced; keeps the plans
    and checks the two agree."""

    def __init__(self, buckets: tuple[int, ...] | None = None) -> None:
        self.plans: list[PadPlan] = []
        self.buckets = buckets
        self.padded_calls = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        p = plan(gm)
        self.plans.append(p)

        def run(*args: Any) -> Any:
            out = gm.forward(*args)
            sizes = padded_sizes(p, list(args), self.buckets)
            if any(n != m for n, m in sizes.values()):
                self.padded_calls += 1
            again = unpad_outputs(p, gm.forward(*pad_args(p, list(args), sizes)), sizes)
            for a, b in zip(_flat(out), _flat(again)):
                assert a.shape == b.shape
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
            return out

        return run

    def padded(self) -> set[str]:
        """The padded symbols' input dims, as 'input.dim' names (placeholder index and dim)."""
        return {f"{i}.{d}" for p in self.plans for i, dims in p.inputs.items() for d, _ in dims}


def _flat(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def run(fn: Callable[..., Any], make: Callable[[int], tuple[torch.Tensor, ...]], dynamic_dims: dict[int, list[int]],
        sizes: tuple[int, ...] = (3, 5, 6)) -> PaddingBackend:
    backend = PaddingBackend()
    compiled = pdyn.optimize(fn, backend=backend)
    for n in sizes:
        args = make(n)
        for i, dims in dynamic_dims.items():
            for d in dims:
                pdyn.mark_dynamic(args[i], d)
        torch.testing.assert_close(compiled(*args), fn(*args))
    assert len(backend.plans) == 1
    return backend


def setup_function() -> None:
    pdyn.reset()


torch.manual_seed(0)
W1, W2, B1 = torch.randn(16, 8), torch.randn(4, 16), torch.randn(16)


def mlp(x: torch.Tensor) -> torch.Tensor:
    return F.linear(F.gelu(F.linear(x, W1, B1)), W2).softmax(-1)


def test_mlp_batch_is_padded() -> None:
    backend = run(mlp, lambda n: (torch.randn(n, 8),), {0: [0]})
    assert backend.padded() == {"0.0"}
    assert backend.padded_calls == 3  # 3 -> 4, 5 -> 8, 6 -> 8


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    return scores.softmax(-1) @ v


def test_attention_pads_batch_not_sequence() -> None:
    make = lambda n: tuple(torch.randn(n, 2, n + 1, 4) for _ in range(3))  # noqa: E731
    backend = run(attention, make, {0: [0, 2], 1: [0, 2], 2: [0, 2]})
    p = backend.plans[0]
    # batch, heads and query rows are independent; keys (contracted, softmax) and head dim are not
    assert {"0.0", "1.0", "2.0", "0.1", "0.2"} <= backend.padded()
    assert not {"1.2", "2.2", "0.3", "1.3"} & backend.padded()
    assert any("contracts" in why or "along" in why for why in p.refused.values()), p.refused


def test_self_attention_pads_batch_not_sequence() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return attention(x, x * 2, x + 1)

    backend = run(f, lambda n: (torch.randn(n, 2, n + 1, 4),), {0: [0, 2]})
    assert "0.0" in backend.padded() and "0.2" not in backend.padded()


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2)


def test_sdpa_pads_batch_not_sequence() -> None:
    make = lambda n: tuple(torch.randn(n, 2, n + 1, 4) for _ in range(3))  # noqa: E731
    backend = run(sdpa, make, {0: [0, 2], 1: [0, 2], 2: [0, 2]})
    assert {"0.0", "1.0", "2.0", "0.2"} <= backend.padded()  # a causal mask keeps query rows apart
    assert not {"1.2", "2.2", "0.3", "1.3"} & backend.padded()


def layernorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w) * 2


def test_layernorm_pads_batch_and_sequence() -> None:
    backend = run(layernorm, lambda n: (torch.randn(n, n + 2, 8), torch.randn(8)), {0: [0, 1]})
    assert backend.padded() == {"0.0", "0.1"}


def test_reduction_over_batch_is_not_padded() -> None:
    backend = run(lambda x: (x * 2).sum(0), lambda n: (torch.randn(n, 8),), {0: [0]})
    assert "0.0" not in backend.padded()
    assert "sum runs along" in next(iter(backend.plans[0].refused.values()))


def test_mean_over_everything_is_not_padded() -> None:
    backend = run(lambda x: x - x.mean(), lambda n: (torch.randn(n, 8),), {0: [0]})
    assert backend.padded() == set()  # mean over every dim: none is paddable


def test_matmul_contracting_batch_is_not_padded() -> None:
    backend = run(lambda x, y: x.t() @ y, lambda n: (torch.randn(n, 4), torch.randn(n, 3)), {0: [0], 1: [0]})
    assert "0.0" not in backend.padded() and "1.0" not in backend.padded()
    assert backend.padded() == {"0.1", "1.1"}  # the product's rows and columns
    assert "contracts" in next(iter(backend.plans[0].refused.values()))


def test_view_merging_batch_is_not_padded() -> None:
    backend = run(lambda x: x.reshape(-1, 4).relu(), lambda n: (torch.randn(n, 3, 4),), {0: [0]})
    assert "0.0" not in backend.padded() and "0.1" not in backend.padded()
    assert "mixing" in next(iter(backend.plans[0].refused.values()))


def test_view_keeping_batch_whole_is_padded() -> None:
    backend = run(lambda x: x.view(x.shape[0], 2, 6).transpose(1, 2).relu(), lambda n: (torch.randn(n, 12),), {0: [0]})
    assert backend.padded() == {"0.0"}


def test_batch_size_as_a_value_is_not_padded() -> None:
    backend = run(lambda x: x / x.shape[0], lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" not in backend.padded()
    assert "computes with" in next(iter(backend.plans[0].refused.values()))


def test_cumsum_and_sort_along_batch_are_not_padded() -> None:
    backend = run(lambda x: x.cumsum(0) + x.sort(0).values, lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" not in backend.padded()
    backend = run(lambda x: x.cumsum(1) + x.sort(1).values, lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" in backend.padded() and "0.1" not in backend.padded()


def test_indexing_along_batch_is_not_padded() -> None:
    backend = run(lambda x: x[1:] * 2, lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" not in backend.padded()
    backend = run(lambda x: x[:, 1:] * 2, lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" in backend.padded() and "0.1" not in backend.padded()


def test_embedding_rows_of_the_batch_are_padded() -> None:
    table = torch.randn(10, 4)
    backend = run(lambda ids: F.embedding(ids, table).sum(-1), lambda n: (torch.randint(0, 10, (n, 3)),), {0: [0]})
    assert backend.padded() == {"0.0", "0.1"}


def test_user_buckets() -> None:
    from pdyn.backends.cudagraphs.pad import bucket

    assert [bucket(n, None) for n in (1, 2, 3, 5, 16, 17)] == [1, 2, 4, 8, 16, 32]
    assert [bucket(n, (8, 32)) for n in (1, 8, 9, 33)] == [8, 8, 32, 33]


def test_mode_is_checked() -> None:
    with pytest.raises(pdyn.UserError, match="mode"):
        pdyn.optimize(mlp, mode="max-autotune-typo")


def test_cudagraphs_off_the_gpu_run_uncaptured(caplog: pytest.LogCaptureFixture) -> None:
    compiled = pdyn.optimize(mlp, backend="eager", mode="reduce-overhead")
    with caplog.at_level(logging.DEBUG, logger="pdyn.cudagraphs"):
        for n in (3, 4, 5, 6):
            x = torch.randn(n, 8)
            torch.testing.assert_close(compiled(x), mlp(x))
    assert "runs uncaptured" in caplog.text


# -- the runner, with a simulated CUDA graph: a replay reruns the call on the static inputs and writes
# the results into the static outputs, as a captured graph does ----------------------------------------

class SimulatedRunner(GraphRunner):
    def record(self, static_args: list[Any], warm: bool = True) -> tuple[Callable[[], Any], Any]:
        out = self.compiled(*static_args)

        def replay() -> None:
            for static, new in zip(_flat(out), _flat(self.compiled(*static_args))):
                static.copy_(new)

        return replay, out


def test_runner_pads_captures_per_bucket_and_never_hands_out_its_buffers() -> None:
    runners: list[GraphRunner] = []

    def backend(gm: torch.fx.GraphModule, ex: list[Any]) -> Callable[..., Any]:
        runner = runner_for(gm.forward, gm, ex, None, 8, cls=SimulatedRunner)
        runners.append(runner)
        return runner

    compiled = pdyn.optimize(mlp, backend=backend)
    kept = []
    for n in (3, 5, 6, 7, 3, 4, 8, 2):
        x = torch.randn(n, 8)
        pdyn.mark_dynamic(x, 0)
        out = compiled(x)
        torch.testing.assert_close(out, mlp(x))
        kept.append((out, out.clone()))
    for out, ref in kept:  # a later replay never overwrote what an earlier call returned
        torch.testing.assert_close(out, ref)
    runner = runners[-1]
    assert runner.plan.symbols
    # buckets 4 (3 runs, then 3 captures, 4 replays) and 8 (5 runs, 6 captures, 7 and 8 replay)
    assert runner.captured == 2 and len(runner.captures) == 2


def test_runner_captures_per_shape_where_nothing_pads() -> None:
    runners: list[GraphRunner] = []

    def backend(gm: torch.fx.GraphModule, ex: list[Any]) -> Callable[..., Any]:
        runners.append(runner_for(gm.forward, gm, ex, None, 2, cls=SimulatedRunner))
        return runners[-1]

    f = lambda x: x.softmax(0) * 2  # noqa: E731  # runs along the batch: captured per size
    compiled = pdyn.optimize(f, backend=backend)
    for n in (3, 3, 3, 5, 5, 6, 6, 6, 7, 7):
        x = torch.randn(n, 4)
        pdyn.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x), f(x))
    runner = runners[-1]
    assert all(b.dim != 0 for b in runner.plan.symbols.values())
    assert runner.captured == 2  # 3 and 5; 6 and 7 are past the limit of 2 and run uncaptured


def test_runner_stops_capturing_new_shapes_while_captures_go_unreplayed() -> None:
    """A decode loop: every step a new length, each length seen again only in the next loop. The
    first loop runs uncaptured, the second captures half the capture limit's lengths and runs the
    rest uncaptured; the third replays those, which pays for capturing more."""
    runners: list[GraphRunner] = []

    def backend(gm: torch.fx.GraphModule, ex: list[Any]) -> Callable[..., Any]:
        runners.append(runner_for(gm.forward, gm, ex, None, 8, cls=SimulatedRunner))
        return runners[-1]

    unpaid = 8 // UNPAID_SHARE
    f = lambda x: x.softmax(0) * 2  # noqa: E731  # captured per size
    compiled = pdyn.optimize(f, backend=backend)
    counts = []
    for _ in range(3):
        for n in range(3, 13):
            x = torch.randn(n, 4)
            pdyn.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), f(x))
        counts.append((runners[-1].captured, runners[-1].replays))
    assert counts[0] == (0, 0)
    assert counts[1] == (unpaid, 0)
    # the third loop replays the first 4 lengths, then captures while replays keep up
    assert counts[2][1] >= unpaid and counts[2][0] > unpaid


def test_runner_copies_an_input_that_moves() -> None:
    runners: list[GraphRunner] = []

    def backend(gm: torch.fx.GraphModule, ex: list[Any]) -> Callable[..., Any]:
        runners.append(runner_for(gm.forward, gm, ex, None, 8, cls=SimulatedRunner))
        return runners[-1]

    f = lambda x, w: x @ w  # noqa: E731
    compiled = pdyn.optimize(f, backend=backend)
    w = torch.randn(4, 4)
    for i in range(6):
        x = torch.randn(3, 4)
        w2 = w if i < 3 else torch.randn(4, 4)  # the same weight, then a new one each call
        torch.testing.assert_close(compiled(x, w2), f(x, w2))
    runner = runners[-1]
    assert runner.moving  # the weight moved: it is copied from then on
    assert runner.captured == 2


# -- on the GPU ------------------------------------------------------------------------------------------

gpu = pytest.mark.skipif(not CUDA, reason="CUDA graphs need a GPU")


def _runner(fn: Any) -> Any:
    cache = pdyn._cache_of(fn)
    runners = [getattr(e.compiled, "pdyn_cudagraphs", None) for e in cache.entries] if hasattr(cache, "entries") else []
    return runners


@gpu
def test_cudagraph_mlp_buckets_capture_once_per_bucket() -> None:
    w1, w2 = torch.randn(64, 32, device="cuda"), torch.randn(16, 64, device="cuda")

    def f(x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.relu(F.linear(x, w1)), w2)

    captured: list[Any] = []

    def spy(gm: torch.fx.GraphModule, ex: list[Any]) -> Any:
        from pdyn.backends import resolve

        return resolve("triton")(gm, ex)

    from pdyn.backends.cudagraphs import with_cudagraphs

    backend = with_cudagraphs(spy, always=True)

    def recording(gm: torch.fx.GraphModule, ex: list[Any]) -> Any:
        out = backend(gm, ex)
        captured.append(getattr(out, "pdyn_cudagraphs", None))
        return out

    compiled = pdyn.optimize(f, backend=recording)
    kept = []
    for n in [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 5, 6]:
        x = torch.randn(n, 32, device="cuda")
        out = compiled(x)
        torch.testing.assert_close(out, f(x), rtol=1e-3, atol=1e-3)
        kept.append((x, out.clone(), out))
    for x, ref, out in kept:  # what a call returned is never overwritten by a later replay
        torch.testing.assert_close(out, ref)
    runners = [r for r in captured if r is not None]
    assert len(runners) >= 1
    runner = runners[-1]
    assert runner.plan.symbols, runner.plan.refused
    assert runner.captured <= 3  # buckets 4, 8, 16 (2 and 3 warm up in their buckets)
    before = runner.captured
    x = torch.randn(13, 32, device="cuda")
    torch.testing.assert_close(compiled(x), f(x), rtol=1e-3, atol=1e-3)
    assert runner.captured == before  # a new size inside a captured bucket captures nothing


@gpu
def test_cudagraph_reduce_overhead_matches_eager_and_cpu_inputs_run_uncaptured(caplog: pytest.LogCaptureFixture) -> None:
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x.softmax(-1) * y).sum(0)

    compiled = pdyn.optimize(f, mode="reduce-overhead")
    for n in (4, 4, 4, 4, 6, 6, 6, 6):
        x, y = torch.randn(n, 8, device="cuda"), torch.randn(n, 8, device="cuda")
        torch.testing.assert_close(compiled(x, y), f(x, y))
    with caplog.at_level(logging.DEBUG, logger="pdyn.cudagraphs"), pytest.warns(UserWarning, match="CPU tensors"):
        g = pdyn.optimize(lambda x: x * 2 + 1, mode="reduce-overhead")
        for _ in range(4):
            x = torch.randn(5)
            torch.testing.assert_close(g(x), x * 2 + 1)
    assert "not on the GPU" in caplog.text


def test_the_guard_facts_are_evaluated_once_per_bucket_not_per_call(monkeypatch):
    """Substituting the facts costs milliseconds with sympy: a padded call reuses the answer for its bucket."""
    import sympy

    from pdyn.backends.cudagraphs.pad import PadPlan, padded_sizes
    from pdyn.shapes.graph_meta import SymbolBinding
    from pdyn.sources import LocalSource

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    plan = PadPlan({s0: SymbolBinding(0, 0, LocalSource("x"))}, {0: [(0, s0)]}, {}, [[(0, s0)]],
                   facts=[sympy.Le(s0, 12)])
    calls = []
    real_subs = sympy.Le.subs
    monkeypatch.setattr(sympy.Le, "subs", lambda self, *a: calls.append(a) or real_subs(self, *a))
    sizes = [padded_sizes(plan, [torch.empty(n, 2)], None)[s0] for n in (5, 6, 7, 5, 13)]
    assert sizes == [(5, 8), (6, 8), (7, 8), (5, 8), (13, 13)]   # 13 -> 16 would break s0 <= 12
    assert len(calls) == 2   # the bucket 8 once, the bucket 16 once
