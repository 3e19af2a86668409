"""Trace: the translator that runs bytecode symbolically over trackers, the fx graph it records
(output_graph), the per-trace context, opcode handlers and trackers. See docs/architecture.md."""
