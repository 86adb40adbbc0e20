"""``waypost mcp``: the reference consumer as MCP tools for an agent, over stdio (default) or
Streamable HTTP. One local file (``--db``), one server (``--url``), one token
(``WAYPOST_TOKEN`` or ``--token-file``; never stored, echoed or logged)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from waypost.consumer_command import DEFAULT_DB, run_alone, seconds
from waypost.reference.consumer import faults
from waypost.reference.consumer.client import CALL_SECONDS, Api, ConsumerError
from waypost.reference.consumer.store import LocalStore

if TYPE_CHECKING:  # the MCP SDK takes most of a second to import: only when serving
    from waypost.reference.agent_mcp.blobs import Files
    from waypost.reference.agent_mcp.tools import Agent


def _token(token_file: str | None) -> str:
    if token_file is not None:
        try:
            return Path(token_file).read_text().strip()
        except OSError as error:
            raise ConsumerError(f"cannot read the token file: {error.strerror}") from None
    token = os.environ.get("WAYPOST_TOKEN", "").strip()
    if not token:
        raise ConsumerError("no token: pass --token-file FILE or set WAYPOST_TOKEN")
    return token


def default_files(db: Path) -> Path:
    """The agent's own folder beside its local file: ``alice.db`` → ``alice-files``."""
    return db.with_name(f"{db.stem}-files")


def _files(args: argparse.Namespace) -> Files:
    """The folder of ``attach`` and ``read_blob`` (``--files``, else the agent's own folder
    beside the local file, created if missing), less the local file, its journals and the
    token file."""
    from waypost.reference.agent_mcp.blobs import Files, private_files

    db = Path(args.db)
    if args.files is not None:
        root = Path(args.files).expanduser()
    else:
        root = default_files(db)
        try:
            root.mkdir(mode=0o700, exist_ok=True)
        except OSError as error:
            raise ConsumerError(f"cannot create the files folder {root}: {error.strerror}") \
                from None
    if not root.is_dir():
        raise ConsumerError(f"--files: not a folder: {root}")
    tokens = [Path(args.token_file)] if args.token_file is not None else []
    return Files.under(root, private_files(db, tokens))


def _agent(args: argparse.Namespace, token: str, store: LocalStore, files: Files) -> Agent:
    """The agent, with the local file opened at start as its first link; each call that runs
    while the others are busy opens a link of its own (a connection and an HTTP client)."""
    from waypost.reference.agent_mcp.tools import Agent, Link

    db, server_url = Path(args.db), args.server

    def connect() -> Link:
        return Link(LocalStore(db), Api(server_url, token, timeout=args.timeout))

    return Agent(connect, files, idle=[Link(store, Api(server_url, token, timeout=args.timeout))])


def _ready(url: str) -> None:
    print(json.dumps({"url": url}), flush=True)


def run(args: argparse.Namespace) -> int:
    """Open (or create) the local file for the server, then serve until the client leaves
    (stdio) or the process is interrupted (HTTP)."""
    import anyio  # the SDK first: without the mcp extra, nothing is created

    from waypost.reference.agent_mcp import server as mcp_server
    from waypost.reference.agent_mcp import transports

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="waypost mcp: %(levelname)s %(name)s: %(message)s")
    try:
        faults.arm_from_environment()
        if not args.server:
            raise ConsumerError("needs --url URL (or WAYPOST_URL)")
        if not args.server.startswith(("http://", "https://")):
            raise ConsumerError(f"not an http(s) URL: {args.server}")
        token = _token(args.token_file)
        store = LocalStore(Path(args.db), create=True)
    except (ConsumerError, ValueError) as error:
        print(f"waypost mcp: {error}", file=sys.stderr)
        return 2
    try:
        store.init_profile(args.server, args.label)
        files = _files(args)
    except ConsumerError as error:
        store.close()
        print(f"waypost mcp: {error}", file=sys.stderr)
        return 2
    agent = _agent(args, token, store, files)
    server = mcp_server.build(agent)
    try:
        if args.http:
            transports.serve_http(server, token, args.host, args.port, _ready)
        else:
            anyio.run(transports.serve_stdio, server)
    except KeyboardInterrupt:
        return 130
    finally:
        agent.close()
    return 0


