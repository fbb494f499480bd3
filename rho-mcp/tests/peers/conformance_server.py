"""An MCP server, written with the official MCP Python SDK (`mcp` 2.3.0),
that serves every fixture the official conformance suite's *server*
scenarios call (`@modelcontextprotocol/conformance`, pinned in
`tests/peers/conformance`).

It is the reference peer for rho's proxy: the suite is run against this
server alone over streamable HTTP, and against `rho-mcp proxy --http --
python conformance_server.py stdio` (this server behind rho over stdio); the
proxy must add no failure. The fixtures have the names, arguments and
answers of rho's own (`tests/conformance/registry.rs`, `features.rs`,
`asking.rs`, `input.rs`), so both runs are judged on the same tools.

Run it with the Python the peer tests install
(`tests/peers/install-python.sh`, into `target/peers/python`):

    target/peers/python/bin/python conformance_server.py stdio
        serves one client on stdin/stdout (nothing else is written to
        stdout; the SDK's and this file's logs go to stderr);
    target/peers/python/bin/python conformance_server.py http PORT
        serves streamable HTTP at http://127.0.0.1:PORT/mcp, both protocol
        eras at once: 2025-11-25 with `initialize` and sessions, 2026-07-28
        stateless with `_meta` on every request.

It is built on the SDK's low-level `Server`, not `MCPServer`: the suite
checks tool schemas and answers to the byte, and the low-level server sends
exactly the JSON written here instead of what `MCPServer` derives from
Python signatures. What `MCPServer` would add is added by hand: the sealing
of `requestState` (`RequestStateBoundary`), `subscriptions/listen` over an
in-process bus, and caching hints.

Beside rho's fixtures it serves three diagnostic hooks the suite's
2026-07-28 `server-stateless` scenario looks for (`test_streaming_elicitation`,
`test_logging_tool`, `test_trigger_prompt_change`). It lacks rho's tasks
fixtures (`tasks.rs`): the tasks extension (SEP-2663, the suite's `tasks-*`
scenarios) has no server side in `mcp` 2.3.0, so nothing here runs as a task.

Each fixture that needs the client is written once, the 2026-07-28 way (it
answers an `InputRequiredResult` and is called again with the answers); for a
2025-11-25 client the same questions are asked over the back channel (see
`until_answered`). So both revisions are served by the same code, whichever
one a proxy in front speaks to this server over stdio.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import struct
import sys
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from mcp import types
from mcp.server import InitializationOptions, NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import PromptsListChanged, ServerEvent, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

# Logging, sampling and roots are deprecated at 2026-07-28 (SEP-2577), but
# the suite still checks them at 2025-11-25: this server uses them on
# purpose, and the SDK's warning about each use would only be noise.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

NAME = "rho-conformance-python"

# ---------------------------------------------------------------------------
# The fixtures' data
# ---------------------------------------------------------------------------

# A 1x1 PNG (a transparent pixel), the same bytes rho's fixtures send.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg=="


def _wav() -> bytes:
    """The header of an empty 8 kHz mono 16-bit PCM sound: a valid WAV file."""
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", 0)


WAV_BASE64 = base64.b64encode(_wav()).decode()

EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")


def embedded() -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        ),
    )


def answer(*content: types.ContentBlock, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), is_error=error)


def one_field_form(message: str, field: str, kind: str) -> types.ElicitRequest:
    """A form elicitation asking one required field of JSON Schema type `kind`."""
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message,
            requested_schema={
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        )
    )


def sampling(prompt: str, max_tokens: int) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=text(prompt))],
            max_tokens=max_tokens,
        )
    )


# ---------------------------------------------------------------------------
# Talking back to the client
# ---------------------------------------------------------------------------


def is_modern(ctx: ServerRequestContext) -> bool:
    """Whether this request speaks 2026-07-28 (stateless, no back channel)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


# What the client answers to each kind of request a server may send it.
RESULT_TYPES: dict[str, type[types.Result]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
    "roots/list": types.ListRootsResult,
}


