"""Bytecode: decoding code objects into pdyn's normalized instructions (every 3.11/3.12 difference
lives here) and building the step and resume code objects of graph breaks. See docs/architecture.md."""
