"""An MCP server written the way the official Python SDK's documentation
writes one (`mcp` 2.3.0, its high-level `MCPServer` API): tools with
titles, annotations, icons, their own `_meta` and structured output,
static resources, resource templates, prompts with arguments, and
completions, a tool that asks its client a question, and a note kept
per session (its client's alone). It is a peer for the proxy's transparency tests
(`tests/proxy_transparent.rs`): everything a client sees of it directly
must be what it sees through `rho-mcp proxy`.

    highlevel_server.py stdio
        serves one client on stdin/stdout;
    highlevel_server.py http PORT
        serves streamable HTTP at http://127.0.0.1:PORT/mcp.
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    Annotations,
    Completion,
    Icon,
    PromptReference,
    ResourceTemplateReference,
    ToolAnnotations,
)
from pydantic import BaseModel

# Each session's note, by the session's id: its `Mcp-Session-Id` over
# HTTP, where the SDK makes a session object per request; one session a
# process over stdio.
NOTES: dict[str, str] = {}


def session_of(ctx: Context) -> str:
    headers = ctx.headers or {}
    return headers.get("mcp-session-id", "stdio")

ICON = Icon(src="data:image/png;base64,iVBORw0KGgo=", mime_type="image/png", sizes=["16x16"])

server = MCPServer(
    name="transparency-peer",
    title="Transparency peer",
    version="1.4.2",
    instructions="Use `add` for sums and `forecast` for the weather.",
    website_url="https://example.com/transparency-peer",
    icons=[ICON],
)


@server.tool(
    title="Add two numbers",
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    icons=[ICON],
    meta={"com.example/owner": "arithmetic", "com.example/cost": 1},
)
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


class Forecast(BaseModel):
    city: str
    celsius: float
    summary: str


@server.tool(title="Weather forecast", meta={"com.example/owner": "weather"})
def forecast(city: str, days: int = 1) -> Forecast:
    """The forecast for a city, as structured data."""
    return Forecast(city=city, celsius=21.5 + days, summary=f"sunny for {days} day(s)")


class Name(BaseModel):
    name: str


@server.tool()
async def whoami(ctx: Context) -> str:
    """Asks the user's name and greets them: elicitation the way the SDK's
    documentation writes it (a request to the client while the call runs,
    which only a client that opened with `initialize` can be sent)."""
    answer = await ctx.elicit("What is your name?", schema=Name)
    if answer.action == "accept":
        return f"Hello, {answer.data.name}."
    return f"No name: {answer.action}."


@server.tool()
async def remember(note: str, ctx: Context) -> str:
    """Keeps a note for this session alone (read back as the resource
    `session://note`), and logs it to this session's client where its
    revision has log messages."""
    NOTES[session_of(ctx)] = note
    if ctx.protocol_version == "2025-11-25":
        await ctx.info(f"remembered {note}")
    return "remembered"


@server.resource("session://{key}", name="session_note", mime_type="text/plain")
def session_note(key: str, ctx: Context) -> str:
    """What this session's client asked to `remember`."""
    return NOTES.get(session_of(ctx), "(nothing yet)")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def fail(reason: str) -> str:
    """Always fails, saying why."""
    raise ValueError(reason)


@server.resource(
    "notes://readme",
    name="readme",
    title="Read me",
    description="What this server is for",
    mime_type="text/markdown",
    annotations=Annotations(audience=["user"], priority=0.5),
    meta={"com.example/kind": "doc"},
)
def readme() -> str:
    return "# Transparency peer\n\nEverything here is seen the same through a proxy.\n"


@server.resource("notes://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return bytes(range(16))


@server.resource("notes://{topic}/summary", name="topic_summary", title="A topic's summary", mime_type="text/plain")
def topic_summary(topic: str) -> str:
    return f"A summary of {topic}."


@server.prompt(title="Review some code", icons=[ICON])
def review(code: str, language: str = "rust") -> str:
    """Asks for a review of some code."""
    return f"Review this {language} code:\n\n{code}"


@server.prompt()
def greet(name: str) -> list[dict]:
    """Greets someone, in two messages."""
    return [
        {"role": "user", "content": f"Hello, I am {name}."},
        {"role": "assistant", "content": f"Hello {name}, how can I help?"},
    ]


LANGUAGES = ["python", "rust", "ruby", "typescript"]
TOPICS = ["proxies", "protocols", "processes"]


@server.completion()
async def complete(ref, argument, context):
    if isinstance(ref, PromptReference) and argument.name == "language":
        values = [language for language in LANGUAGES if language.startswith(argument.value)]
        return Completion(values=values, total=len(values), has_more=False)
    if isinstance(ref, ResourceTemplateReference) and argument.name == "topic":
        return Completion(values=[topic for topic in TOPICS if topic.startswith(argument.value)])
    return None


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
