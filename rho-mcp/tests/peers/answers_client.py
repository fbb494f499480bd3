"""Calls the same tools of two MCP servers over stdio with the official MCP
Python SDK, one call after the other, and prints what each answered as one
JSON object, for the Rust tests to compare.

    answers_client.py SPEC

SPEC is JSON: `{"direct": [command...], "proxied": [command...], "calls":
[{"tool": name, "arguments": {...}, "tries": n}]}`. Each call is made
`tries` times (default 1), each time to the direct server then to the
proxied one, so that an answer holding the time of day can be compared
within one second. A call that raises records its error instead; the Rust
test decides what is right.
"""

import json
import sys
import traceback
from contextlib import AsyncExitStack

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def dump(result):
    """The result as MCP's JSON, as the SDK read it."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def connect(stack, command):
    params = StdioServerParameters(command=command[0], args=command[1:])
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def answer(session, call):
    try:
        result = await session.call_tool(call["tool"], call.get("arguments") or {})
        return {"result": dump(result)}
    except BaseException as error:  # noqa: BLE001 - every failure is data here
        return {"error": repr(error), "trace": traceback.format_exc()}


async def main(spec):
    async with AsyncExitStack() as stack:
        direct = await connect(stack, spec["direct"])
        proxied = await connect(stack, spec["proxied"])
        seen = {
            "direct_tools": sorted(tool.name for tool in (await direct.list_tools()).tools),
            "proxied_tools": sorted(tool.name for tool in (await proxied.list_tools()).tools),
            "calls": [],
        }
        for call in spec["calls"]:
            tries = []
            for _ in range(call.get("tries", 1)):
                tries.append({"direct": await answer(direct, call), "proxied": await answer(proxied, call)})
            seen["calls"].append({"tool": call["tool"], "arguments": call.get("arguments"), "tries": tries})
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
