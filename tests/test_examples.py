"""Every example runs (STYLE.md: examples are run in CI) and says its results match eager."""

import pathlib
import runpy

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_matches_eager(path, capsys):
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "matches eager: True" in out
    assert "matches eager: False" not in out


def test_demo_fits_one_screen_and_says_why_it_recompiled(capsys):
    """`make demo` is what a newcomer runs first: at most 30 lines, no guard source, and the
    recompile's failing guard named."""
    runpy.run_path(str(pathlib.Path(__file__).parent.parent / "examples" / "demo.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 30
    assert "def check(" not in out
    assert "recompiled: L['mask'] == None failed" in out
    assert "PDYN_LOGS=" in out
