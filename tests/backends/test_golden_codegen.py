"""Generated Triton code as golden text: one kernel function and its wrapper per kernel family
(pointwise, 2-D tiled pointwise, persistent, looped and split reductions, scan), so that a change in what
the backend generates shows as a readable diff of tests/backends/golden/<family>.txt.

Regenerate all of them after an intended change, then read the diff:

    PDYN_UPDATE_GOLDEN=1 python -m pytest -q tests/backends/test_golden_codegen.py

The text is that of Triton's interpreter mode (no GPU), where the whole suite runs here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from tests.backends.util import check, randn

GOLDEN = Path(__file__).parent / "golden"

# family -> (program, inputs of its one compile, the kernel function of that family in the module)
FAMILIES: dict[str, tuple[Callable[..., Any], Callable[[], tuple], str]] = {
    "pointwise": (lambda x, y: torch.sigmoid(x * y) + 1, lambda: (randn(6, 8), randn(8)), "kernel"),
    "persistent_reduction": (lambda x: torch.softmax(x, -1), lambda: (randn(6, 8),), "kernel_persistent"),
    "looped_reduction": (lambda x: x.abs().amax(-1), lambda: (randn(4, 5000),), "kernel_looped"),
    "split_reduction": (lambda x: x.sum(0), lambda: (randn(5000, 3),), "kernel_split"),
    "tiled_pointwise": (lambda x, y: (x.t() + y) * 0.5, lambda: (randn(6, 4), randn(4, 6)), "kernel"),
    "scan": (lambda x: torch.cumsum(x, -1), lambda: (randn(4, 5000).abs(),), "kernel_looped"),
}


def kernel_function(module_source: str, name: str) -> str:
    """The `@triton.jit` function `name` of a generated kernel module, decorator included (the
    module's shared helpers, the same in every module, are left out)."""
    blocks = re.split(r"\n(?=@triton\.jit)", module_source)
    found = [b for b in blocks if re.search(rf"^def {name}\(", b, re.MULTILINE)]
    assert len(found) == 1, f"no single function {name} in:\n{module_source}"
    return found[0].rstrip() + "\n"


def generated_text(family: str) -> str:
    fn, inputs, name = FAMILIES[family]
    graph = check(fn, inputs(), kernels=1).last
    return (f"# kernel function {name} (kernel0)\n{kernel_function(graph.kernel_sources[0], name)}\n"
            f"# wrapper\n{graph.wrapper_source.rstrip()}\n")


def assert_golden(family: str, actual: str) -> None:
    """`actual` equals golden/<family>.txt, or with PDYN_UPDATE_GOLDEN=1 becomes it."""
    path = GOLDEN / f"{family}.txt"
    if os.environ.get("PDYN_UPDATE_GOLDEN") == "1":
        path.write_text(actual)
        return
    expected = path.read_text() if path.exists() else "(no golden file yet)\n"
    assert actual == expected, (f"generated code for {family} differs from {path} "
                                f"(PDYN_UPDATE_GOLDEN=1 rewrites it):\n{actual}")


@pytest.mark.skipif(torch.cuda.is_available(), reason=(
    "the golden text is the code generated for Triton's interpreter (CPU); on a GPU the wrapper also "
    "makes the graph's device current and a few ops are spelled with libdevice"))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_generated_kernel_and_wrapper_are_golden(family: str):
    assert_golden(family, generated_text(family))


def test_kernel_function_takes_one_function_with_its_decorator():
    source = ("import triton\n\n@triton.jit\ndef _helper(a):\n    return a\n\n\n"
              "@triton.jit(do_not_specialize=['n'])\ndef kernel_split(p, n):\n    pass\n\n\n"
              "@triton.jit\ndef kernel_looped(p):\n    pass\n")
    expected = "@triton.jit(do_not_specialize=['n'])\ndef kernel_split(p, n):\n    pass\n"
    assert kernel_function(source, "kernel_split") == expected
    with pytest.raises(AssertionError, match="no single function kernel"):
        kernel_function(source, "kernel")
