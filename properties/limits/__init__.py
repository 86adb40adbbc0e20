"""Published limits checked at their boundary: each limit's accepted and refused step, and the
phase that runs them."""
