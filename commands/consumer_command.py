"""``waypost consumer``: the reference consumer (P17) on the command line.

A thin layer over ``waypost.reference.consumer``: options, the token, tables or JSON, and
one-line errors. The token comes from ``--token-file`` or ``WAYPOST_TOKEN`` and is never
stored or printed."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from waypost.hinting_parser import HintingParser
from waypost.reference.consumer import faults, outbox, sync, views, work
from waypost.reference.consumer.client import CALL_SECONDS, Api
from waypost.reference.consumer.errors import BadAnswer, ConsumerError, ServerError, Unreachable
from waypost.reference.consumer.store import LocalStore
from waypost.reference.consumer.text import visible

DEFAULT_DB = "waypost-consumer.sqlite3"
#: Exit statuses (docs/consumer.md, "Exit statuses"); a crash at an armed fault point exits
#: with :data:`faults.CRASH_EXIT`.
EXIT_FAILED, EXIT_USAGE, EXIT_BAD_SERVER, EXIT_UNREACHABLE, EXIT_INTERRUPTED = 1, 2, 3, 4, 130
Handler = Callable[[argparse.Namespace, LocalStore], Any]


def _token(args: argparse.Namespace) -> str:
    if args.token_file is not None:
        try:
            return Path(args.token_file).read_text().strip()
        except OSError as error:
            raise ConsumerError(f"cannot read the token file: {error.strerror}") from None
    token = os.environ.get("WAYPOST_TOKEN", "").strip()
    if not token:
        raise ConsumerError("no token: pass --token-file FILE or set WAYPOST_TOKEN")
    return token


@contextmanager
def _api(args: argparse.Namespace, store: LocalStore) -> Iterator[Api]:
    profile = store.require_profile()
    if args.server and args.server.rstrip("/") != profile.server_url:
        raise ConsumerError(f"{store.path} belongs to {profile.server_url}, not {args.server}")
    api = Api(profile.server_url, _token(args), timeout=args.timeout)
    try:
        yield api
    finally:
        api.close()


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A plain-text table: ``columns`` are (key, heading)."""
    cells = [[heading for _, heading in columns]]
    cells += [["" if row.get(key) is None else visible(str(row[key])) for key, _ in columns]
              for row in rows]
    widths = [min(max(len(line[i]) for line in cells), 48) for i in range(len(columns))]
    return "\n".join("  ".join(c[:48].ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in cells)


def _init(args: argparse.Namespace, store: LocalStore) -> Any:
    server = args.server or os.environ.get("WAYPOST_URL")
    if not server:
        raise ConsumerError("init needs --url URL (or WAYPOST_URL)")
    if not server.startswith(("http://", "https://")):
        raise ConsumerError(f"not an http(s) URL: {server}")
    if store.profile() is None and not args.offline:
        _answers_describe(server, args.timeout)
    profile = store.init_profile(server, args.label)
    return {"db": str(store.path), "server": profile.server_url, "label": profile.label}


def _answers_describe(server: str, timeout: float) -> None:
    """The URL must be a Waypost server's (``GET /v1/describe`` answers its protocol) before a
    file is bound to it: a wrong port is said now, not at the first sync."""
    api = Api(server, "none", timeout=timeout)
    api.client.headers.pop("Authorization")  # describe is public: no credential is sent
    try:
        described = api.get("/v1/describe")
    except ConsumerError as error:
        said = (f"no Waypost server answers at {server} ({error}): check the URL and its port, "
                "then run init again; nothing was stored")
        raise (Unreachable(said) if isinstance(error, Unreachable)
               else ConsumerError(said)) from None
    finally:
        api.close()
    if not str(described.get("protocol", "")).startswith("waypost/"):
        raise ConsumerError(f"{server} answers /v1/describe, but not as a Waypost server "
                            "(no waypost/ protocol): check the URL; nothing was stored")


def _progress(result: sync.SyncResult, shown: list[int], watching: bool) -> None:
    """The progress line on stderr: rewritten in place on a terminal (and erased at the end,
    so that the summary is said once); elsewhere one line for each page that brought items,
    only while ``--watch`` runs on (a sync that ends says it all in its summary)."""
    line = (f"sync: {result.pages} pages, {result.items} items ({result.messages} messages), "
            f"{result.flushed} queued writes sent")
    if sys.stderr.isatty():
        sys.stderr.write("\r" + line + "   ")
        shown[1] = max(shown[1], len(line) + 3)
    elif watching and result.pages != shown[0]:
        sys.stderr.write(line + "\n")
    shown[0] = result.pages
    sys.stderr.flush()


def _sync(args: argparse.Namespace, store: LocalStore) -> Any:
    shown = [0, 0]  # pages shown, the widest line written in place
    with _api(args, store) as api:
        try:
            result = sync.sync(store, api, limit=args.limit, wait=args.wait, watch=args.watch,
                               progress=lambda result: _progress(result, shown, args.watch))
        finally:
            if sys.stderr.isatty() and shown[1]:
                sys.stderr.write("\r" + " " * shown[1] + "\r")
    return {"synced": result.__dict__, "status": views.status(store)}


def _list(args: argparse.Namespace, store: LocalStore) -> Any:
    """The work items (``--json``: that list alone, as scripts read it); shown to a person,
    the receipts received after them."""
    items = views.work_items(store, None if args.state == "all" else args.state)
    return items if args.json else {"work": items, "receipts": views.receipts(store)}


def _show(args: argparse.Namespace, store: LocalStore) -> Any:
    return views.item(store, args.item)


def _start(args: argparse.Namespace, store: LocalStore) -> Any:
    return {"started": work.start(store, args.items)}


def _done(args: argparse.Namespace, store: LocalStore) -> Any:
    with _api(args, store) as api:
        return {"done": work.done(store, api, args.items)}


def _fail(args: argparse.Namespace, store: LocalStore) -> Any:
    return {"failed": work.fail(store, args.items, args.reason)}


def _submit(args: argparse.Namespace, store: LocalStore, enqueue: Callable[[], int]) -> Any:
    """Queue a write and send it at once. Everything the command can check here (the token,
    the server the file belongs to, its arguments) is checked before anything is queued: a
    refused command leaves no write behind to go out later. A write queued but not sent (the
    server unreachable or busy) says so and stays queued for the next sync."""
    with _api(args, store) as api:
        outbound_id = enqueue()
        try:
            outbox.flush(store, api)
        except (Unreachable, ServerError) as error:
            if isinstance(error, ServerError) and not error.retryable:
                raise
            row = _outbound(store, outbound_id)
            if row["state"] != "pending":
                raise
            raise ConsumerError(f"queued; it goes out on the next sync ({error})") from None
    row = _outbound(store, outbound_id)
    if row["state"] == "failed":
        raise Refused(row)
    return {"request_id": row["request_id"], "operation": row["operation"],
            "state": row["state"], "result": json.loads(row["result_json"])}


class Refused(ConsumerError):
    """A write the server refused for good: the line says what it sent back, ``details``
    included (a conflict's current revision, the field at fault); ``--json`` prints it whole."""

    def __init__(self, row: Any) -> None:
        answer = json.loads(row["result_json"] or "{}")
        error = answer.get("error") if isinstance(answer, dict) else None
        details = error.get("details") if isinstance(error, dict) else None
        self.details = details if isinstance(details, dict) else {}
        self.payload = {"request_id": row["request_id"], "operation": row["operation"],
                        "state": "failed", "status": row["result_status"],
                        "error": {"code": row["error_code"], "message": row["error_message"],
                                  "details": self.details}}
        shown = "".join(f"; {key} = {json.dumps(value)}" for key, value in self.details.items())
        super().__init__(f"{row['operation']} {row['request_id']} refused: {row['error_code']} "
                         f"({row['result_status']}): {row['error_message']}{shown}")


def _outbound(store: LocalStore, outbound_id: int) -> Any:
    row = store.row("SELECT request_id, operation, state, result_status, result_json,"
                    " error_code, error_message FROM local_outbound WHERE outbound_id = ?",
                    (outbound_id,))
    assert row is not None
    return row


def _text(args: argparse.Namespace) -> str:
    if args.text_file is not None:
        return Path(args.text_file).read_text()
    if args.text is None:
        raise ConsumerError("give the body with --text TEXT or --text-file FILE")
    return str(args.text)


def _send(args: argparse.Namespace, store: LocalStore) -> Any:
    store.require_profile()
    send = outbox.Send(tuple(args.to or ()), args.subject, _text(args), args.kind, args.thread)
    return _submit(args, store, lambda: outbox.enqueue_send(store, send))


def _reply(args: argparse.Namespace, store: LocalStore) -> Any:
    shown = views.item(store, args.item)
    message = shown.get("message")
    if message is None:
        raise ConsumerError(f"{args.item} is not a message: only messages can be replied to")
    subject = args.subject or ("Re: " + message["subject"])[:256]
    send = outbox.Send((message["producer_id"],), subject, _text(args), args.kind,
                       message["thread_id"], message["message_id"], args.item)
    return _submit(args, store, lambda: outbox.enqueue_send(store, send))


def _entry(text: str) -> tuple[str, str, str]:
    parts = text.split("=")
    if len(parts) != 3 or not all(parts):
        raise argparse.ArgumentTypeError(f"an entry is ITEM_ID=PATH=BLOB_ID, not {text!r}")
    return parts[0], parts[1], parts[2]


def _publish(args: argparse.Namespace, store: LocalStore) -> Any:
    expected = args.expected_revision
    if expected is None:  # the head now, fixed in the outbox: a retry never chases a new head
        with _api(args, store) as api:
            expected = int(api.collection(args.collection)["current_revision"])
    publish = outbox.Publish(args.collection, expected, args.mode, tuple(args.entry or ()),
                             tuple(args.delete or ()))
    return _submit(args, store, lambda: outbox.enqueue_publish(store, publish))


def _status(args: argparse.Namespace, store: LocalStore) -> Any:
    return {**views.status(store), "recent_outbound": views.outbound(store, args.recent)}


ITEM_COLUMNS = (("item_id", "ITEM"), ("sequence", "SEQ"), ("type", "TYPE"), ("sender", "FROM"),
                ("subject", "SUBJECT"), ("state", "STATE"))
RECEIPT_COLUMNS = (("subject", "ITEM"), ("actor", "BY"), ("stage", "STAGE"),
                   ("version", "VERSION"), ("updated_at", "AT"))
OUTBOUND_COLUMNS = (("request_id", "REQUEST ID"), ("operation", "OPERATION"), ("state", "STATE"),
                    ("attempts", "TRIES"), ("result_status", "STATUS"), ("error_code", "ERROR"))


def human(command: str, result: Any) -> str:
    """The default, human-readable rendering of a command's result."""
    if command == "list":
        work = table(result["work"], ITEM_COLUMNS) if result["work"] else "no work items"
        if not result["receipts"]:
            return work + "\nno receipts"
        return f"{work}\n\nreceipts:\n{table(result['receipts'], RECEIPT_COLUMNS)}"
    if command == "show":
        message = result.get("message")
        lines = [f"{k}: {visible(str(v))}" for k, v in result["item"].items()]
        lines += [f"work: {result['work']['state']}" if result.get("work") else "work: none"]
        if message:
            lines += [f"from: {visible(message['producer_id'])}",
                      f"to: {visible(', '.join(message['recipient_ids']))}",
                      f"kind: {visible(message['kind'])}",
                      f"subject: {visible(message['subject'])}", "",
                      visible(message["body_text"], lines=True)]
        if result.get("memory_revision"):
            lines += ["", table(result["memory_revision"]["entries"],
                                (("entry_id", "ENTRY"), ("state", "STATE"), ("path", "PATH"),
                                 ("blob_id", "BLOB")))]
        return "\n".join(lines)
    if command == "sync":
        done, state = result["synced"], result["status"]
        skipped = f", {done['skipped']} of unknown types skipped" if done["skipped"] else ""
        return (f"synced {done['pages']} pages, {done['items']} items ({done['messages']} "
                f"messages{skipped}); {done['flushed']} queued writes sent first; work pending: "
                f"{state['work']['pending'] + state['work']['in_progress']}; checkpoint at "
                f"sequence {state['checkpoint_sequence']}")
    if command == "status":
        recent = result.pop("recent_outbound")
        return "\n".join([human("", result)]
                         + (["", table(recent, OUTBOUND_COLUMNS)] if recent else []))
    if isinstance(result, dict):
        return "\n".join(f"{k}: {json.dumps(v) if isinstance(v, dict | list) else v}"
                         for k, v in result.items())
    return str(result)


def run(args: argparse.Namespace) -> int:
    """Open the local file, run one consumer command, print its result; expected failures are
    one line on stderr, with the exit status of their kind (:data:`EXIT_FAILED` …)."""
    name = f"waypost consumer {args.consumer_command}"
    try:
        faults.arm_from_environment()
        faults.arm(args.fault or ())
    except ValueError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return EXIT_USAGE
    fresh = args.consumer_command == "init" and not Path(args.db).exists()
    try:
        store = LocalStore(Path(args.db), create=args.consumer_command == "init")
        try:
            result = args.handler(args, store)
        finally:
            store.close()
    except ConsumerError as error:
        if fresh:  # an init refused leaves no file behind ("nothing was stored")
            for leftover in (Path(args.db), *(Path(f"{args.db}{end}") for end in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
        if isinstance(error, Refused) and args.json:
            print(json.dumps(error.payload, indent=2, default=str))
        print(f"{name}: {visible(str(error))}", file=sys.stderr)
        return (EXIT_BAD_SERVER if isinstance(error, BadAnswer)
                else EXIT_UNREACHABLE if isinstance(error, Unreachable) else EXIT_FAILED)
    except apsw.Error as error:
        print(f"{name}: the local database refused the change: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    print(json.dumps(result, indent=2, default=str) if args.json
          else human(args.consumer_command, result))
    return 0


def seconds(text: str) -> float:
    """An argparse type: a number of seconds from 0 (exclusive) to 3600."""
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"not a number of seconds from 0 to 3600: {text!r}")
    return value


EPILOG = (f"Exit status: 0 done; {EXIT_FAILED} refused (the server's error code is in the "
          f"line); {EXIT_USAGE} wrong usage; {EXIT_BAD_SERVER} the server broke the contract "
          f"(nothing of its answer was stored); {EXIT_UNREACHABLE} the server could not be "
          "reached or gave no whole answer in time (docs/consumer.md).")


def _common() -> argparse.ArgumentParser:
    """Options every consumer command takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=os.environ.get("WAYPOST_CONSUMER_DB", DEFAULT_DB),
                        help="the consumer's local SQLite file (default: $WAYPOST_CONSUMER_DB, "
                             f"else ./{DEFAULT_DB})")
    common.add_argument("--url", dest="server", default=None, metavar="URL",
                        help="the server's base URL: fixed by init (default there: "
                             "$WAYPOST_URL); later commands check it matches")
    # the flag's old name, kept for one release (and for consumers the kit's P17 drives)
    common.add_argument("--server", dest="server", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    common.add_argument("--token-file", default=None, metavar="FILE",
                        help="read the bearer token from FILE; without it the token itself "
                             "is taken from $WAYPOST_TOKEN; never stored or printed")
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    common.add_argument("--timeout", type=seconds, default=CALL_SECONDS, metavar="SECONDS",
                        help="the longest one call to the server may take, answer included "
                             f"(default {CALL_SECONDS:g}; a long poll adds its wait)")
    common.add_argument("--fault", action="append", choices=faults.POINTS, metavar="POINT",
                        help="crash tests only: end the process at this fault point with exit "
                             f"status {faults.CRASH_EXIT} (also ${faults.ENVIRONMENT}); one of "
                             f"{', '.join(faults.POINTS)}")
    return common


def _command(commands: Any, name: str, handler: Handler, help_text: str,
             description: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = commands.add_parser(
        name, help=help_text, description=description, parents=[_common()], epilog=EPILOG)
    command.set_defaults(run=run, handler=handler)
    return command


def _message_arguments(command: argparse.ArgumentParser, kind: str) -> None:
    command.add_argument("--text", default=None, help="the body text")
    command.add_argument("--text-file", default=None, metavar="FILE",
                         help="read the body text from FILE")
    command.add_argument("--kind", default=kind,
                         choices=["info", "question", "result", "todo_suggestion",
                                  "memory_notice", "processing_result"],
                         help=f"message kind (default: {kind})")


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                 words: Sequence[str] = ()) -> None:
    """Register ``consumer`` and its commands on the top-level parser (``words`` is the
    protocol of ``cli.LAZY_COMMANDS``: every part of this command is light)."""
    consumer = commands.add_parser(
        "consumer", help="the reference consumer: a crash-safe local mailbox on SQLite",
        description="The reference consumer (P17): a client of a Waypost server with its own "
                    "SQLite file. sync stores each feed page, its work records and the local "
                    "checkpoint in one transaction before acknowledging 'received'; done "
                    "acknowledges 'processed' only after the local mark; sends, replies, ACKs "
                    "and publishes are written to the local outbox with a fixed request_id "
                    "before they are submitted, and resubmitted with it after a crash. It never "
                    "acts on a message's text. The token: --token-file or WAYPOST_TOKEN.")
    sub = consumer.add_subparsers(dest="consumer_command", required=True, metavar="COMMAND")
    init = _command(sub, "init", _init, "create the local file for one server",
                    "Create (or open) the local SQLite file and fix the server it belongs to, "
                    "once GET /v1/describe there answers as a Waypost server. Needs no token.")
    init.add_argument("--label", default="default",
                      help="a name for this consumer's local checkpoints (default: default)")
    init.add_argument("--offline", action="store_true",
                      help="bind the file without asking the server (one not up yet)")
    watch = _command(sub, "sync", _sync, "send queued writes, then read and store the feed",
                     "Send every queued write, then read the feed after the local checkpoint "
                     "page by page: store each page with its message bodies, pinned memory "
                     "revisions, work records and checkpoint in one transaction, then "
                     "acknowledge 'received'. Ends when the feed has no more, unless --watch.")
    watch.add_argument("--watch", action="store_true",
                       help="keep going: long-poll for new items (Ctrl-C stops)")
    watch.add_argument("--wait", type=int, default=30, choices=range(0, 31), metavar="SECONDS",
                       help="long-poll seconds per empty page with --watch (0-30, default 30; "
                            "needs the event.subscribe scope)")
    watch.add_argument("--limit", type=int, default=sync.MAX_LIMIT,
                       choices=range(1, sync.MAX_LIMIT + 1), metavar="N",
                       help=f"items per page (1-{sync.MAX_LIMIT}, default {sync.MAX_LIMIT})")
    listing = _command(sub, "list", _list, "list work items", "List received messages and "
                       "memory revisions with their local work state, in feed order.")
    listing.add_argument("--state", default="all",
                         choices=["all", "pending", "in_progress", "done", "error"],
                         help="only items in this state (default: all)")
    show = _command(sub, "show", _show, "show one item in full",
                    "Show one received item: the message with its body, or the pinned memory "
                    "revision with its entries, and its work state. Local only.")
    show.add_argument("item", help="a feed item id (see list)")
    begin = _command(sub, "start", _start, "mark items in progress",
                     "Mark pending items in progress (local only).")
    begin.add_argument("items", nargs="+", metavar="ITEM")
    finish = _command(sub, "done", _done, "mark items done and acknowledge 'processed'",
                      "Mark items done locally and queue their 'processed' ACK in the same "
                      "transaction, then send it (and any other queued write).")
    finish.add_argument("items", nargs="+", metavar="ITEM")
    failing = _command(sub, "fail", _fail, "mark items failed with a reason",
                       "Mark items failed locally with a reason. Nothing is sent: the protocol "
                       "has no error stage, the server keeps 'received'.")
    failing.add_argument("items", nargs="+", metavar="ITEM")
    failing.add_argument("--reason", required=True, help="why the work failed")
    send = _command(sub, "send", _send, "send a message (once, whatever happens)",
                    "Queue a message with a fixed request_id, then send it. After a crash the "
                    "next command resends it with the same request_id: it is published once.")
    send.add_argument("--to", action="append", metavar="ACTOR",
                      help="a recipient (repeatable; default: the space's default actor)")
    send.add_argument("--subject", required=True, help="the subject")
    send.add_argument("--thread", default=None, metavar="THREAD_ID",
                      help="an existing thread (default: a new thread)")
    _message_arguments(send, "info")
    reply = _command(sub, "reply", _reply, "reply to a received message",
                     "Queue and send a reply to a received message: to its sender, in its "
                     "thread, in reply to it.")
    reply.add_argument("item", help="the feed item id of the message")
    reply.add_argument("--subject", default=None, help="the subject (default: Re: <subject>)")
    _message_arguments(reply, "result")
    publish = _command(sub, "publish", _publish, "publish a memory revision (once)",
                       "Queue a memory publish with a fixed request_id and expected revision, "
                       "then submit it. Entries name sealed blobs.")
    publish.add_argument("collection", help="the collection id")
    publish.add_argument("--entry", action="append", type=_entry, metavar="ITEM_ID=PATH=BLOB_ID",
                         help="an entry to upsert (repeatable)")
    publish.add_argument("--delete", action="append", metavar="ITEM_ID",
                         help="an entry to tombstone (repeatable; delta only)")
    publish.add_argument("--mode", choices=["delta", "snapshot"], default="delta",
                         help="delta (default) or snapshot")
    publish.add_argument("--expected-revision", type=int, default=None, metavar="N",
                         help="the head it applies to (default: the head read now, then fixed)")
    state = _command(sub, "status", _status, "counts, checkpoint and recent outbound writes",
                     "Show the local file's state: items, work by state, outbound writes by "
                     "state with the latest request ids and answers, the checkpoint. Local only.")
    state.add_argument("--recent", type=int, default=10, help="outbound writes shown (default 10)")


def run_alone(command: str, add: Callable[[Any], None], argv: Sequence[str] | None) -> int:
    """Run ``waypost COMMAND …`` with only that command's parser (``add`` registers it): what
    ``python -m waypost.<module>`` does without loading the rest of the command line."""
    top = HintingParser(prog="waypost")
    add(top.add_subparsers(dest="command", required=True))
    args = top.parse_args([command, *(sys.argv[1:] if argv is None else argv)])
    code: int = args.run(args)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m waypost.consumer_command COMMAND …`` is ``waypost consumer COMMAND …`` without
    loading the rest of the command line (the conformance kit starts it many times)."""
    return run_alone("consumer", add_commands, argv)


if __name__ == "__main__":
    raise SystemExit(main())
