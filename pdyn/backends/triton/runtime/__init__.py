"""Run-time support for generated wrappers, one module per job:

- `cache`: kernel modules cached per source text on disk and in process; Triton's interpreter;
- `launch_config`: launch-time choices from the actual sizes (variant, blocks, warps, index width);
- `split_finish`: the second-stage kernel of a split reduction;
- `launch`: `KernelLauncher` and its `LaunchPlan`s; `fast_launch`: Triton's C launcher, called directly;
- `precompile`: the first call's kernels compiled ahead, in a thread pool;
- `torch_calls`: the allocator, contiguous copies and `TorchOp` fallbacks.

Wrappers and the backend use the names re-exported here. Tests that patch a table or the fast
path patch the module that owns it (`runtime.launch_config.SPLIT_MIN_R`, `runtime.launch._FAST`).
"""

from __future__ import annotations

from pdyn.backends.triton.runtime import (
    cache, fast_launch, launch, launch_config, precompile, split_finish, torch_calls,
)
from pdyn.backends.triton.runtime.cache import cache_dir, load_kernel, prepare_interpreter, use_interpreter
from pdyn.backends.triton.runtime.launch import KernelLauncher, LaunchPlan
from pdyn.backends.triton.runtime.launch_config import (
    INT32_MAX, cdiv, finish_config, int_spec, needs_int64, next_pow2, pointwise_config, reduction_config, tile_config,
)
from pdyn.backends.triton.runtime.torch_calls import TorchOp, allocator, check_index, contiguous

__all__ = [
    "cache", "fast_launch", "launch", "launch_config", "precompile", "split_finish", "torch_calls",
    "cache_dir", "load_kernel", "prepare_interpreter", "use_interpreter", "KernelLauncher", "LaunchPlan",
    "INT32_MAX", "cdiv", "finish_config", "int_spec", "needs_int64", "next_pow2", "pointwise_config",
    "reduction_config", "tile_config", "TorchOp", "allocator", "check_index", "contiguous",
]