def add_arguments(command: argparse.ArgumentParser) -> None:
    # --server: the flag's old name, kept for one release
    command.add_argument("--server", dest="server", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
    command.add_argument("--url", dest="server", default=os.environ.get("WAYPOST_URL"),
                         metavar="URL",
                         help="the Waypost server's base URL (default: $WAYPOST_URL); a local "
                              "file belongs to one server")
    command.add_argument("--db", default=os.environ.get("WAYPOST_CONSUMER_DB", DEFAULT_DB),
                         help="the consumer's local SQLite file, created if missing (default: "
                              f"$WAYPOST_CONSUMER_DB, else ./{DEFAULT_DB})")
    command.add_argument("--files", default=None, metavar="DIR",
                         help="the only folder attach reads from and read_blob saves to "
                              "(relative paths are taken inside it; a path that leaves it, "
                              "symlinks followed, is refused, and so are the --db file, its "
                              "journals and the token file); default: a folder of its own "
                              "beside the --db file, created if missing (alice.db: "
                              "alice-files)")
    command.add_argument("--label", default="default",
                         help="the name of this file's local checkpoints (default: default)")
    command.add_argument("--timeout", type=seconds, default=CALL_SECONDS, metavar="SECONDS",
                         help="the longest one call to the server may take, answer included "
                              f"(default {CALL_SECONDS:g}; docs/consumer.md, 'Limits')")
    command.add_argument("--token-file", default=None, metavar="FILE",
                         help="read the agent's bearer token from FILE; without it the "
                              "token itself is taken from $WAYPOST_TOKEN; never stored, "
                              "echoed or logged")
    command.add_argument("--http", action="store_true",
                         help="serve Streamable HTTP at /mcp instead of stdio; prints "
                              "{\"url\": …} once listening; clients must send the same token "
                              "as 'Authorization: Bearer'")
    command.add_argument("--host", default="127.0.0.1",
                         help="with --http: the address to listen on (default: 127.0.0.1)")
    command.add_argument("--port", type=int, default=8788,
                         help="with --http: the port (default: 8788; 0: any free port)")
    command.set_defaults(run=run)
    configs = command.add_subparsers(dest="mcp_command", metavar="[config]")
    config = configs.add_parser(
        "config", help="print an MCP client's entry for this agent, with your own paths",
        description="Print the JSON an MCP client (Claude Desktop, an IDE…) needs to start "
                    "this agent's MCP server: the absolute path of this installation's waypost "
                    "executable, the server's URL and the absolute path of the local file. The "
                    "token is left as a placeholder for the client's environment (or use "
                    "--token-file, whose absolute path is written instead): nothing secret is "
                    "printed.")
    config.add_argument("--url", dest="server", default=os.environ.get("WAYPOST_URL"),
                        metavar="URL", help="the Waypost server's base URL (default: "
                                            "$WAYPOST_URL)")
    config.add_argument("--db", default=os.environ.get("WAYPOST_CONSUMER_DB", DEFAULT_DB),
                        help=f"the agent's local file (default: ./{DEFAULT_DB})")
    config.add_argument("--token-file", default=None, metavar="FILE",
                        help="the agent's token file, named in the entry by its absolute path")
    config.add_argument("--name", default="waypost",
                        help="the entry's name in mcpServers (default: waypost)")
    config.set_defaults(run=print_config)


def client_entry(args: argparse.Namespace, executable: str) -> dict[str, object]:
    """The ``mcpServers`` document for this agent: ``executable`` started with absolute paths."""
    entry: dict[str, object] = {
        "command": executable,
        "args": ["mcp", "--url", args.server, "--db", str(Path(args.db).expanduser().resolve())]}
    if args.token_file is not None:
        assert isinstance(entry["args"], list)
        entry["args"] += ["--token-file", str(Path(args.token_file).expanduser().resolve())]
    else:
        entry["env"] = {"WAYPOST_TOKEN": "<the agent's token>"}
    return {"mcpServers": {args.name: entry}}


def print_config(args: argparse.Namespace) -> int:
    """``waypost mcp config``: the client entry, started by this installation's executable."""
    if not args.server or not args.server.startswith(("http://", "https://")):
        print("waypost mcp config: needs --url http(s)://… (or WAYPOST_URL)", file=sys.stderr)
        return 2
    beside = Path(sys.executable).with_name("waypost")
    found = shutil.which("waypost")
    executable = str(beside) if beside.exists() else str(Path(found).resolve()) if found else ""
    if not executable:
        print("waypost mcp config: no waypost executable beside this Python or on PATH",
              file=sys.stderr)
        return 2
    print(json.dumps(client_entry(args, executable), indent=2))
    if not _has_mcp():
        print("waypost mcp config: this entry needs the MCP SDK, which this installation "
              "lacks: in the project's checkout, pip install '.[mcp]' first", file=sys.stderr)
    return 0


def _has_mcp() -> bool:
    """Whether the MCP SDK (the ``mcp`` extra) is installed, without importing it."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a module set to None (absent) raises ValueError
        return False


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                 words: Sequence[str] = ()) -> None:
    """Register ``mcp`` on the top-level parser (``words`` is the protocol of
    ``cli.LAZY_COMMANDS``: every part of this command is light)."""
    add_arguments(commands.add_parser(
        "mcp", help="serve the reference consumer as MCP tools for an agent (stdio or HTTP)",
        description="Serve one agent's mailbox and memory as MCP tools (inbox, read_message, "
                    "mark_done, send, reply, memory_get, memory_publish, attach, read_blob) "
                    "over stdio, or Streamable HTTP with --http. It is the reference consumer: "
                    "items are stored before they are acknowledged, 'processed' follows the "
                    "local done, and sends, replies and publishes go through the local outbox, "
                    "so the same call again never writes twice. The token: WAYPOST_TOKEN or "
                    "--token-file."))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m waypost.mcp_command …`` is ``waypost mcp …`` without loading the rest of the
    command line."""
    return run_alone("mcp", add_commands, argv)


if __name__ == "__main__":
    raise SystemExit(main())
