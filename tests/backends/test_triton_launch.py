"""Run-time choices of the Triton launcher: split reductions picked by the actual sizes (one compile
across sizes), block sizes per size, and the bound launcher path."""

from __future__ import annotations

import types

import pytest
import torch

from pdyn.backends.triton import runtime
from tests.backends.util import check, randn


def _variants(rec, calls):
    """Which reduction variant each call's sizes pick, from the launcher's own choice."""
    return [runtime.reduction_config(x, r, inner, True)[0] for x, r, inner in calls]


def test_column_sum_splits_on_long_reduction_and_not_on_short():
    rec = check(lambda x: x.sum(0), (randn(8, 3),), (randn(5000, 3),), (randn(300, 5),), (randn(4100, 70),),
                kernels=1)
    launcher = rec.last.launchers[0]
    assert launcher.finish is not None and "kernel_split" in rec.last.kernel_sources[0]
    assert runtime.reduction_config(3, 5000, False, True)[0] == "split"
    assert runtime.reduction_config(3, 8, False, True)[0] == "persistent"
    assert runtime.reduction_config(1 << 20, 5000, False, True)[0] == "looped"


def test_many_long_rows_take_a_row_per_program():
    # (variant, XBLOCK, RBLOCK, num_warps, chunks): 4 rows per block at 4k rows, one from 16k
    assert runtime.reduction_config(4096, 1024, True, True)[:4] == ("persistent", 4, 1024, 4)
    assert runtime.reduction_config(16384, 1024, True, True)[:4] == ("persistent", 1, 1024, 4)
    assert runtime.reduction_config(16384, 256, True, True)[1] > 1  # short rows keep several per block


@pytest.mark.parametrize("name,fn", [
    ("sum_all", lambda x: x.sum()), ("amax0", lambda x: x.amax(0)), ("amin_all", lambda x: x.amin()),
    ("prod0", lambda x: (x * 0.01 + 1).prod(0)), ("sum_keepdim0", lambda x: x.sum(0, keepdim=True)),
    ("sum_prologue", lambda x: (x * x + 1).sum(0)),
])
def test_split_reductions_match_eager(name, fn, monkeypatch):
    monkeypatch.setattr(runtime.launch_config, "SPLIT_MIN_R", 16)  # small sizes take the split path too
    check(fn, (randn(40, 3),), (randn(700, 5),), (randn(3, 4),), kernels=1)


def test_split_reduction_of_ints_and_nan():
    x = randn(3000, 2)
    x[1234, 1] = float("nan")
    check(lambda x: (x.amax(0), x.amin(0)), (randn(3000, 2),), (x,), compiles=1)
    check(lambda x: (x > 0).sum(0), (randn(2500, 3),), (randn(9, 3),))


def test_split_chunks_cover_the_reduction_exactly():
    for rnumel in (2048, 2049, 5000, 65537):
        variant, xblock, rblock, _, chunks = runtime.reduction_config(4, rnumel, False, True)
        assert variant == "split"
        rchunk = runtime.cdiv(runtime.cdiv(rnumel, chunks), rblock) * rblock
        assert rchunk % rblock == 0 and (chunks - 1) * rchunk < rnumel <= chunks * rchunk


def test_no_split_where_an_epilogue_follows_the_reduction():
    rec = check(lambda x: x - x.mean(0, keepdim=True), (randn(9, 6),), (randn(3000, 2),), kernels=1)
    assert rec.last.launchers[0].finish is None


def test_pointwise_blocks_follow_the_actual_size():
    assert runtime.pointwise_config(64)[0] == 128
    assert runtime.pointwise_config(1 << 16)[0] == 512
    assert runtime.pointwise_config(1 << 24)[0] == 1024
    check(lambda x: torch.sigmoid(x) * 2, (randn(3, 4),), (randn(100, 100),), kernels=1)