async def ask_client(ctx: ServerRequestContext, request: types.InputRequest) -> dict[str, Any]:
    """Sends `request` to the client over the back channel of a 2025-11-25
    session and returns its answer as wire JSON.

    `related_request_id` keeps the request on the stream of the call that
    asked: over streamable HTTP, without it the request would go out on the
    standalone GET stream, which the client may not have opened.
    """
    result = await ctx.session.send_request(
        request,  # type: ignore[arg-type]  # an InputRequest is a ServerRequest
        RESULT_TYPES[request.method],
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


Answered = TypeVar("Answered", bound=types.Result)


async def until_answered(
    ctx: ServerRequestContext,
    params: types.InputResponseRequestParams,
    run: Callable[[dict[str, Any], str | None], Awaitable[Answered | types.InputRequiredResult]],
) -> Answered | types.InputRequiredResult:
    """Runs `run` (a tool or a prompt) with the client's answers so far and
    the state its last `InputRequiredResult` left (SEP-2322), both from
    `params`, and returns what it returns.

    At 2026-07-28 an `InputRequiredResult` goes to the client, which calls
    again with the answers. A 2025-11-25 client cannot take one, but it can be
    asked over the back channel: each question is asked, then `run` is run
    again with the answers, as a 2026-07-28 client would have called it. So
    the same fixtures serve both revisions, whichever one a proxy in front
    speaks to this server.
    """
    answers = {key: wire(value) for key, value in (params.input_responses or {}).items()}
    state = params.request_state
    while True:
        result = await run(answers, state)
        if not isinstance(result, types.InputRequiredResult) or is_modern(ctx):
            return result
        answers = {key: await ask_client(ctx, request) for key, request in (result.input_requests or {}).items()}
        state = result.request_state


def wire(value: Any) -> Any:
    """`value` (an SDK model, or JSON already) as wire JSON, so answers are
    read the same way whichever model the SDK parsed them into."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


def field_of(answers: dict[str, Any], key: str, name: str) -> str:
    """The user's value of form field `name` in the elicitation answer `key`."""
    content = (answers.get(key) or {}).get("content") or {}
    value = content.get(name, "")
    return value if isinstance(value, str) else json.dumps(value)


def model_text(answers: dict[str, Any], key: str) -> str:
    """The model's text in the sampling answer `key`."""
    content = (answers.get(key) or {}).get("content")
    if isinstance(content, list):  # CreateMessageResultWithTools
        content = content[0] if content else {}
    return (content or {}).get("text", "")


def root_uris(answers: dict[str, Any], key: str) -> str:
    """The URIs of the roots in the roots/list answer `key`."""
    return ", ".join(root.get("uri", "") for root in (answers.get(key) or {}).get("roots", []))


# ---------------------------------------------------------------------------
# The tools
# ---------------------------------------------------------------------------


@dataclass
class Call:
    """What a tool is handed: the request's context, its arguments, and, for
    the input-required fixtures (SEP-2322), the client's answers so far and
    the state the tool left in its last `InputRequiredResult`."""

    ctx: ServerRequestContext
    arguments: dict[str, Any]
    answers: dict[str, Any]
    state: str | None


ToolResult = types.CallToolResult | types.InputRequiredResult
Handler = Callable[[Call], Awaitable[ToolResult]]


@dataclass
class Fixture:
    description: str
    schema: dict[str, Any]
    run: Handler


TOOLS: dict[str, Fixture] = {}


def tool(name: str, description: str, schema: dict[str, Any] | None = None) -> Callable[[Handler], Handler]:
    """Registers the decorated handler as the tool `name`."""

    def register(run: Handler) -> Handler:
        TOOLS[name] = Fixture(description, schema or EMPTY_OBJECT, run)
        return run

    return register


# -- content -----------------------------------------------------------------


@tool("test_simple_text", "Returns a simple text answer")
async def simple_text(call: Call) -> ToolResult:
    return answer(text("This is a simple text response for testing."))


@tool("test_image_content", "Returns an image")
async def image_content(call: Call) -> ToolResult:
    return answer(image())


@tool("test_audio_content", "Returns a sound")
async def audio_content(call: Call) -> ToolResult:
    return answer(types.AudioContent(type="audio", data=WAV_BASE64, mime_type="audio/wav"))


@tool("test_embedded_resource", "Returns an embedded resource")
async def embedded_resource(call: Call) -> ToolResult:
    return answer(embedded())


@tool("test_multiple_content_types", "Returns text, an image and a resource")
async def multiple_content_types(call: Call) -> ToolResult:
    return answer(text("Multiple content types test:"), image(), embedded())


@tool("test_error_handling", "Always fails")
async def error_handling(call: Call) -> ToolResult:
    # A tool's failure is a result with isError, not a JSON-RPC error: the
    # model calling the tool is meant to read it.
    return answer(text("This tool intentionally returns an error for testing"), error=True)


@tool(
    "json_schema_2020_12_tool",
    "Takes arguments described by JSON Schema 2020-12",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contact": {
                "anyOf": [
                    {"type": "string", "format": "email"},
                    {"type": "string", "pattern": "^[0-9+ -]+$"},
                ]
            },
            "kind": {"type": "string", "enum": ["person", "company"]},
            "registration": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["contact"]}]}],
        "if": {"properties": {"kind": {"const": "company"}}, "required": ["kind"]},
        "then": {"required": ["registration"]},
        "else": {},
        "additionalProperties": False,
    },
)
async def json_schema_2020_12(call: Call) -> ToolResult:
    return answer(text("JSON Schema 2020-12 tool called"))


