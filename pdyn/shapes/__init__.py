"""shapes: see docs/architecture.md."""
