"""Drives `rho-mcp proxy` with the official MCP Python SDK and prints what
it saw as one JSON object, for the Rust proxy tests to check.

    proxy_client.py everything PROXY_COMMAND [ARGS...]
    proxy_client.py fault PROXY_COMMAND [ARGS...]
    proxy_client.py features COMMAND [ARGS...]
    proxy_client.py relay COMMAND [ARGS...]
    proxy_client.py notified COMMAND [ARGS...]
    proxy_client.py features|relay|notified http URL

`everything`: the proxy in front of the MCP reference server, with the
policy of tests/proxy.rs; `fault`: in front of the fault server, which is
made to die; `features`: the resources, prompts and completions of the
server COMMAND runs (the proxy, or the server itself, to compare);
`relay`: the server's questions to its client during a call (elicitation,
sampling), answered here, and what the server made of the answers;
`notified`: what the server announces to a client that set its log level
and subscribed to a resource (log messages, resource updates). Each
scenario records plain facts; the Rust test decides
what is right. A scenario that raises records its error instead.
"""

import json
import sys
import time
import traceback
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def summary(result, started):
    return {
        "is_error": bool(result.is_error),
        "texts": [block.text for block in result.content if getattr(block, "type", None) == "text"],
        "kinds": [block.type for block in result.content],
        "seconds": round(time.monotonic() - started, 3),
    }


@asynccontextmanager
async def connect(command, elicitation=None, sampling=None, notified=None):
    # `http URL`: a proxy serving over streamable HTTP; else a command.
    if command[0] == "http":
        transport = streamable_http_client(command[1])
    else:
        transport = stdio_client(StdioServerParameters(command=command[0], args=command[1:]))
    async with transport as (read, write):
        async with ClientSession(
            read,
            write,
            elicitation_callback=elicitation,
            sampling_callback=sampling,
            message_handler=notified,
        ) as session:
            session.initialized_with = await session.initialize()
            yield session


async def call(session, name, arguments=None):
    started = time.monotonic()
    return summary(await session.call_tool(name, arguments or {}), started)


async def guarded(results, name, scenario):
    try:
        results[name] = await scenario()
    except BaseException as error:  # noqa: BLE001 - every failure is data here
        results[name] = {"error": repr(error), "trace": traceback.format_exc()}


async def everything(command):
    results = {}
    questions = []
    answers = iter(["approve", "decline"])

    async def ask_the_user(context, params):
        questions.append({"message": params.message})
        if next(answers) == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async with connect(command, elicitation=ask_the_user) as session:

        async def listed():
            return {
                "names": sorted(tool.name for tool in (await session.list_tools()).tools),
                "instructions": session.initialized_with.instructions,
            }

        async def calls():
            return {
                "allowed": await call(session, "echo", {"message": "through the proxy"}),
                "denied": await call(session, "get-sum", {"a": 1, "b": 2}),
                "by_default": await call(session, "toggle-simulated-logging"),
                "asked_accepted": await call(session, "get-tiny-image"),
                "asked_declined": await call(session, "get-tiny-image"),
                "hung": await call(
                    session, "trigger-long-running-operation", {"duration": 30, "steps": 30}
                ),
                "after": await call(session, "echo", {"message": "still serving"}),
            }

        await guarded(results, "list", listed)
        await guarded(results, "calls", calls)
    results["questions"] = questions

    async def unasked():
        # A client without elicitation: nobody can be asked.
        async with connect(command) as session:
            return await call(session, "get-tiny-image")

    await guarded(results, "unasked", unasked)
    return results


async def fault(command):
    results = {}
    async with connect(command) as session:

        async def deaths():
            first = await call(session, "echo", {"text": "before"})
            capped = await call(session, "echo", {"text": "a" * 500 + "b" * 500})
            died = await call(session, "die", {"code": 3, "stderr": "fault-server: out of cheese\n"})
            restarted = await call(session, "echo", {"text": "after a restart"})
            died_again = await call(session, "die", {"code": 4})
            # The second death quarantines the server; its watcher counts it
            # a moment after the call ends.
            await anyio.sleep(0.5)
            quarantined = await call(session, "echo", {"text": "too late"})
            names = sorted(tool.name for tool in (await session.list_tools()).tools)
            return {
                "first": first,
                "capped": capped,
                "died": died,
                "restarted": restarted,
                "died_again": died_again,
                "quarantined": quarantined,
                "names_after": names,
            }

        await guarded(results, "deaths", deaths)
    return results


