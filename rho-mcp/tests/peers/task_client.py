"""Calls the MCP reference server's `simulate-research-query`, which the
server runs only as a task, as a plain call, with the official MCP Python
SDK's client at 2025-11-25 (which makes no tasks), and answers the
question the task asks as a person would, choosing "historical". Records,
as one JSON object on stdout, the questions it was asked and the first
line of the result. The Rust test (`tests/proxy_answers.rs`) runs it
through `rho-mcp proxy`, which runs the call as a task on its behalf.

    task_client.py URL
    task_client.py stdio COMMAND...
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

TOOL = "simulate-research-query"


async def run(target):
    if target[0] == "stdio":
        server = StdioServerParameters(command=target[1], args=target[2:])
    else:
        server = target[0]
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"interpretation": "historical"})

    async with Client(server, mode="legacy", elicitation_callback=answer) as client:
        # The server adds the tool once its client is initialized.
        with anyio.fail_after(10):
            while TOOL not in [tool.name for tool in (await client.list_tools()).tools]:
                await anyio.sleep(0.05)
        result = await client.call_tool(TOOL, {"topic": "rho", "ambiguous": True})
    text = [part.text for part in result.content if hasattr(part, "text")]
    return {
        "asked": asked,
        "first_line": text[0].splitlines()[0] if text else None,
        "is_error": bool(result.is_error),
    }


def main():
    out = anyio.run(run, sys.argv[1:])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
