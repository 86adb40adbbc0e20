"""The MCP server: the tool list (strict schemas, terse descriptions), each call validated,
run on a worker thread one at a time, and answered as compact JSON text; a failure is a tool
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
    """One tool: its arguments model, what it does in a line, and whether it only reads."""

    model: type[a.Strict]
    description: str
    read_only: bool = False


SPECS: dict[str, Spec] = {
    "inbox": Spec(a.Inbox, "Sync, then list work items (pending by default), oldest first. "
                           "Next page: after=next_after."),
    "read_message": Spec(a.ReadMessage, "One inbox item in full: sender, recipients, subject, "
                                        "text, thread.", read_only=True),
    "mark_done": Spec(a.MarkDone, "Mark items done, then acknowledge them as processed."),
    "send": Spec(a.Send, "Send a message. The same call again (or the same key) never sends "
                         "twice."),
    "reply": Spec(a.Reply, "Reply to an inbox message: to its sender, in its thread. Never "
                           "sent twice."),
    "memory_get": Spec(a.MemoryGet, "A collection's entries at its head or a fixed revision. "
                                    "Next page: cursor.", read_only=True),
    "memory_publish": Spec(a.MemoryPublish, "Publish a revision if the head is "
                                            "expected_revision, else answer the current one. "
                                            "Entries name blobs from attach."),
    "attach": Spec(a.Attach, "Upload a local file as a verified blob; gives its blob_id."),
    "read_blob": Spec(a.ReadBlob, "A blob's UTF-8 text (up to 64 KiB), or save_to a new local "
                                  "file.", read_only=True),
}


def tool_list() -> list[types.Tool]:
    """The tools as ``tools/list`` shows them."""
    return [types.Tool(name=name, description=spec.description, input_schema=a.schema(spec.model),
                       annotations=types.ToolAnnotations(read_only_hint=True)
                       if spec.read_only else None)
            for name, spec in SPECS.items()]


def _text(value: Any, *, error: bool = False) -> types.CallToolResult:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def run_tool(agent: Agent, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Validate the arguments strictly and run the tool (on the calling thread, under the
    agent's lock: one local file, one call at a time)."""
    spec = SPECS.get(name)
    if spec is None:
        raise ToolFailure("NOT_FOUND", f"no tool {name}", {"field": "name"})
    args = spec.model.model_validate_json(json.dumps(arguments or {}))
    method: Callable[[Any], dict[str, Any]] = getattr(agent, name)
    with agent.lock:
        return method(args)


def _locked(agent: Agent, read: Callable[[LocalStore, Any], T], argument: Any) -> T:
    with agent.lock:
        return read(agent.store, argument)


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
            return _text(failure.envelope(), error=True)
        return _text(result)

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        return await anyio.to_thread.run_sync(_locked, agent, resources.listing,
                                              params.cursor if params else None)

    async def list_templates(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=resources.TEMPLATE, name="pinned memory revision",
            mime_type="application/json")])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await anyio.to_thread.run_sync(_locked, agent, resources.read, params.uri)

    try:
        package_version = version("waypost")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        package_version = "0"
    return Server("waypost", version=package_version, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource,
                  get_tool_input_schema=schemas.get)