@tool(
    "test_custom_header",
    "Answers its region, which a client over HTTP also sends as a header",
    {
        "type": "object",
        # `x-mcp-header` (SEP-2243): a 2026-07-28 client mirrors the argument
        # into an `Mcp-Param-Region` header, which the SDK checks against the
        # body (it finds this schema through `get_tool_input_schema`).
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    },
)
async def custom_header(call: Call) -> ToolResult:
    return answer(text(f"region: {call.arguments.get('region', '')}"))


# -- progress, streams and list changes --------------------------------------


@tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100")
async def with_progress(call: Call) -> ToolResult:
    for step in (0, 50, 100):
        # A no-op when the caller sent no progress token.
        await call.ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        await anyio.sleep(0.05)
    return answer(text("Progress tool completed"))


@tool("test_reconnection", "Closes its SSE stream mid-call; the answer waits for the client to resume")
async def reconnection(call: Call) -> ToolResult:
    # SEP-1699 polling: over streamable HTTP with an event store, closing the
    # call's SSE stream makes the client reconnect with Last-Event-ID, and the
    # answer is replayed to it. Over stdio there is no stream to close.
    if call.ctx.close_sse_stream is not None:
        await call.ctx.close_sse_stream()
    await anyio.sleep(0.2)
    return answer(text("Reconnection test completed successfully"))


async def dynamic(call: Call) -> ToolResult:
    return answer(text("dynamic"))


async def announce(ctx: ServerRequestContext, event: ServerEvent, legacy: Callable[[], Awaitable[None]]) -> None:
    """Tells the client a list changed: at 2026-07-28 on its
    subscriptions/listen streams (which the bus feeds), before that as a
    notification on the session (`legacy`)."""
    if is_modern(ctx):
        await BUS.publish(event)
    else:
        await legacy()


@tool("test_trigger_tool_change", "Adds test_dynamic_tool, or takes it away when it is there")
async def trigger_tool_change(call: Call) -> ToolResult:
    if TOOLS.pop("test_dynamic_tool", None) is not None:
        said = "test_dynamic_tool removed"
    else:
        TOOLS["test_dynamic_tool"] = Fixture("A tool added at run time", EMPTY_OBJECT, dynamic)
        said = "test_dynamic_tool added"
    await announce(call.ctx, ToolsListChanged(), call.ctx.session.send_tool_list_changed)
    return answer(text(said))


@tool("test_trigger_prompt_change", "Adds test_dynamic_prompt, or takes it away when it is there")
async def trigger_prompt_change(call: Call) -> ToolResult:
    if PROMPTS.pop("test_dynamic_prompt", None) is not None:
        said = "test_dynamic_prompt removed"
    else:
        PROMPTS["test_dynamic_prompt"] = types.Prompt(
            name="test_dynamic_prompt", description="A prompt added at run time"
        )
        said = "test_dynamic_prompt added"
    await announce(call.ctx, PromptsListChanged(), call.ctx.session.send_prompt_list_changed)
    return answer(text(said))


