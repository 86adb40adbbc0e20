"""The numbers of the kit's bounds on every answer (``properties/wire/bounds.py`` enforces them), in
a module of their own so that the command line names them without loading the HTTP client."""

#: Bytes of a JSON answer: a page of 100 items, a message of 64 KiB of text or a revision's
#: manifest of 10,000 small entries is far below; ``request_bytes`` is 1 MiB.
ANSWER_BYTES = 4 << 20
#: Seconds of one call, from connecting to the last byte of the answer.
SECONDS = 60.0
#: The most a long poll's ``wait`` adds to its call's deadline.
LONGEST_WAIT = 60.0
#: The most connections a run opens to its target unless told otherwise (``--max-connections``).
MAX_CONNECTIONS = 32
