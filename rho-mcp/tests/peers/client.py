"""Drives rho's MCP server with the official MCP Python SDK and prints what
it saw as one JSON object, for the Rust peer tests to check.

    client.py stdio SERVER_COMMAND [ARGS...]
    client.py http URL

Each scenario records plain facts (texts, flags, timings); the Rust test
decides what is right. A scenario that raises records its error instead of
stopping the others.
"""

import json
import os
import sys
import time
import traceback
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def texts(result):
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


def summary(result, started=None):
    out = {
        "is_error": bool(result.is_error),
        "texts": texts(result),
        "kinds": [block.type for block in result.content],
        "structured": result.structured_content,
    }
    if started is not None:
        out["seconds"] = round(time.monotonic() - started, 3)
    return out


class Notifications:
    """Counts the server's notifications by method."""

    def __init__(self):
        self.tools_changed = 0

    async def __call__(self, message):
        if isinstance(message, types.ServerNotification):
            message = message.root if hasattr(message, "root") else message
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed += 1


@asynccontextmanager
async def connect(target, notifications=None):
    kind, rest = target[0], target[1:]
    if kind == "stdio":
        # The SDK gives the server a minimal environment: pass on the log.
        env = {key: os.environ[key] for key in ["RHO_MCP_SAMPLE_LOG"] if key in os.environ}
        params = StdioServerParameters(command=rest[0], args=rest[1:], env=env)
        transport = stdio_client(params)
    else:
        transport = streamable_http_client(rest[0])
    async with transport as (read, write):
        async with ClientSession(read, write, message_handler=notifications) as session:
            await session.initialize()
            yield session


async def call(session, name, arguments=None, **options):
    started = time.monotonic()
    result = await session.call_tool(name, arguments or {}, **options)
    return summary(result, started)


async def wait_for(predicate, seconds):
    """Polls `predicate` until it is true or `seconds` pass; returns how long it took."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if await predicate():
            return round(time.monotonic() - started, 3)
        await anyio.sleep(0.02)
    return None


async def scenario_list(session):
    listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}

    def hints(name):
        annotations = tools[name].annotations
        return None if annotations is None else annotations.model_dump(exclude_none=True)

    return {
        "names": sorted(tools),
        "echo_input_schema": tools["echo"].input_schema,
        "echo_annotations": hints("echo"),
        "flaky_annotations": hints("flaky"),
        "word_stats_output_schema": tools["word_stats"].output_schema,
        "echo_description": tools["echo"].description,
    }


async def scenario_results(session):
    pixel = (await session.call_tool("pixel", {})).content
    image = next(block for block in pixel if block.type == "image")
    return {
        "echo": await call(session, "echo", {"text": "hello"}),
        "pixel": await call(session, "pixel"),
        "pixel_image": {"mime": image.mime_type, "data": image.data},
        "fail": await call(session, "fail"),
        "panic": await call(session, "panic"),
        "hang": await call(session, "hang"),
        "unknown": await call(session, "ecko", {"text": "x"}),
        "invalid": await call(session, "echo", {"txt": 1, "text": 2}),
        "word_stats": await call(session, "word_stats", {"text": "a bb ccc"}),
        "bad_stats": await call(session, "bad_stats", {"text": "a"}),
    }


async def scenario_progress(session):
    seen = []

    async def on_progress(progress, total, message):
        seen.append({"progress": progress, "total": total, "message": message})

    result = await call(session, "count_up", {"to": 5}, progress_callback=on_progress)
    # Notifications and the result travel separately; give stragglers a moment.
    await wait_for(lambda: _true_if(len(seen) >= 5), 2)
    return {"result": result, "progress": seen}


async def _true_if(value):
    return value


async def scenario_cancel(session):
    started = time.monotonic()
    with anyio.move_on_after(0.3):
        await session.call_tool("slow", {"ms": 20000})
    cancelled_after = round(time.monotonic() - started, 3)

    async def none_running():
        result = await session.call_tool("slow_in_flight", {})
        return texts(result) == ["0"]

    stopped_within = await wait_for(none_running, 5)
    # The session still serves after a cancellation.
    after = await call(session, "echo", {"text": "still here"})
    return {"cancelled_after": cancelled_after, "stopped_within": stopped_within, "after": after}


async def scenario_list_changed(session, notifications):
    before = notifications.tools_changed
    defined = await call(session, "define")
    told_define = await wait_for(lambda: _true_if(notifications.tools_changed > before), 3)
    names_after_define = sorted(tool.name for tool in (await session.list_tools()).tools)

    before = notifications.tools_changed
    flaky = [await call(session, "flaky"), await call(session, "flaky")]
    told_quarantine = await wait_for(lambda: _true_if(notifications.tools_changed > before), 3)
    names_after_quarantine = sorted(tool.name for tool in (await session.list_tools()).tools)
    refused = await call(session, "flaky")
    return {
        "defined": defined,
        "told_define": told_define,
        "names_after_define": names_after_define,
        "flaky": flaky,
        "told_quarantine": told_quarantine,
        "names_after_quarantine": names_after_quarantine,
        "refused": refused,
    }


async def scenario_disconnect(target):
    """Leaves while a call runs; the server must abort it, not finish it."""
    started = time.monotonic()
    left_at = None
    async with connect(target) as session:
        async with anyio.create_task_group() as group:

            async def slow():
                try:
                    await session.call_tool("slow", {"ms": 20000})
                except BaseException:
                    pass

            group.start_soon(slow)
            await anyio.sleep(0.3)
            left_at = round(time.monotonic() - started, 3)
            group.cancel_scope.cancel()
    return {"left_at": left_at, "closed_after": round(time.monotonic() - started, 3)}


async def guarded(results, name, scenario):
    try:
        results[name] = await scenario()
    except BaseException as error:  # noqa: BLE001 - every failure is data here
        results[name] = {"error": repr(error), "trace": traceback.format_exc()}


async def main(target):
    results = {}
    notifications = Notifications()
    async with connect(target, notifications) as session:
        await guarded(results, "list", lambda: scenario_list(session))
        await guarded(results, "results", lambda: scenario_results(session))
        await guarded(results, "progress", lambda: scenario_progress(session))
        await guarded(results, "cancel", lambda: scenario_cancel(session))
        await guarded(results, "list_changed", lambda: scenario_list_changed(session, notifications))
    await guarded(results, "disconnect", lambda: scenario_disconnect(target))
    print(json.dumps(results))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