def test_launcher_is_bound_once_and_called_directly():
    """The wrapper calls a launcher bound at compile time; no Triton call text in the wrapper."""
    rec = check(lambda x, y: torch.relu(x * y), (randn(4, 4), randn(4)), (randn(6, 4), randn(4)))
    src = rec.last.wrapper_source
    assert "kernel0_launch((" in src and "[(" not in src
    assert len(rec.last.launchers) == 1


def _fake_fast(stream: int) -> object:
    """Stands in for runtime.fast_launch.FastLaunch where there is no GPU: device 0, a fixed stream, no launch
    hooks (tests may set them on the Knobs class), Triton's CompiledKernel.run path."""

    class Knobs:
        launch_enter_hook = launch_exit_hook = None

    class Fast:
        device = staticmethod(lambda: 0)
        knobs = Knobs()
        hooks = runtime.fast_launch.FastLaunch.hooks
        direct = False

    fast = Fast()
    fast.stream = lambda device: stream  # type: ignore[attr-defined]
    return fast


def test_fast_path_reuses_the_compiled_launcher(monkeypatch):
    """Without a GPU, simulate Triton's compiled kernel: the first launch goes through fn[grid]
    (binding, compile), later ones call the cached launcher with the same arguments in order."""
    calls = []

    class Compiled:
        function, packed_metadata = "fn", "meta"

        def run(self, *args):
            calls.append(("fast", args))

    class Fn:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                calls.append(("slow", grid, args, kwargs))
                return Compiled()
            return launch

    fast = _fake_fast(stream=7)
    Knobs = type(fast.knobs)
    monkeypatch.setattr(runtime.launch, "_FAST", fast)
    launcher = runtime.KernelLauncher.__new__(runtime.KernelLauncher)
    launcher.interpret, launcher.compiled, launcher.plans, launcher.fast_launches = False, {}, {}, 0
    launcher.ready, launcher.twins, launcher.changing, launcher.changing_positions = {}, {}, {}, {}
    launcher.configs = {}
    fn, t = Fn(), torch.empty(16)
    launcher.functions = {"pointwise": fn}
    launcher.pointwise((t,), (5,), 16)
    launcher.pointwise((t,), (6,), 16)
    assert calls[0][0] == "slow" and calls[0][3] == {"XBLOCK": 128, "INDEX64": False, "num_warps": 4}
    assert calls[1] == ("fast", (1, 1, 1, 7, "fn", "meta", None, None, None, t, 6, 16, 128, False))
    assert launcher.fast_launches == 1
    launcher.pointwise((t[1:],), (6,), 16)  # misaligned: Triton's path
    launcher.pointwise((t,), (2**31,), 16)  # an i64 argument: same
    launcher.pointwise((t,), (32,), 16)  # another specialization (multiple of 16): Triton's, once
    launcher.pointwise((t,), (48,), 16)
    assert [c[0] for c in calls[2:]] == ["slow", "slow", "slow", "fast"]
    Knobs.launch_enter_hook = types.SimpleNamespace(calls=[print])  # a profiler's hook: Triton's path
    launcher.pointwise((t,), (48,), 16)
    Knobs.launch_enter_hook = types.SimpleNamespace(calls=[])  # an empty HookChain: bound path
    launcher.pointwise((t,), (48,), 16)
    assert [c[0] for c in calls[6:]] == ["slow", "fast"]

    def wrong_arity(*args):
        raise TypeError("function takes exactly 12 arguments")

    monkeypatch.setattr(Compiled, "run", staticmethod(wrong_arity))
    launcher.compiled.clear(), launcher.plans.clear()
    launcher.pointwise((t,), (48,), 16)
    launcher.pointwise((t,), (48,), 16)  # a launcher of another shape: Triton's path from then on
    assert [c[0] for c in calls[8:]] == ["slow", "slow"] and runtime.launch._FAST is None


@pytest.mark.skipif(torch.cuda.is_available(), reason=(
    "simulates the bound launcher with interpreted kernels; on a GPU the first call already runs "
    "compiled, and benchmarks/gpu.py reports the launch path it took"))
