"""Graph breaks inside `torch.autocast` and `torch.inference_mode` blocks
(pdyn/trace/variables/contexts/amp_modes.py `exit_at_break`, amp_resume.py): the graph leaves the block at its
end, the step runs under the mode (the frame code enters it again), the resume function's graph
continues inside the block and leaves it where eager does. Values, dtypes and inference flags
against eager; the modes after the call as before; exact graphs, breaks and compiles."""

from __future__ import annotations

import torch

import pdyn
from tests.e2e.test_break_in_blocks import run

class Seen:
    last = None


def probe(y):
    """A callee that breaks (the caller's step runs it, optimized on its own) and records the mode
    it runs under, as its trace answers it: right only if the step runs under the block's mode."""
    Seen.last = (torch.is_autocast_enabled("cpu"), torch.is_inference_mode_enabled(), y.dtype)
    print("in the block")


def modes():
    return torch.is_autocast_enabled("cpu"), torch.is_inference_mode_enabled(), torch.is_grad_enabled()


def test_a_break_inside_autocast_resumes_inside_it():
    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            probe(y)
            z = y @ x
        return z, z.dtype, (z.float() @ x).dtype, torch.is_autocast_enabled("cpu")

    Seen.last = None
    before = modes()
    run(f, (torch.randn(4, 4),), (torch.randn(4, 4),),
        graphs=[["_enter_autocast", "matmul", "_exit_autocast"], ["matmul", "exit_resumed", "float", "matmul"]],
        breaks=3, compiles=5)  # f and its resume function; probe, its own break at print, its resume
    assert modes() == before
    assert Seen.last == (True, False, torch.bfloat16)


def test_a_break_inside_inference_mode_resumes_inside_it():
    def f(x):
        with torch.inference_mode():
            y = x * 2
            probe(y)
            z = y + 1
        return z, z.is_inference(), (x + 1).is_inference(), torch.is_grad_enabled()

    Seen.last = None
    before = modes()
    run(f, (torch.randn(3, requires_grad=True),), (torch.randn(3, requires_grad=True),),
        graphs=[["_enter_inference_mode", "mul", "_exit_inference_mode"], ["add", "exit_resumed", "add"]],
        breaks=3, compiles=5)
    assert modes() == before
    assert Seen.last == (False, True, torch.float32)


def test_nested_autocast_in_no_grad_with_a_break():
    def f(x):
        with torch.no_grad():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = x @ x
                pdyn.graph_break()
                z = y @ x
            w = z.float() * 2
        return w, w.requires_grad, z.dtype

    before = modes()
    run(f, (torch.randn(3, 3, requires_grad=True),), (torch.randn(3, 3, requires_grad=True),),
        graphs=[["_set_grad_enabled", "_enter_autocast", "matmul", "_exit_autocast"],
                ["matmul", "exit_resumed", "float", "mul", "_set_grad_enabled"]], breaks=1, compiles=2)
    assert modes() == before


def test_an_exception_from_the_step_leaves_the_mode():
    def f(x, fail):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            if fail:
                raise_it()
            z = y @ x
        return z

    def raise_it():
        pdyn.graph_break()
        raise ValueError("from the step")

    before = modes()
    pdyn.reset()
    opt = pdyn.optimize(f, backend="eager")
    x = torch.randn(2, 2)
    assert opt(x, False).dtype == torch.bfloat16
    try:
        opt(x, True)
    except ValueError as e:
        assert str(e) == "from the step"
    assert modes() == before
