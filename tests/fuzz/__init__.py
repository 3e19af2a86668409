"""pdyn's differential fuzzer: random programs run eagerly and under pdyn, compared strictly.

generator.py (with gen_core, gen_tensor, gen_python) makes programs, runner.py runs and classifies
them, reduce.py shrinks failures into pytest tests, campaign.py is the CLI (`python -m tests.fuzz`).
Nothing here imports torch at package import: the CLI sets TRITON_INTERPRET first where needed.
"""
