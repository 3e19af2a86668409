"""Nodes the backend sends to torch one by one (a node that reads or makes a CPU tensor on a GPU
machine, a node whose compile failed) keep the rest of the graph on kernels, also where the node
reads a multi-output value whole (a getitem of a torch call's tuple)."""

import operator
from typing import Any

import torch

import pdyn
from pdyn.backends.triton import _compile_with_retries, _reading_cpu_tensors
from tests.backends.util import DEVICE


def _max_then_scale(x):
    values, indices = torch.max(x.sin(), dim=1)
    return values * 2, indices + 1


def test_a_forced_getitem_of_a_multi_output_torch_call_runs_in_the_wrapper():
    compiled: list[Any] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]):
        forced = {n: "forced by the test" for n in gm.graph.nodes
                  if n.target is operator.getitem or n.target is torch.max}
        assert forced
        graph, reason = _compile_with_retries(gm, example_inputs, forced)
        assert graph is not None, reason
        compiled.append(graph)
        return graph.call

    f = pdyn.optimize(_max_then_scale, backend=backend)
    for n in (3, 5):
        x = torch.randn(n, 7, device=DEVICE)
        out, ref = f(x), _max_then_scale(x)
        torch.testing.assert_close(out[0], ref[0])
        assert torch.equal(out[1], ref[1])
    source = compiled[-1].wrapper_source
    assert "fallback: getitem" in source and compiled[-1].kernel_count >= 1  # sin, *2 and +1 stay kernels


def test_nodes_off_the_gpu_are_found_per_node_and_getitems_are_left_to_the_lowering():
    graphs: list[torch.fx.GraphModule] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]):
        graphs.append(gm)
        return gm.forward

    pdyn.optimize(_max_then_scale, backend=backend)(torch.randn(3, 7))  # CPU tensors: every node is off the GPU
    forced = _reading_cpu_tensors(graphs[-1])
    computing = [n for n in graphs[-1].graph.nodes if n.op in ("call_function", "call_method")]
    assert {n for n in computing if n.target is not operator.getitem} == set(forced)
