"""The jagged-features benchmark's --quick mode runs (pdyn and torch.compile on 50 features) and
pdyn traces them as one graph, compiled once, matching eager."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).parent.parent


def test_jagged_features_quick_mode_compiles_once_and_matches_eager():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}  # this checkout's pdyn, not an installed one
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "jagged_features.py"), "--quick"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in result.stdout.splitlines() if line.startswith("| pdyn") or line.startswith("| torch")}
    assert set(rows) == {"pdyn", "torch.compile"}, result.stdout
    first, cpu, trace, compiles, graphs, breaks, same = rows["pdyn"]
    assert (compiles, graphs, breaks, same) == ("1", "1", "0", "True"), result.stdout
    assert 0 < float(trace) <= float(first)
    assert rows["torch.compile"][-1] == "True"
