"""Two clients of `offers_server.py`, with the official MCP Python SDK's
client at 2025-11-25: one offers elicitation and sampling, one offers
nothing. Records, as one JSON object on stdout, the tools each is listed,
what `ask_name` answers the one that offers elicitation, and, after the
one that offers nothing hid `echo` from its own session (`hide_echo`),
whether it was told its tools changed and what each is listed then. The
Rust test (`tests/proxy_transparent.rs`) runs it against the server
directly and through `rho-mcp proxy` and compares the records.

    offers_client.py URL               both clients at once, one server
    offers_client.py stdio COMMAND...  each client its own process
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def answer_elicitation(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def answer_sampling(context, params):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="short"), model="none"
    )


def method_of(message):
    method = getattr(message, "method", None)
    if method is None:
        method = getattr(getattr(message, "root", None), "method", None)
    return method


async def names(client):
    return [tool.name for tool in (await client.list_tools()).tools]


def text(result):
    return [part.text for part in result.content if hasattr(part, "text")]


async def run(target):
    if target[0] == "stdio":
        server = StdioServerParameters(command=target[1], args=target[2:])
    else:
        server = target[0]
    told = anyio.Event()

    async def heard(message):
        if method_of(message) == "notifications/tools/list_changed":
            told.set()

    out = {}
    async with (
        Client(
            server,
            mode="legacy",
            elicitation_callback=answer_elicitation,
            sampling_callback=answer_sampling,
        ) as offering,
        Client(server, mode="legacy", message_handler=heard) as offering_nothing,
    ):
        out["offering"] = await names(offering)
        out["offering_nothing"] = await names(offering_nothing)
        out["asked"] = text(await offering.call_tool("ask_name", {}))
        await offering_nothing.call_tool("hide_echo", {})
        with anyio.move_on_after(5):
            await told.wait()
        out["told"] = told.is_set()
        out["offering_nothing_after"] = await names(offering_nothing)
        out["offering_after"] = await names(offering)
    return out


def main():
    out = anyio.run(run, sys.argv[1:])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