def test_wrapper_calls_take_the_bound_launcher_after_the_first(monkeypatch):
    """Every later call of a compiled graph (same or another size) launches through the bound
    launcher once each variant has been launched once, and results stay right."""
    launched = []

    class Compiled:
        function, packed_metadata = "fn", "meta"

        def __init__(self, fn, grid, kwargs):
            self.fn, self.grid, self.kwargs = fn, grid, kwargs

        def run(self, g0, g1, g2, stream, function, metadata, launch_metadata, enter, leave, *args):
            # the bound launcher gets the constexprs last, in the kernel's parameter order
            names = list(self.kwargs)
            consts = args[len(args) - len(names) + 1:]  # num_warps is not an argument
            kwargs = dict(zip([n for n in names if n != "num_warps"], consts))
            self.fn[(g0, g1, g2)](*args[:len(args) - len(consts)], **kwargs,
                                  num_warps=self.kwargs["num_warps"])
            launched.append("fast")

    real_slow = runtime.KernelLauncher._slow

    def slow(fn, grid, ptrs, ints, consts, warps, names=None):
        real_slow(fn, grid, ptrs, ints, consts, warps, names)
        launched.append("slow")
        names = names or (("XBLOCK", "INDEX64") if len(consts) == 2 else ("XBLOCK", "RBLOCK", "INDEX64"))
        return Compiled(fn, grid, {**dict(zip(names, consts)), "num_warps": warps})

    monkeypatch.setattr(runtime.launch, "_FAST", _fake_fast(stream=0))
    monkeypatch.setattr(runtime.KernelLauncher, "_slow", staticmethod(slow))
    rec = check(lambda x, y: torch.softmax(x * y, -1), (randn(4, 8), randn(8)), compiles=None)
    for launcher in rec.last.launchers:
        launcher.interpret = False  # the kernels still run interpreted, through Compiled.run
    f = rec.last.call
    for shape in [(4, 8), (4, 8), (6, 8), (6, 8), (4, 8)]:
        x, y = randn(*shape), randn(8)
        torch.testing.assert_close(f(x, y)[0], torch.softmax(x * y, -1), rtol=1e-4, atol=1e-5)
    # the compile-time call (interpreted) and the first call go through Triton; later calls of
    # either size take the bound launcher, since one variant serves both sizes
    assert launched == ["slow", "slow", "fast", "fast", "fast", "fast"]
    assert rec.last.launchers[0].fast_launches == 4

    # a split column sum: both stages take bound launchers after their first launch
    launched.clear()
    rec = check(lambda x: x.sum(0), (randn(2100, 3),), compiles=None)
    launcher = rec.last.launchers[0]
    launcher.interpret = False
    for rows in (2100, 2100, 2200):
        x = randn(rows, 3)
        torch.testing.assert_close(rec.last.call(x)[0], x.sum(0), rtol=1e-4, atol=1e-4)
    assert launched == ["slow"] * 4 + ["fast"] * 4 and launcher.fast_launches == 4


def test_dense_indices_use_the_flat_index():
    """A contiguous walk loads at xindex (rindex), with no per-element division or modulo, so
    Triton can vectorize; broadcast operands still index their own dims."""
    rec = check(lambda x, y: torch.sigmoid(x * y + 1), (randn(4, 8), randn(8)), (randn(6, 8), randn(8)))
    src = rec.last.kernel_sources[0]
    assert "tl.load(ptr0 + (xindex)" in src and "tl.store(ptr2 + (xindex)" in src
    rec = check(lambda x: torch.softmax(x, -1), (randn(2, 3, 8),), (randn(3, 5, 8),), kernels=1)
    assert "tl.load(ptr0 + (rindex + xindex*ks" in rec.last.kernel_sources[0]
    check(lambda x: x.sum((1, 2)), (randn(2, 3, 8),), (randn(3, 5, 7),))  # two reduced dims: rindex
    check(lambda x: x.transpose(0, 1) * 2, (randn(3, 4),), (randn(5, 6),))  # not dense: per dim


