"""Trackers of single values: constants, symbolic ints, ranges, closure cells, deleted attributes, numpy values."""
