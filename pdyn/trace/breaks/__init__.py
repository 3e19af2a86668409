"""A graph break's frame code: the trace stopped at the break, what crosses to the step and resume
functions (stack values, live locals, cells, the sizes they carry), the blocks re-entered and the
callee of a break inside an inlined call. hook/ calls `resume.break_frame_code` and nothing else.
"""
