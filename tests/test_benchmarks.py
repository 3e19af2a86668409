"""The GPU benchmark's --quick mode runs everywhere (kernels under Triton's interpreter here), so
the script that produces the GPU tables of docs/benchmarks.md cannot rot unnoticed."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).parent.parent


def test_gpu_benchmark_quick_mode_runs_and_compiles_once():
    skip = "torch.compile(dynamic=False),torch.compile(dynamic=True)"  # inductor's CPU compile is slow
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--quick", "--only", "softmax",
                             "--skip", skip], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {line.split("|")[2].strip(): line for line in result.stdout.splitlines() if line.startswith("| softmax")}
    assert set(rows) == {"eager", "torch.compile(dynamic=False)", "torch.compile(dynamic=True)", "pdyn"}
    assert "error" not in result.stdout
    assert rows["pdyn"].split("|")[5].strip() == "1"  # one compile across five sizes


def test_models_benchmark_quick_mode_runs_every_frontend_and_agrees_with_eager():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "models.py"), "--quick", "--only",
                             "multihead_attention"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| multihead_attention")]
    assert [row[2].strip() for row in rows] == ["eager", "pdyn", "torch.compile(dynamic=None)",
                                                "torch.compile(dynamic=True)"]
    for row in rows[1:]:  # counts and times filled in: no frontend raised or differed from eager
        assert row[3].strip().isdigit() and float(row[-2]) > 0, row


def test_models_gpu_quick_mode_runs_pdyn_with_the_cache_on_and_agrees_with_eager():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "models_gpu.py"), "--quick", "--only", "gpt2",
                             "--columns", "eager,pdyn"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| error:" not in result.stdout, result.stdout
    pdyn_rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| pdyn |")]
    forward, generate = pdyn_rows  # the forward table's row, then generate()'s
    # max error against eager, fp32: 0 on an idle machine; a loaded one (CI's workers beside this
    # process) gave 9.3e-07 once, the CPU's thread pool summing the same matmul in another order
    assert float(forward[5]) < 1e-5
    assert generate[5].strip() == "True"  # the same tokens as eager (after the 2nd and 3rd tokens/s)


def test_training_benchmark_smoke_mode_trains_with_pdyn_and_matches_eagers_loss():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_gpu.py"), "--smoke", "--only", "llama",
                             "--steps", "2"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {line.split("|")[2].strip(): line.split("|") for line in result.stdout.splitlines()
            if line.startswith("| llama")}
    assert set(rows) == {"eager", "pdyn"}
    pdyn_row = rows["pdyn"]
    assert float(pdyn_row[7]) < 1e-4  # final loss against eager's
    assert pdyn_row[8].strip() == ""  # kernels per step: counted on the GPU only
    assert pdyn_row[9].strip().split("/")[:3] == ["1", "1", "1"]  # one graph, its backward, one compile


def test_identical_layers_benchmark_runs_and_compiles_twice_for_any_depth():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "identical_layers.py"), "--repeats", "1"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert [row[0] for row in rows] == ["2", "24"]
    assert all(row[-3:] == ["2", "2", "2"] for row in rows), result.stdout   # pdyn compiles, graphs; torch.compile's


def test_families_benchmark_smoke_mode_runs_pdyn_on_each_family_and_agrees_with_eager():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "families.py"), "--smoke", "--columns", "pdyn"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {line.split("|")[1].strip(): line.split("|") for line in result.stdout.splitlines()
            if line.startswith("| ") and line.split("|")[2].strip() == "pdyn"}
    assert set(rows) == {"moe", "ssm", "vit"}
    for row in rows.values():  # counts and times filled in: pdyn neither raised nor differed from eager
        assert row[3].strip().isdigit() and float(row[-2]) > 0, row
    assert rows["vit"][3:5] == [" 1 ", " 0 "]   # the windowed vision transformer: one graph, no break