async def features(command):
    """What a client sees of the server's features, in a form to compare."""
    results = {}
    async with connect(command) as session:
        declared = session.initialized_with.capabilities

        async def capabilities():
            return {
                "resources": declared.resources is not None,
                "prompts": declared.prompts is not None,
                "completions": declared.completions is not None,
            }

        async def resources():
            listed = await session.list_resources()
            first = listed.resources[0]
            read = await session.read_resource(first.uri)
            templates = await session.list_resource_templates()
            return {
                "uris": [str(resource.uri) for resource in listed.resources],
                "next_cursor": listed.next_cursor is not None,
                "first": read.model_dump(mode="json", exclude_none=True),
                "templates": [t.uri_template for t in templates.resource_templates],
            }

        async def prompts():
            listed = await session.list_prompts()
            plain = next(p for p in listed.prompts if not any(a.required for a in p.arguments or []))
            got = await session.get_prompt(plain.name)
            return {
                "names": [prompt.name for prompt in listed.prompts],
                "plain": got.model_dump(mode="json", exclude_none=True),
            }

        async def completions():
            # Each prompt argument's completions for an empty value.
            completed = {}
            for prompt in (await session.list_prompts()).prompts:
                for argument in prompt.arguments or []:
                    done = await session.complete(
                        types.PromptReference(type="ref/prompt", name=prompt.name),
                        {"name": argument.name, "value": ""},
                    )
                    completed[f"{prompt.name}/{argument.name}"] = done.completion.values
            return completed

        async def unknown():
            try:
                await session.read_resource("rho-test://no/such/resource")
                return {"answered": True}
            except Exception as error:  # noqa: BLE001 - the error is the data
                data = getattr(error, "error", None)
                return {
                    "refused": type(error).__name__,
                    "code": getattr(data, "code", None),
                    "message": getattr(data, "message", str(error)),
                }

        for name, scenario in [
            ("capabilities", capabilities),
            ("resources", resources),
            ("prompts", prompts),
            ("completions", completions),
            ("unknown", unknown),
        ]:
            await guarded(results, name, scenario)
    return results


async def relay(command):
    """The server asks this client's user and model during calls."""
    results = {}
    asked = []

    async def ask_the_user(context, params):
        asked.append({"elicitation": params.message})
        return types.ElicitResult(
            action="accept",
            content={"name": "Ada", "check": True, "integer": 7},
        )

    async def ask_the_model(context, params):
        asked.append({"sampling": [m.content.text for m in params.messages]})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="a sampled answer"),
            model="rho-test-model",
            stop_reason="endTurn",
        )

    async with connect(command, elicitation=ask_the_user, sampling=ask_the_model) as session:

        async def elicited():
            return await call(session, "trigger-elicitation-request")

        async def sampled():
            return await call(
                session, "trigger-sampling-request", {"prompt": "say hi", "maxTokens": 20}
            )

        await guarded(results, "elicited", elicited)
        await guarded(results, "sampled", sampled)
    results["asked"] = asked
    return results


async def notified(command):
    """The server's announcements to a client that asked for them."""
    results = {}
    heard = []
    updated = anyio.Event()

    async def hear(message):
        if isinstance(message, types.LoggingMessageNotification):
            heard.append({"log": message.params.level, "data": message.params.data})
        elif isinstance(message, types.ResourceUpdatedNotification):
            heard.append({"updated": str(message.params.uri)})
            updated.set()

    async with connect(command, notified=hear) as session:
        uri = str((await session.list_resources()).resources[0].uri)

        async def subscribed():
            await session.set_logging_level("debug")
            await session.subscribe_resource(uri)
            # The server updates a subscribed resource every 5 s once asked.
            toggled = await call(session, "toggle-subscriber-updates")
            with anyio.fail_after(15):
                await updated.wait()
            await call(session, "toggle-subscriber-updates")
            await session.unsubscribe_resource(uri)
            return {"uri": uri, "toggled": toggled["texts"]}

        await guarded(results, "subscribed", subscribed)
    # The log messages the subscription's requests made, and the first
    # update: later ones depend on timing.
    results["heard"] = [
        entry for entry in heard if "Subscribe" in str(entry.get("data", ""))
    ] + [entry for entry in heard if "updated" in entry][:1]
    return results


async def main(argv):
    kind, command = argv[0], argv[1:]
    scenario = {
        "everything": everything,
        "fault": fault,
        "features": features,
        "relay": relay,
        "notified": notified,
    }[kind]
    print(json.dumps(await scenario(command)))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
