"""An MCP server that lists its tools by what its client offers, written
with the official MCP Python SDK's low-level `Server` (its handlers see
the session's client capabilities): `echo` for every client, `ask_name`
only to a client that offers elicitation (the tool asks the client for a
name), `summarize` only to one that offers sampling. `hide_echo` takes
`echo` out of its own session's list and tells that session's client its
tools changed; other sessions still list it. It is a peer for the
proxy's transparency tests (`tests/proxy_transparent.rs`): a proxy must
show each client what the server would list to it directly.

    offers_server.py stdio
    offers_server.py http PORT
"""

import sys

import mcp.server.stdio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions

# The sessions that hid `echo`, by the session's id: its `Mcp-Session-Id`
# over HTTP; one session a process over stdio.
HIDDEN: set[str] = set()

ANYTHING = {"type": "object", "properties": {}}


def session_of(ctx: ServerRequestContext) -> str:
    headers = ctx.request.headers if ctx.request is not None else {}
    return headers.get("mcp-session-id", "stdio")


def offers(ctx: ServerRequestContext) -> types.ClientCapabilities:
    return ctx.session.client_capabilities or types.ClientCapabilities()


async def list_tools(ctx: ServerRequestContext, params) -> types.ListToolsResult:
    tools = []
    if session_of(ctx) not in HIDDEN:
        tools.append(
            types.Tool(
                name="echo",
                description="Says its text back.",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
            )
        )
    if offers(ctx).elicitation is not None:
        tools.append(types.Tool(name="ask_name", description="Asks the client for a name.", input_schema=ANYTHING))
    if offers(ctx).sampling is not None:
        tools.append(types.Tool(name="summarize", description="Asks the client's model.", input_schema=ANYTHING))
    tools.append(types.Tool(name="hide_echo", description="Hides `echo` from this session.", input_schema=ANYTHING))
    return types.ListToolsResult(tools=tools)


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "echo":
        return text(str(arguments.get("text", "")))
    if params.name == "ask_name":
        answer = await ctx.session.elicit_form(
            "Your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            related_request_id=ctx.request_id,
        )
        return text(f"{answer.action}: {(answer.content or {}).get('name', '')}")
    if params.name == "hide_echo":
        HIDDEN.add(session_of(ctx))
        await ctx.session.send_tool_list_changed()
        return text("hidden")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True)


server = Server(
    "offers-server",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)

# Declares that its tool list changes, over either transport (the HTTP
# session manager asks for the options itself).
_options = server.create_initialization_options
server.create_initialization_options = lambda *args, **kwargs: _options(
    notification_options=NotificationOptions(tools_changed=True)
)


async def serve_stdio():
    async with mcp.server.stdio.stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(port: int):
    import uvicorn

    app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "http":
        serve_http(int(sys.argv[2]))
    else:
        import anyio

        anyio.run(serve_stdio)
