"""Shapes: the ShapeEnv of one trace (symbols, hints, ranges, pins), exact float arithmetic on
sizes, the trace plan, and the size stamps a backend reads (graph_meta). See docs/architecture.md."""
