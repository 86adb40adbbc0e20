"""``waypost mcp``: the reference consumer as MCP tools for agents (stdio or Streamable HTTP).

Each tool does one protocol operation through the consumer's local file: ``inbox`` syncs
(store, then acknowledge ``received``), ``mark_done`` marks local work done, then acknowledges
``processed``, ``send``/``reply``/``memory_publish`` go through the outbox with a request_id fixed
by the call, so the same call again never writes twice. It imports the consumer and the MCP SDK,
nothing of the server.
"""
