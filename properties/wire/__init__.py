"""The kit's only way to a server, and its bounds on every answer: HTTP with every exchange
recorded, the fault proxy, bounded reads and walks, untrusted text made safe."""
