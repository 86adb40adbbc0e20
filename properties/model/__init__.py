"""The independent model of the contract: the spaces, items, receipts, uploads and collections an
example made, how answers are matched against it, and the feed histories checked after the fact."""