# -- logging ---------------------------------------------------------------


@tool("test_tool_with_logging", "Logs three messages to the client while it runs")
async def with_logging(call: Call) -> ToolResult:
    # `related_request_id`: on the call's own stream, as it goes.
    for step, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if step:
            await anyio.sleep(0.05)
        await call.ctx.session.send_log_message(
            level="info", data=message, logger="test_tool_with_logging", related_request_id=call.ctx.request_id
        )
    return answer(text("Logging tool completed"))


@tool("test_logging_tool", "Logs a message, which a 2026-07-28 client gets only if it asked for a log level")
async def logging_tool(call: Call) -> ToolResult:
    # At 2026-07-28 logging is opt-in per request (`_meta` names a level):
    # the SDK drops this message for a request that did not opt in.
    await call.ctx.session.send_log_message(
        level="info", data="A message of test_logging_tool", logger="test_logging_tool"
    )
    return answer(text("Logging tool completed"))


# -- reaching back to the client ---------------------------------------------
#
# A fixture that needs the client asks the 2026-07-28 way (SEP-2322): it
# answers an InputRequiredResult naming its questions, and is called again
# with the answers (`call.answers`) and the state it left (`call.state`). For
# a 2025-11-25 client, `until_answered` asks the same questions over the back
# channel instead. The SDK's RequestStateBoundary seals the state on the way
# out and refuses a changed one on the way back, so fixtures see it in clear.


def needs(call: Call, *keys: str) -> bool:
    """Whether the client has not answered all of `keys` yet."""
    return not all(key in call.answers for key in keys)


@tool(
    "test_sampling",
    "Asks the client's model to answer a prompt",
    {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
)
async def sampling_tool(call: Call) -> ToolResult:
    if needs(call, "reply"):
        return types.InputRequiredResult(input_requests={"reply": sampling(call.arguments.get("prompt", ""), 100)})
    return answer(text(f"LLM response: {model_text(call.answers, 'reply')}"))


async def elicit(call: Call, message: str, schema: dict[str, Any], said: str) -> ToolResult:
    """Asks the client's user `message` with the form `schema`; answers what
    they did, after `said`."""
    if needs(call, "form"):
        form = types.ElicitRequestFormParams(message=message, requested_schema=schema)
        return types.InputRequiredResult(input_requests={"form": types.ElicitRequest(params=form)})
    reply = call.answers["form"]
    content = json.dumps(reply.get("content") or {}, separators=(",", ":"))
    return answer(text(f"{said}: action={json.dumps(reply.get('action'))}, content={content}"))


@tool(
    "test_elicitation",
    "Asks the client's user for a name and an email",
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)
async def elicitation(call: Call) -> ToolResult:
    return await elicit(
        call,
        call.arguments.get("message", ""),
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
        "User response",
    )


@tool("test_elicitation_sep1034_defaults", "Asks the client's user, every field with a default")
async def elicitation_defaults(call: Call) -> ToolResult:
    return await elicit(
        call,
        "Please review the defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": True},
            },
        },
        "Elicitation completed",
    )


@tool("test_elicitation_sep1330_enums", "Asks the client's user to choose, in each enum form")
async def elicitation_enums(call: Call) -> ToolResult:
    return await elicit(
        call,
        "Please choose",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        },
        "Elicitation completed",
    )


# -- the suite's input-required-result-* fixtures (2026-07-28) ---------------


@tool("test_input_required_result_elicitation", "Asks the user's name, then greets them")
async def input_elicitation(call: Call) -> ToolResult:
    if needs(call, "user_name"):
        question = one_field_form("What is your name?", "name", "string")
        return types.InputRequiredResult(input_requests={"user_name": question})
    return answer(text(f"Hello, {field_of(call.answers, 'user_name', 'name')}!"))


# The suite's check that a 2026-07-28 response stream carries no request of
# the server's own (SEP-2575): the same question, asked in the result.
tool("test_streaming_elicitation", "Asks the user's name in its result, never in a request of its own")(
    input_elicitation
)


