"""Iterators and generators: made in the trace (live, itertools, map/filter), received by a frame, or carried across a break."""
