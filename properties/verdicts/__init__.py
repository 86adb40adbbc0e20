"""How the kit reports what it found: a broken property with its evidence, and which property each
requirement id belongs to."""
