"""Two clients of one MCP server at once, with the official MCP Python
SDK's client at 2025-11-25, each in a session of its own: records what
each reads of its session's note (`highlevel_server.py`'s `remember` and
`session://note`) and which log messages each was sent, as one JSON
object on stdout. The Rust test (`tests/proxy_transparent.rs`) runs it
through `rho-mcp proxy --http` and checks that neither client sees or
changes the other's session, as neither would directly.

    sessions_client.py URL
"""

import json
import sys

import anyio
from mcp import Client


def text(result):
    return [part.text for part in result.contents if hasattr(part, "text")]


async def run(url):
    logs = {"first": [], "second": []}

    def logger(name):
        async def heard(params):
            logs[name].append(params.data)

        return heard

    out = {}
    async with (
        Client(url, mode="legacy", logging_callback=logger("first")) as first,
        Client(url, mode="legacy", logging_callback=logger("second")) as second,
    ):
        await first.call_tool("remember", {"note": "alpha"})
        out["second_before"] = text(await second.read_resource("session://note"))
        await second.call_tool("remember", {"note": "beta"})
        out["first"] = text(await first.read_resource("session://note"))
        out["second"] = text(await second.read_resource("session://note"))
        # A log message is a notification: give both a moment to arrive.
        await anyio.sleep(0.5)
    out["logs"] = logs
    return out


def main():
    out = anyio.run(run, sys.argv[1])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
