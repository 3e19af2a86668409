"""The README and docs/ say only what is there: every path they name exists, every link stays in the
repository (or is a public web URL) and reaches a page and heading that exist, the README stays
short, its example prints what it shows, and its picture is what the benchmark table draws."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a path from the repository root: pdyn/hook/eval_frame.py, tests/e2e/, pdyn/ops/shape_rules*.py
ROOTED = re.compile(r"(?<![\w./-])((?:pdyn|tests|benchmarks|examples)/[\w./*-]*[\w*/])")
# a backticked path relative to some package: `trace/variables/builder.py`, `runtime/launch.py`
RELATIVE = re.compile(r"`([\w*-]+(?:/[\w*.-]+)*/(?:[\w*-]+\.py)?)`")
GENERATED = {"fuzz_failures/"}  # written by `make fuzz`, not part of the tree
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose(page: pathlib.Path) -> str:
    """The page without its fenced code blocks (shown output, not claims about the tree)."""
    return re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)


def exists(path: str) -> bool:
    return any(ROOT.glob(path.rstrip("/"))) if "*" in path else (ROOT / path).exists()


def anchors(page: pathlib.Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as '-'."""
    headings = re.findall(r"^#+ (.*)$", prose(page), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_a_page_names_exists(page):
    text = page.read_text()
    missing = [p for p in ROOTED.findall(text) if not exists(p)]
    package_dirs = [d for d in (ROOT / "pdyn").rglob("*") if d.is_dir() and d.name != "__pycache__"]
    for path in RELATIVE.findall(prose(page)):
        if path not in GENERATED and not ROOTED.fullmatch(path) and not exists(path) and not any(
                any(base.glob(path.rstrip("/"))) for base in [ROOT / "pdyn", *package_dirs]):
            missing.append(path)
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_stay_in_the_repository_and_reach_their_target(page):
    text = page.read_text()
    assert "../shared" not in text and "/work/" not in text, f"{page.name} names a path outside the repository"
    for target in LINK.findall(prose(page)):
        if re.match(r"https?://", target):
            continue
        assert ":" not in target.split("#")[0], f"{page.name}: {target} is neither a repository path nor a web URL"
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert linked.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: {target} names no heading of {linked.name}"


def test_readme_is_at_most_12_kb_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name}" in readme, f"README does not link docs/{page.name}"


def test_readme_example_prints_what_the_readme_shows(tmp_path):
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"^## Example\n.*?```python\n(.*?)```", readme, flags=re.S | re.M).group(1)
    shown = re.search(r"```python\n.*?```\s*```text\n(.*?)```", readme, flags=re.S).group(1)
    (tmp_path / "example.py").write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PDYN_LOGS": "recompiles"}
    run = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    printed = run.stdout.strip().splitlines()
    logged = [line.replace(f"{tmp_path}{os.sep}", "") for line in run.stderr.splitlines()
              if line.startswith("[pdyn.")]
    assert [line for line in shown.splitlines() if not line.startswith(("$", "[pdyn."))][-1:] == printed
    assert [line for line in shown.splitlines() if line.startswith("[pdyn.")] == logged


def test_readme_picture_is_what_the_benchmark_table_draws():
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plot_readme.py"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_environment_variable_pdyn_reads_is_documented():
    read = {v for path in (ROOT / "pdyn").rglob("*.py") for v in re.findall(r"PDYN_[A-Z_]+", path.read_text())}
    documented = "".join(page.read_text() for page in PAGES)
    assert read and not {v for v in read if v not in documented}
