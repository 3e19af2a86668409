"""The model suite: transformers and torch.nn models built from small configs with random weights
(nothing downloaded), their inputs over a sequence of shapes, and the comparison of their outputs.
tests/models checks them under pdyn against eager; benchmarks/models.py times them."""