@tool("test_input_required_result_sampling", "Asks the client's model a question")
async def input_sampling(call: Call) -> ToolResult:
    if needs(call, "capital_question"):
        return types.InputRequiredResult(
            input_requests={"capital_question": sampling("What is the capital of France?", 100)}
        )
    return answer(text(f"The model said: {model_text(call.answers, 'capital_question')}"))


@tool("test_input_required_result_list_roots", "Asks the client for its roots")
async def input_list_roots(call: Call) -> ToolResult:
    if needs(call, "client_roots"):
        return types.InputRequiredResult(input_requests={"client_roots": types.ListRootsRequest()})
    return answer(text(f"The client's roots: {root_uris(call.answers, 'client_roots')}"))


@tool("test_input_required_result_request_state", "Asks for a confirmation over a request state")
async def input_request_state(call: Call) -> ToolResult:
    if needs(call, "confirm") or call.state != "awaiting-confirmation":
        return types.InputRequiredResult(
            input_requests={"confirm": one_field_form("Please confirm", "ok", "boolean")},
            request_state="awaiting-confirmation",
        )
    return answer(text(f"state-ok: confirmed {field_of(call.answers, 'confirm', 'ok')}"))


@tool("test_input_required_result_tampered_state", "Asks for a confirmation; a changed state is refused")
async def input_tampered_state(call: Call) -> ToolResult:
    # The refusal of a changed state is the SDK's (RequestStateBoundary): a
    # state that reaches this tool is the one it sent.
    return await input_request_state(call)


@tool("test_input_required_result_multiple_inputs", "Asks the user, the model and the roots at once")
async def input_multiple(call: Call) -> ToolResult:
    if needs(call, "user_name", "greeting", "client_roots"):
        return types.InputRequiredResult(
            input_requests={
                "user_name": one_field_form("What is your name?", "name", "string"),
                "greeting": sampling("Generate a greeting", 50),
                "client_roots": types.ListRootsRequest(),
            },
            # The suite wants a request state beside several questions; this
            # one only names them (a server may keep anything it needs here).
            request_state="asked: user_name, greeting, client_roots",
        )
    return answer(
        text(
            f"{model_text(call.answers, 'greeting')} to {field_of(call.answers, 'user_name', 'name')}"
            f" (roots: {root_uris(call.answers, 'client_roots')})"
        )
    )


@tool("test_input_required_result_multi_round", "Asks two questions, one after the other")
async def input_multi_round(call: Call) -> ToolResult:
    # The name from round one travels in the request state: the client sends
    # only the answers of the last round.
    state = json.loads(call.state) if call.state else {}
    if "name" not in state:
        if needs(call, "step1"):
            return types.InputRequiredResult(
                input_requests={"step1": one_field_form("Step 1: What is your name?", "name", "string")},
                request_state=json.dumps({"round": 1}),
            )
        state = {"name": field_of(call.answers, "step1", "name")}
    if needs(call, "step2"):
        return types.InputRequiredResult(
            input_requests={"step2": one_field_form("Step 2: What is your favorite color?", "color", "string")},
            request_state=json.dumps({"round": 2, **state}),
        )
    return answer(text(f"{state['name']} likes {field_of(call.answers, 'step2', 'color')}"))


@tool("test_input_required_result_capabilities", "Asks only what the client declared it can answer")
async def input_capabilities(call: Call) -> ToolResult:
    declared = call.ctx.session.client_capabilities or types.ClientCapabilities()
    questions: dict[str, types.InputRequest] = {}
    if declared.elicitation is not None:
        questions["user_name"] = one_field_form("What is your name?", "name", "string")
    if declared.sampling is not None:
        questions["capital_question"] = sampling("What is the capital of France?", 100)
    if declared.roots is not None:
        questions["client_roots"] = types.ListRootsRequest()
    if questions and needs(call, *questions):
        return types.InputRequiredResult(input_requests=questions)
    return answer(text(f"Asked what the client can answer: {sorted(questions)}"))


