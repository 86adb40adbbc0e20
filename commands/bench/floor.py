"""The floor of the stack a send runs on: the least a server on the same parts can do per send.

The same uvicorn (its h11 protocol) and Starlette as ``waypost serve``, the same apsw, a SQLite
file in WAL mode with ``synchronous=FULL``. Per ``POST /v1/messages`` it parses the JSON body,
inserts one row (its ``request_id`` the primary key) in a transaction of its own on a thread of
Starlette's pool, and answers 201 with a small JSON object. No auth, no validation, no group
commit: whatever ``waypost serve`` spends above this is Waypost's own.

Run as ``python -m waypost.bench.floor --database FILE --port N``; ``waypost bench send --floor``
starts it beside the reference.
"""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path

import apsw
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waypost.collector import tune_collector


def open_floor(database: Path) -> apsw.Connection:
    """The floor's connection: WAL, ``synchronous=FULL``, its one table."""
    connection = apsw.Connection(str(database))
    connection.pragma("journal_mode", "wal")
    connection.pragma("synchronous", "FULL")
    connection.execute("CREATE TABLE IF NOT EXISTS messages "
                       "(request_id TEXT PRIMARY KEY, body TEXT NOT NULL)")
    return connection


def insert_one(connection: apsw.Connection, request_id: str, body: str) -> int:
    """The floor's transaction: one row, ``BEGIN … COMMIT`` and its fsync; the row's id."""
    with connection:
        connection.execute("INSERT INTO messages (request_id, body) VALUES (?, ?)",
                           (request_id, body))
    return connection.last_insert_rowid()


def floor_app(database: Path) -> Starlette:
    """The floor: one table, one INSERT per request, WAL and ``synchronous=FULL``."""
    connection = open_floor(database)
    lock = threading.Lock()

    def insert(request_id: str, body: str) -> int:
        with lock:
            return insert_one(connection, request_id, body)

    async def send(request: Request) -> Response:
        document = json.loads(await request.body())
        if not isinstance(document, dict) or not isinstance(document.get("request_id"), str):
            return JSONResponse({"error": {"code": "INVALID_REQUEST"}}, status_code=400)
        row = await run_in_threadpool(insert, document["request_id"],
                                      json.dumps(document.get("body")))
        return JSONResponse({"message_id": f"m{row}", "seq": row}, status_code=201)

    return Starlette(routes=[Route("/v1/messages", send, methods=["POST"])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m waypost.bench.floor",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    app = floor_app(args.database)
    tune_collector()  # as waypost serve does: the same interpreter settings
    uvicorn.run(app, host="127.0.0.1", port=args.port, http="h11",
                ws="none", access_log=False, log_level="info")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
