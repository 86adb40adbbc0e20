"""The reference consumer (P17): an HTTP client of Waypost/1 with its own SQLite file.

It stores each feed page, the work records of its items and its local checkpoint in one local
transaction before acknowledging ``received``; acknowledges ``processed`` only after the work is
marked done locally; writes every outbound request (sends, replies, ACKs, publishes) to its
outbox with a fixed request_id before submitting it. It never acts on a message's text.
It imports nothing of the server: it speaks HTTP only.
"""
