"""benchmarks/distributed_gpu.py --smoke under torchrun, two ranks on gloo: the script the lead runs on
two GPUs cannot rot. pdyn + DDP ends at eager DDP's loss with one graph, its backward, one compile;
with --overlap, each column says when its bucket all-reduces launched."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def test_distributed_benchmark_smoke_under_torchrun() -> None:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    result = subprocess.run([*torchrun, str(ROOT / "benchmarks" / "distributed_gpu.py"), "--smoke", "--steps", "2",
                             "--overlap"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {line.split("|")[2].strip(): line.split("|") for line in result.stdout.splitlines()
            if line.startswith("| gpt2")}
    assert set(rows) == {"eager", "pdyn"}, result.stdout
    assert float(rows["pdyn"][7]) < 1e-4  # final loss against eager DDP's
    assert rows["pdyn"][9].strip().split("/")[:4] == ["1", "1", "1", "0"]  # graphs/backward_graphs/compiles/on torch
    launches = [line for line in result.stdout.splitlines() if "all-reduces launched" in line]
    assert [line.split(":")[0] for line in launches] == ["eager", "pdyn"], result.stdout
