"""Records everything a client of one MCP server sees, with the official
MCP Python SDK's client, as one JSON object on stdout: the server's
identity, capabilities and instructions, every list (tools, resources,
resource templates, prompts), every listed resource read, and the calls,
prompt gets, reads (before the calls and after them) and completions a
script asks for. It answers an
elicitation as a person would, with the name "Ada". The Rust test
(`tests/proxy_transparent.rs`) runs it against a server directly and
through `rho-mcp proxy` and compares the two records item by item.

    compare_client.py MODE SCRIPT_JSON stdio COMMAND [ARGS...]
    compare_client.py MODE SCRIPT_JSON http URL

MODE is `legacy` (the 2025-11-25 handshake) or `modern` (the SDK's `auto`:
`server/discover` first, so 2026-07-28 with a server that speaks it; the
record's `protocol_version` says which was spoken). SCRIPT_JSON:

    {"calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
     "prompts": [{"name": "review", "arguments": {"code": "fn main() {}"}}],
     "reads": ["notes://proxies/summary"],
     "reads_after": ["session://note"],
     "completions": [{"ref": {"type": "ref/prompt", "name": "review"},
                      "argument": {"name": "language", "value": "r"}}]}

Every answer is recorded as the SDK read it (its JSON, by alias, without
absent fields); an error is recorded as its code and message, so the test
compares failures too.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def plain(model):
    if model is None or isinstance(model, list):
        return model
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def recorded(step):
    try:
        return {"ok": plain(await step())}
    except MCPError as error:
        return {"error": {"code": error.error.code, "message": error.error.message}}
    except Exception as error:  # noqa: BLE001 - every failure is data here
        return {"failed": f"{type(error).__name__}: {error}"}


async def answer_elicitation(context, params):
    """The person at this client: gives the name asked for."""
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def everything_listed(list_page, field):
    items = []
    cursor = None
    while True:
        page = await list_page(cursor=cursor)
        items.extend(plain(item) for item in getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items


async def record(mode, script, target):
    if target[0] == "http":
        server = target[1]
    else:
        server = StdioServerParameters(command=target[1], args=target[2:])
    out = {}
    chosen = {"legacy": "legacy", "modern": "auto"}[mode]
    async with Client(server, mode=chosen, elicitation_callback=answer_elicitation) as client:
        out["protocol_version"] = client.protocol_version
        out["server_info"] = plain(client.server_info)
        out["capabilities"] = plain(client.server_capabilities)
        out["instructions"] = client.instructions
        capabilities = client.server_capabilities
        if capabilities.tools is not None:
            out["tools"] = await recorded(lambda: everything_listed(client.list_tools, "tools"))
        resources = []
        if capabilities.resources is not None:
            out["resources"] = await recorded(lambda: everything_listed(client.list_resources, "resources"))
            out["templates"] = await recorded(
                lambda: everything_listed(client.list_resource_templates, "resource_templates")
            )
            resources = [item["uri"] for item in out["resources"].get("ok", [])]
        if capabilities.prompts is not None:
            out["prompts"] = await recorded(lambda: everything_listed(client.list_prompts, "prompts"))
        out["reads"] = {}
        for uri in resources + script.get("reads", []):
            out["reads"][uri] = await recorded(lambda uri=uri: client.read_resource(uri))
        out["calls"] = []
        for call in script.get("calls", []):
            out["calls"].append(
                await recorded(lambda call=call: client.call_tool(call["name"], call.get("arguments", {})))
            )
        # Read after the calls: what a call left in the client's session.
        out["reads_after"] = {}
        for uri in script.get("reads_after", []):
            out["reads_after"][uri] = await recorded(lambda uri=uri: client.read_resource(uri))
        out["prompt_gets"] = []
        for prompt in script.get("prompts", []):
            out["prompt_gets"].append(
                await recorded(lambda prompt=prompt: client.get_prompt(prompt["name"], prompt.get("arguments")))
            )
        out["completions"] = []
        for completion in script.get("completions", []):
            ref = completion["ref"]
            if ref["type"] == "ref/prompt":
                ref = types.PromptReference(type="ref/prompt", name=ref["name"])
            else:
                ref = types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
            out["completions"].append(
                await recorded(lambda ref=ref, completion=completion: client.complete(ref, completion["argument"]))
            )
    return out


def main():
    mode, script, *target = sys.argv[1:]
    out = anyio.run(record, mode, json.loads(script), target)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
