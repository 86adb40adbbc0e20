"""Pure domain values at the bottom of the reference: values and their validation, errors,
canonical JSON, cursors, grants, principals, limits, request parsing, the clock and fault points.
Every layer above imports these; they import nothing of the layers above."""