def test_sizes_are_specialized_by_triton_and_listed_when_they_may_change():
    """Triton checks each size for a multiple of 16 per call (vector loads); the sizes that are not
    one on every call (here all: both dims of x are free) are listed for the launcher's dynamic
    twin (tests/backends/test_triton_specialization.py); the split chunk length is never specialized."""
    rec = check(lambda x: x.sum(0), (randn(9, 6),), (randn(3000, 4),), compiles=None)
    src = rec.last.kernel_sources[0]
    assert "do_not_specialize=['rchunk']" in src and src.count("@triton.jit\ndef kernel_") == 2
    assert src.count("DYNAMIC_kernel_persistent = ('ks0', 'xnumel', 'rnumel')\n") == 1
    assert runtime.int_spec((1, 32, 7, 0)) == (1, 16, 0, 16)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_split_reduction_in_low_precision_accumulates_in_fp32(dtype):
    check(lambda x: x.sum(0), (randn(2100, 3, dtype=dtype),), (randn(5, 3, dtype=dtype),))


def test_launch_tables_pick_by_size():
    """The configuration rules tuned on the H100 (benchmarks/launch_configs.py): short strided
    reductions narrow their column blocks instead of splitting; persistent reductions with few
    blocks double their warps; the split's second stage loads 32 chunks at a time."""
    variant, xblock, rblock, warps, chunks = runtime.reduction_config(1024, 256, False, True)
    assert variant == "looped" and xblock == 8 and runtime.cdiv(1024, xblock) >= runtime.launch_config.OUTER_MIN_PROGRAMS
    assert rblock == 256 and chunks == 1
    assert runtime.reduction_config(1024, 16384, False, True)[:3] == ("split", 64, 64)
    few = runtime.reduction_config(256, 1024, True, True)
    many = runtime.reduction_config(4096, 1024, True, True)
    assert few[0] == many[0] == "persistent" and few[3] == 2 * many[3]
    assert runtime.finish_config(1024, 64) == (16, 32) and runtime.finish_config(3, 5) == (16, 32)


@pytest.mark.parametrize("rows", [1, 31, 32, 33, 100])
def test_split_second_stage_covers_every_chunk_count(rows, monkeypatch):
    """Chunk counts below, at and above the second stage's 32-chunk load, for each combine."""
    monkeypatch.setattr(runtime.launch_config, "SPLIT_MIN_R", 16)
    monkeypatch.setattr(runtime.launch_config, "SPLIT_TARGET_PROGRAMS", 4096)
    x = randn(rows * 128 + 5, 3)
    check(lambda x: (x.sum(0), x.amax(0), x.amin(0), (x * 0.001 + 1).prod(0)), (x,), compiles=None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the direct C launch is Triton's CUDA launcher")
def test_gpu_calls_launch_directly_after_the_first():
    """On a GPU with Triton's known launcher layout, a size's second call goes straight to the C
    launcher with a prepared entry, and the results stay right for misaligned inputs (which take
    Triton's own path) and new sizes."""
    rec = check(lambda x: torch.softmax(x * 2, -1), (randn(4, 8),), (randn(4, 8),), (randn(6, 8),),
                (randn(6, 8),))
    launcher = rec.last.launchers[0]
    if not runtime.launch._fast().direct:
        pytest.skip("this Triton's launcher has another layout: CompiledKernel.run is used")
    assert launcher.fast_launches >= 2 and len(launcher.ready) == 2
    x = randn(33)[1:].view(4, 8)  # contiguous but 4 bytes off alignment: Triton's path, still right
    before = launcher.fast_launches
    torch.testing.assert_close(rec.last.call(x)[0], torch.softmax(x * 2, -1))
    assert launcher.fast_launches == before