@tool("test_missing_capability", "Needs sampling, whatever the client declared")
async def missing_capability(call: Call) -> ToolResult:
    declared = call.ctx.session.client_capabilities
    if declared is None or declared.sampling is None:
        # A server must not ask what the client did not declare it answers:
        # it refuses the call with -32021, naming what it lacks.
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="This tool needs the client's sampling capability",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    if needs(call, "needed"):
        return types.InputRequiredResult(input_requests={"needed": sampling("This tool needs sampling", 10)})
    return answer(text(f"The model said: {model_text(call.answers, 'needed')}"))


# ---------------------------------------------------------------------------
# Request handlers
# ---------------------------------------------------------------------------


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=fixture.description, input_schema=fixture.schema)
            for name, fixture in TOOLS.items()
        ]
    )


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> ToolResult:
    fixture = TOOLS.get(params.name)
    if fixture is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    arguments = params.arguments or {}
    return await until_answered(ctx, params, lambda answers, state: fixture.run(Call(ctx, arguments, answers, state)))


RESOURCES = [
    types.Resource(
        uri="test://static-text", name="static-text", mime_type="text/plain", description="A text resource"
    ),
    types.Resource(
        uri="test://static-binary", name="static-binary", mime_type="image/png", description="A binary resource"
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        mime_type="text/plain",
        description="A resource to subscribe to",
    ),
]

STATIC_TEXT = "This is the content of the static text resource."


async def list_resources(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_resource_templates(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(
                uri_template="test://template/{id}/data",
                name="template",
                mime_type="application/json",
                description="Data of one id",
            )
        ]
    )


async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri in ("test://static-text", "test://watched-resource"):
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_BASE64)
    elif uri.startswith("test://template/") and uri.endswith("/data") and len(uri) > len("test://template//data"):
        id_ = uri[len("test://template/") : -len("/data")]
        contents = types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps({"id": id_, "data": f"data of {id_}"})
        )
    else:
        # SEP-2164: an unknown resource is the caller's mistake, -32602 with
        # the URI, never an empty contents list.
        raise MCPError(code=types.INVALID_PARAMS, message=f"Resource not found: {uri}", data={"uri": uri})
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: ServerRequestContext, params: types.SubscribeRequestParams) -> types.EmptyResult:
    # The resources never change: a subscription is accepted and has nothing
    # to report.
    return types.EmptyResult()


async def unsubscribe(ctx: ServerRequestContext, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def set_logging_level(ctx: ServerRequestContext, params: types.SetLevelRequestParams) -> types.EmptyResult:
    # Accepted and not kept: the logging fixtures log at info whatever the
    # level, which is all the suite checks.
    return types.EmptyResult()


# By name, so that test_trigger_prompt_change can add and take away one.
PROMPTS = {
    prompt.name: prompt
    for prompt in [
        types.Prompt(name="test_simple_prompt", description="A prompt without arguments"),
        types.Prompt(
            name="test_prompt_with_arguments",
            description="A prompt with two arguments",
            arguments=[
                types.PromptArgument(name="arg1", description="The first", required=True),
                types.PromptArgument(name="arg2", description="The second", required=True),
            ],
        ),
        types.Prompt(
            name="test_prompt_with_embedded_resource",
            description="A prompt holding a resource",
            arguments=[types.PromptArgument(name="resourceUri", description="The resource", required=True)],
        ),
        types.Prompt(name="test_prompt_with_image", description="A prompt holding an image"),
        types.Prompt(
            name="test_input_required_result_prompt", description="A prompt that asks the user for its context first"
        ),
    ]
}


async def list_prompts(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=list(PROMPTS.values()))


async def get_prompt(
    ctx: ServerRequestContext, params: types.GetPromptRequestParams
) -> types.GetPromptResult | types.InputRequiredResult:
    arguments = params.arguments or {}
    content: types.ContentBlock
    match params.name:
        case "test_simple_prompt":
            content = text("This is a simple prompt for testing.")
        case "test_prompt_with_arguments":
            content = text(
                f"Prompt with arguments: arg1='{arguments.get('arg1', '')}', arg2='{arguments.get('arg2', '')}'"
            )
        case "test_prompt_with_embedded_resource":
            content = types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=arguments.get("resourceUri", ""),
                    mime_type="text/plain",
                    text="Embedded resource content for testing.",
                ),
            )
        case "test_input_required_result_prompt":
            return await until_answered(ctx, params, context_prompt)
        case "test_prompt_with_image":
            content = image()
        case "test_dynamic_prompt" if "test_dynamic_prompt" in PROMPTS:
            content = text("dynamic")
        case other:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {other}")
    return prompt(content)


