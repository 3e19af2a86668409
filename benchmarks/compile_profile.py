"""Where pdyn's compile time goes on the GPU (issue 15): the suite's GPT-2 and Llama at 6 layers,
512 wide, fp16, over a serving-like sequence of calls (benchmarks/model_cases.py). Per model and per setting
of PDYN_TRITON_COMPILE_THREADS (the pool that compiles the first call's kernels ahead): the first
call (s), graphs, kernel launches and distinct kernel sources of the first call, Triton compiles
(count, summed seconds, those made ahead), and the compiles and seconds of the 19 later calls.
Each setting starts cold: a fresh Triton cache dir, pdyn cache dir and in-process module cache.

    python benchmarks/compile_profile.py [--only gpt2,llama] [--threads 0,16] [--calls 20]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import sys
import tempfile
import time
from typing import Any

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from model_cases import Size, cases  # noqa: E402

import pdyn  # noqa: E402
from pdyn.backends.triton import runtime, triton_backend  # noqa: E402

SIZE = Size(layers=6)
from pdyn.backends.triton.runtime import precompile  # noqa: E402

COMPILES: list[float] = []  # seconds of each triton.compile call (a cache hit too: ~ms)


def hook_triton_compile() -> None:
    """Time every triton.compile (JITFunction binds it when a kernel module is loaded)."""
    import triton.compiler as package
    import triton.compiler.compiler as compiler

    original = compiler.compile

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            COMPILES.append(time.perf_counter() - t0)

    for module in (package, compiler):  # NOTE: JITFunction imports it from the package when it binds
        if getattr(module, "compile", None) is original:
            module.compile = timed


def profile(name: str, threads: int, inputs: list[dict[str, Any]]) -> str:
    cold = tempfile.mkdtemp(prefix=f"pdyn_profile_{name}_{threads}_")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cold, "triton")
    os.environ["PDYN_TRITON_COMPILE_THREADS"] = str(threads)
    pdyn.config.cache_dir = os.path.join(cold, "pdyn")
    runtime.cache._MODULES.clear()  # NOTE: else kernels keep their binaries from the last setting
    pdyn.reset()
    torch.manual_seed(0)
    model = cases(SIZE)[name].build(SIZE).to("cuda", torch.float16).eval()
    graphs: list[Any] = []
    backend_s = [0.0]

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        t0 = time.perf_counter()
        compiled = triton_backend(gm, example_inputs)
        backend_s[0] += time.perf_counter() - t0
        graphs.append(getattr(compiled, "pdyn_triton", None))
        return compiled

    fn = pdyn.optimize(model.forward, backend=backend)
    del COMPILES[:]
    ahead = dict(precompile.STATS)
    with torch.no_grad():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(**inputs[0])
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        first_compiles = list(COMPILES)
        made_ahead = precompile.STATS["compiled"] - ahead["compiled"]
        ahead_s = precompile.STATS["seconds"] - ahead["seconds"]
        t0 = time.perf_counter()
        for kwargs in inputs[1:]:
            fn(**kwargs)
        torch.cuda.synchronize()
        rest = time.perf_counter() - t0
    later = COMPILES[len(first_compiles):]
    real = [s for s in first_compiles if s > 0.02]
    sources = [s.split("\n", 1)[1] for g in graphs if g for s in g.kernel_sources]
    launches = sum(g.kernel_count for g in graphs if g)
    return (f"| {name} | {threads} | {first:.2f} | {backend_s[0] - ahead_s:.2f} | {ahead_s:.2f} | {len(graphs)} | "
            f"{launches} | {len(set(sources))} | {len(real)} ({made_ahead} ahead) | {sum(first_compiles):.2f} | "
            f"{sum(s > 0.02 for s in later)} | {sum(later):.2f} | {rest:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="gpt2,llama")
    parser.add_argument("--threads", default="0,16")
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    hook_triton_compile()
    with tempfile.TemporaryDirectory() as warm:  # Triton's and CUDA's one-time start, out of every row
        os.environ["TRITON_CACHE_DIR"] = warm
        pdyn.optimize(lambda x: x * 2 + 1, backend="triton")(torch.ones(8, device="cuda"))
        torch.cuda.synchronize()
    rng = random.Random(0)
    calls = [(rng.randint(1, 8), rng.randint(8, 128)) for _ in range(args.calls)]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {os.cpu_count()} CPUs; calls {calls}")
    print("| model | threads | first call s | lowering s | compiling ahead s | graphs | kernels | kernel sources "
          "| Triton compiles (1st call) | their s (summed) | compiles, later calls | their s | later calls s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for name in args.only.split(","):
        inputs = [{k: v.to("cuda") for k, v in cases(SIZE)[name].inputs(b, s, i).items()}
                  for i, (b, s) in enumerate(calls)]
        torch.manual_seed(0)
        model = cases(SIZE)[name].build(SIZE).to("cuda", torch.float16).eval()
        with torch.no_grad():  # cuBLAS, SDPA and the allocator warm: the first setting pays no more
            for kwargs in inputs:
                model(**kwargs)
        del model
        for threads in (int(t) for t in args.threads.split(",")):
            print(profile(name, threads, inputs), flush=True)


if __name__ == "__main__":
    main()
