"""One-shot contract checks of requirements the stateful model does not exercise (routes, control
plane, grants, values, the wire), and the checks of the reference consumer (P17)."""