def prompt(content: types.ContentBlock) -> types.GetPromptResult:
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=content)])


async def context_prompt(
    answers: dict[str, Any], state: str | None
) -> types.GetPromptResult | types.InputRequiredResult:
    # A prompt may need the client too: SEP-2322 is not only for tools.
    if "user_context" not in answers:
        return types.InputRequiredResult(
            input_requests={"user_context": one_field_form("What context should the prompt use?", "context", "string")}
        )
    return prompt(text(f"A prompt in this context: {field_of(answers, 'user_context', 'context')}"))


async def complete(ctx: ServerRequestContext, params: types.CompleteRequestParams) -> types.CompleteResult:
    # Nothing here has values worth completing; an empty completion is an
    # answer all the same.
    return types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))


# ---------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------

# The in-process bus feeding 2026-07-28 `subscriptions/listen` streams.
BUS = InMemorySubscriptionBus()


class ConformanceServer(Server):
    """The low-level server, declaring at `initialize` (2025-11-25) that its
    tool and prompt lists change: the low-level server declares no
    `listChanged` unless told, and over HTTP the SDK builds the `initialize`
    answer itself, from this method."""

    def create_initialization_options(  # type: ignore[override]
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, prompts_changed=True), *args, **kwargs
        )


def build_server() -> Server:
    server = ConformanceServer(
        NAME,
        version="1.0.0",
        # 2026-07-28 results of the cacheable methods must say how long they
        # keep (SEP-2549); the tool and prompt lists change at run time
        # (test_trigger_*), so: not at all, and only for the caller.
        cache_hints={method: CacheHint(ttl_ms=0, scope="private") for method in CACHEABLE_METHODS},
        # Lets the SDK check `Mcp-Param-*` headers against a tool's schema
        # without listing every tool.
        get_tool_input_schema=lambda name: TOOLS[name].schema if name in TOOLS else None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=ListenHandler(BUS),
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )
    # Registered after construction: as a constructor argument the SDK warns
    # that logging is deprecated (it is, at 2026-07-28; 2025-11-25 has it).
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_logging_level)
    # `requestState` leaves sealed (encrypted, bound to its request) and is
    # refused when it comes back changed; the keys live as long as the process.
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=NAME))
    return server


class MemoryEventStore(EventStore):
    """Every SSE event of the process, kept so that a client that lost a
    stream can resume it with Last-Event-ID (SEP-1699). With an event store
    the SDK also opens each stream with a priming event, as the suite wants."""

    def __init__(self) -> None:
        self.events: list[tuple[str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        self.events.append((stream_id, message))
        return str(len(self.events))

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        try:
            last = int(last_event_id)
            stream_id = self.events[last - 1][0]
        except (ValueError, IndexError):
            return None
        for index in range(last, len(self.events)):
            stream, message = self.events[index]
            # Priming events (no message) mark a stream; there is nothing to replay.
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, str(index + 1)))
        return stream_id


async def serve_stdio(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(
        event_store=MemoryEventStore(),
        # Tells clients to reconnect a closed stream after 100 ms.
        retry_interval=100,
        # On loopback the SDK refuses other Host and Origin headers (DNS
        # rebinding protection).
        host="127.0.0.1",
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description="An MCP server with the conformance suite's fixtures.")
    transports = parser.add_subparsers(dest="transport", required=True)
    transports.add_parser("stdio", help="serve one client on stdin/stdout")
    http = transports.add_parser("http", help="serve streamable HTTP at http://127.0.0.1:PORT/mcp")
    http.add_argument("port", type=int)
    options = parser.parse_args()

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    server = build_server()
    if options.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        anyio.run(serve_http, server, options.port)


if __name__ == "__main__":
    main()
