"""What the kit knows of the protocol's text: the value grammar, the error codes and fault points
shared with the server (``waypost/contract.json``), the fingerprints of §4–§5, the OpenAPI
document."""
