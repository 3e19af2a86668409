"""Tensors and torch's API: torch functions as graph nodes, queries of torch's state, autocast state, autograd.Function."""
