import torch

from tests.helpers import check


def test_relu_matmul_compiles_one_graph():
    check(lambda x, y: torch.relu(x @ y) + 1, torch.randn(3, 4), torch.randn(4, 5))
