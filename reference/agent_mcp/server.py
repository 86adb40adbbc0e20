"""The MCP server: the tool list (strict input schemas, compact output schemas, terse
descriptions, honest hints), each call validated and run on a worker thread of its own, and
answered as compact JSON text with the same value as ``structuredContent``; a failure is a tool
error (``isError``) whose text is the protocol's error envelope (§7)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from waypost.reference.agent_mcp import answers as out
from waypost.reference.agent_mcp import arguments as a
from waypost.reference.agent_mcp import resources
from waypost.reference.agent_mcp.errors import ToolFailure, from_exception
from waypost.reference.agent_mcp.tools import Agent
from waypost.reference.consumer.store import LocalStore

T = TypeVar("T")

log = logging.getLogger("waypost.mcp")

INSTRUCTIONS = ("A Waypost mailbox and memory. inbox, read_message, then mark_done; send and "
                "reply are sent once even if repeated; memory entries name blobs from attach.")


@dataclass(frozen=True)
class Spec:
    """One tool: its arguments and answer models, what it does in a line, and its hints:
    ``read_only`` when it writes nothing anywhere (the local file and the folder included),
    ``idempotent`` when the same call again changes nothing more, ``destructive`` when it can
    take something away (a publish's deletes and snapshots)."""

    model: type[a.Strict]
    answer: type[out.Answer]
    description: str
    read_only: bool = False
    idempotent: bool = False
    destructive: bool = False


SPECS: dict[str, Spec] = {
    "inbox": Spec(a.Inbox, out.Inbox, "Sync, then list work items (pending by default), oldest "
                                      "first. Next page: after=next_after."),
    "read_message": Spec(a.ReadMessage, out.Item, "One inbox item in full: sender, recipients, "
                                                  "subject, text, thread.", read_only=True),
    "mark_done": Spec(a.MarkDone, out.Done, "Mark items done, then acknowledge them as "
                                            "processed.", idempotent=True),
    "send": Spec(a.Send, out.Sent, "Send a message. The same call again (or the same key) never "
                                   "sends twice.", idempotent=True),
    "reply": Spec(a.Reply, out.Sent, "Reply to an inbox message: to its sender, in its thread. "
                                     "Never sent twice.", idempotent=True),
    "memory_get": Spec(a.MemoryGet, out.Memory, "A collection's entries at its head or a fixed "
                                                "revision. Next page: cursor.", read_only=True),
    "memory_publish": Spec(a.MemoryPublish, out.Published, "Publish a revision if the head is "
                                                           "expected_revision, else answer the "
                                                           "current one. Entries name blobs "
                                                           "from attach.", idempotent=True,
                           destructive=True),
    "attach": Spec(a.Attach, out.Attached, "Upload a local file as a verified blob; gives its "
                                           "blob_id."),
    "read_blob": Spec(a.ReadBlob, out.BlobRead, "A blob's UTF-8 text (up to 64 KiB), or save_to "
                                                "a new local file."),
}


def _hints(spec: Spec) -> types.ToolAnnotations:
    """The hints that differ from the defaults (not read-only, destructive, not idempotent)."""
    if spec.read_only:
        return types.ToolAnnotations(read_only_hint=True)
    return types.ToolAnnotations(destructive_hint=None if spec.destructive else False,
                                 idempotent_hint=spec.idempotent or None)


def tool_list() -> list[types.Tool]:
    """The tools as ``tools/list`` shows them."""
    return [types.Tool(name=name, description=spec.description, input_schema=a.schema(spec.model),
                       output_schema=out.output_schema(spec.answer), annotations=_hints(spec))
            for name, spec in SPECS.items()]


def _result(value: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error,
                                structured_content=None if error else value)


def run_tool(agent: Agent, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Validate the arguments strictly, run the tool (on the calling thread, with a link of its
    own) and check its answer against the tool's output model."""
    spec = SPECS.get(name)
    if spec is None:
        raise ToolFailure("NOT_FOUND", f"no tool {name}", {"field": "name"})
    args = spec.model.model_validate_json(json.dumps(arguments or {}))
    return out.checked(spec.answer, agent.call(name, args))


def _local(agent: Agent, read: Callable[[LocalStore, Any], T], argument: Any) -> T:
    with agent.link() as link:
        return read(link.store, argument)


def build(agent: Agent) -> Server[Any]:
    """The low-level SDK server for one agent."""
    tools = tool_list()
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await anyio.to_thread.run_sync(run_tool, agent, params.name,
                                                    params.arguments)
        except Exception as error:  # every failure is the agent's to see, as an envelope
            failure = from_exception(error)
            if failure.code == "INTERNAL":
                log.exception("tool %s failed", params.name)
            return _result(failure.envelope(), error=True)
        return _result(result)

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        return await anyio.to_thread.run_sync(_local, agent, resources.listing,
                                              params.cursor if params else None)

    async def list_templates(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=resources.TEMPLATE, name="pinned memory revision",
            mime_type="application/json")])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await anyio.to_thread.run_sync(_local, agent, resources.read, params.uri)

    try:
        package_version = version("waypost")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        package_version = "0"
    return Server("waypost", version=package_version, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource,
                  get_tool_input_schema=schemas.get)
