"""Where the host time of one small call goes: eager against pdyn's Triton path, piece by piece.

On an 8x8 input the GPU work is nothing; the per-call time is all host work. This prints, per
workload, eager's call, pdyn's whole call, the generated wrapper alone, and the pieces of one
kernel launch (allocation, device and stream lookups, the bound launcher itself).

    python benchmarks/launch_overhead.py     # on the GPU machine
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpu  # noqa: E402

import pdyn  # noqa: E402
from pdyn.backends.triton import triton_backend  # noqa: E402


def per_call_us(fn: Callable[[], Any], n: int = 1000) -> float:
    return gpu.host_us(fn, n)


def main() -> None:
    cases = {name: (fn, make(8, 8)) for name, (fn, make) in gpu.workloads(torch.float32).items()}
    x = cases["softmax"][1][0]
    print("| workload | eager | pdyn | pdyn wrapper alone | pdyn, backend eager | kernels |")
    print("| --- | --- | --- | --- | --- | --- |")
    last = None
    with torch.no_grad():
        for name, (fn, args) in cases.items():
            compiled: list[Any] = []

            def backend(gm: Any, ex: list[Any]) -> Any:
                out = triton_backend(gm, ex)
                compiled.append(out.pdyn_triton)
                return out

            opt = pdyn.optimize(fn, backend=backend)
            opt(*args)
            call = compiled[0].call
            ref_eager = pdyn.optimize(fn, backend="eager")
            row = [per_call_us(lambda: fn(*args)), per_call_us(lambda: opt(*args)),
                   per_call_us(lambda: call(*args)), per_call_us(lambda: ref_eager(*args))]
            print(f"| {name} | " + " | ".join(f"{v:.2f} µs" for v in row) +
                  f" | {compiled[0].kernel_count} |", flush=True)
            last = compiled[0]
            if name == "softmax":
                print(compiled[0].wrapper_source)
                names = call.__globals__
                launch = names["kernel0_launch"]
                ptr_args = (args[0], torch.empty_like(args[0]))
                shape = args[0].shape
                print(f"kernel0_launch alone: {per_call_us(lambda: launch(ptr_args, (shape[1],), shape[0], shape[1])):.2f} µs")
    pieces(x, last)


def pieces(x: torch.Tensor, compiled: Any) -> None:
    from pdyn.backends.triton import runtime

    fast = runtime.launch._fast()
    print("\n| piece | µs |\n| --- | --- |")
    dev = fast.device()
    alloc = runtime.allocator(x.device)
    items: dict[str, Callable[[], Any]] = {
        "torch.empty_strided 8x8": lambda: torch.empty_strided((8, 8), (8, 1), dtype=torch.float32,
                                                                device=x.device),
        "torch.empty 8x8": lambda: torch.empty((8, 8), device=x.device),
        "pdyn allocator 8x8": lambda: alloc((8, 8), (8, 1), torch.float32),
        "torch._C._cuda_getDevice()": torch._C._cuda_getDevice,
        "x.shape": lambda: x.shape,
        "x.is_contiguous()": lambda: x.is_contiguous(),
        "x.data_ptr()": lambda: x.data_ptr(),
        "x.untyped_storage().nbytes()": lambda: x.untyped_storage().nbytes(),
        "driver get_current_device": fast.device,
        "driver get_current_stream": lambda: fast.stream(dev),
        "launch hooks check": fast.hooks,
        "torch.is_grad_enabled()": torch.is_grad_enabled,
        "torch.softmax 8x8": lambda: torch.softmax(x, -1),
        "x + x": lambda: x + x,
    }
    for name, fn in items.items():
        print(f"| {name} | {per_call_us(fn, n=5000):.3f} |", flush=True)
    print(f"\ndirect C launch: {fast.direct}")
    for launcher in compiled.launchers:
        for plan in launcher.plans.values():
            for ints, bound in plan.bound.items():
                run, function, metadata, enter, leave, device, direct = bound
                print(f"bound launcher has a direct entry: {direct is not None}")
                grid = plan.grid
                ptrs = tuple(torch.empty(64, device=x.device) for _ in range(8))[:_n_ptrs(launcher)]
                stream = fast.stream(device)
                via_python = lambda: run(grid[0], grid[1], grid[2], stream, function, metadata,  # noqa: E731
                                         None, enter, leave, *ptrs, *ints, *plan.constexprs)
                print(f"| CudaLauncher call ({len(ptrs)} pointers) | {per_call_us(via_python, n=5000):.3f} |")
                if direct is not None:
                    launch, coop, pdl = direct
                    addrs = [p.data_ptr() for p in ptrs]
                    c_only = lambda: launch(grid[0], grid[1], grid[2], stream, function, coop, pdl,  # noqa: E731
                                            None, None, metadata, None, None, None, *addrs, *ints, *plan.constexprs)
                    print(f"| C launch, integer pointers | {per_call_us(c_only, n=5000):.3f} |")
                return


def _n_ptrs(launcher: Any) -> int:
    import inspect

    fn = next(iter(launcher.functions.values()))
    params = list(inspect.signature(fn.fn).parameters)
    return sum(1 for p in params if p.startswith("ptr"))


if __name__ == "__main__":
    main()
