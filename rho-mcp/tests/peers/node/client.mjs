// Drives rho's MCP server with the official MCP TypeScript SDK and prints
// what it saw as one JSON object, for the Rust peer tests to check: the
// same scenarios, and the same record, as ../client.py.
//
//     node client.mjs stdio SERVER_COMMAND [ARGS...]
//     node client.mjs http URL
//     node client.mjs vanish URL
//
// Over stdio, Node starts the server with a socket pair for each piped
// stdio stream (libuv's way), not a pipe: the record also says what the
// server's stdin and stdout were (`stdio`), from /proc. Over HTTP, leaving
// mid-call is ending the session (`DELETE`). `vanish` only starts a slow
// call over HTTP and goes away without a word (no `DELETE`, no
// cancellation), as a client that crashed would.
//
// Each scenario records plain facts (texts, flags, timings); the Rust test
// decides what is right. A scenario that throws records its error instead
// of stopping the others.

import { readlinkSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StdioClientTransport,
  getDefaultEnvironment,
} from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [kind, ...target] = process.argv.slice(2);
const now = () => performance.now() / 1000;
const round = (seconds) => Math.round(seconds * 1000) / 1000;

function texts(result) {
  return result.content.filter((block) => block.type === "text").map((block) => block.text);
}

function summary(result, started) {
  const out = {
    is_error: Boolean(result.isError),
    texts: texts(result),
    kinds: result.content.map((block) => block.type),
    structured: result.structuredContent ?? null,
  };
  if (started !== undefined) {
    out.seconds = round(now() - started);
  }
  return out;
}

// client.py records annotations as the Python SDK dumps them: snake_case.
function snakeCase(annotations) {
  if (annotations === undefined || annotations === null) {
    return null;
  }
  return Object.fromEntries(
    Object.entries(annotations).map(([key, value]) => [
      key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`),
      value,
    ]),
  );
}

function newTransport() {
  if (kind !== "stdio") {
    return new StreamableHTTPClientTransport(new URL(target[0]));
  }
  // The SDK gives the server a minimal environment: pass on the log.
  const env = getDefaultEnvironment();
  if (process.env.RHO_MCP_SAMPLE_LOG) {
    env.RHO_MCP_SAMPLE_LOG = process.env.RHO_MCP_SAMPLE_LOG;
  }
  return new StdioClientTransport({
    command: target[0],
    args: target.slice(1),
    env,
    stderr: "inherit",
  });
}

async function connect({ onListChanged, askTheUser } = {}) {
  const transport = newTransport();
  const capabilities = askTheUser ? { elicitation: {} } : {};
  const client = new Client({ name: "rho-node-peer", version: "1" }, { capabilities });
  if (onListChanged) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => onListChanged());
  }
  if (askTheUser) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => askTheUser(request.params));
  }
  await client.connect(transport);
  return { client, transport };
}

// Ends a client as one that leaves does: over stdio by closing the
// server's stdin; over HTTP by ending its session first.
async function leave({ client, transport }) {
  if (kind === "http") {
    await transport.terminateSession();
  }
  await client.close();
}

async function call(client, name, args = {}, options = {}) {
  const started = now();
  const result = await client.callTool({ name, arguments: args }, undefined, options);
  return summary(result, started);
}

// Polls `predicate` until it is true or `seconds` pass; how long it took.
async function waitFor(predicate, seconds) {
  const started = now();
  while (now() - started < seconds) {
    if (await predicate()) {
      return round(now() - started);
    }
    await sleep(20);
  }
  return null;
}

function stdioOf(pid) {
  const kind = (fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch (error) {
      return `unknown (${error.code})`;
    }
  };
  return { stdin: kind(0), stdout: kind(1) };
}

async function scenarioList(client) {
  const listed = await client.listTools();
  const tools = Object.fromEntries(listed.tools.map((tool) => [tool.name, tool]));
  return {
    names: Object.keys(tools).sort(),
    echo_input_schema: tools.echo.inputSchema,
    echo_annotations: snakeCase(tools.echo.annotations),
    flaky_annotations: snakeCase(tools.flaky.annotations),
    word_stats_output_schema: tools.word_stats.outputSchema ?? null,
    echo_description: tools.echo.description,
  };
}

async function scenarioResults(client) {
  const pixel = (await client.callTool({ name: "pixel", arguments: {} })).content;
  const image = pixel.find((block) => block.type === "image");
  return {
    echo: await call(client, "echo", { text: "hello" }),
    pixel: await call(client, "pixel"),
    pixel_image: { mime: image.mimeType, data: image.data },
    fail: await call(client, "fail"),
    panic: await call(client, "panic"),
    hang: await call(client, "hang"),
    unknown: await call(client, "ecko", { text: "x" }),
    invalid: await call(client, "echo", { txt: 1, text: 2 }),
    word_stats: await call(client, "word_stats", { text: "a bb ccc" }),
    bad_stats: await call(client, "bad_stats", { text: "a" }),
  };
}

async function scenarioProgress(client) {
  const seen = [];
  const onprogress = ({ progress, total, message }) => {
    seen.push({ progress, total: total ?? null, message: message ?? null });
  };
  const result = await call(client, "count_up", { to: 5 }, { onprogress });
  // Notifications and the result travel separately; give stragglers a moment.
  await waitFor(async () => seen.length >= 5, 2);
  return { result, progress: seen };
}

async function scenarioCancel(client) {
  const started = now();
  const abort = new AbortController();
  const slow = client
    .callTool({ name: "slow", arguments: { ms: 20000 } }, undefined, { signal: abort.signal })
    .catch(() => {});
  await sleep(300);
  abort.abort("the test cancels");
  await slow;
  const cancelledAfter = round(now() - started);
  const noneRunning = async () => {
    const result = await client.callTool({ name: "slow_in_flight", arguments: {} });
    return texts(result).length === 1 && texts(result)[0] === "0";
  };
  const stoppedWithin = await waitFor(noneRunning, 5);
  // The session still serves after a cancellation.
  const after = await call(client, "echo", { text: "still here" });
  return { cancelled_after: cancelledAfter, stopped_within: stoppedWithin, after };
}

async function scenarioListChanged(client, notifications) {
  const names = async () => (await client.listTools()).tools.map((tool) => tool.name).sort();
  let before = notifications.toolsChanged;
  const defined = await call(client, "define");
  const toldDefine = await waitFor(async () => notifications.toolsChanged > before, 3);
  const namesAfterDefine = await names();

  before = notifications.toolsChanged;
  const flaky = [await call(client, "flaky"), await call(client, "flaky")];
  const toldQuarantine = await waitFor(async () => notifications.toolsChanged > before, 3);
  const namesAfterQuarantine = await names();
  const refused = await call(client, "flaky");
  return {
    defined,
    told_define: toldDefine,
    names_after_define: namesAfterDefine,
    flaky,
    told_quarantine: toldQuarantine,
    names_after_quarantine: namesAfterQuarantine,
    refused,
  };
}

// Leaves while a call runs; the server must abort it, not finish it.
async function scenarioDisconnect() {
  const started = now();
  const connected = await connect();
  connected.client.callTool({ name: "slow", arguments: { ms: 20000 } }).catch(() => {});
  await sleep(300);
  const leftAt = round(now() - started);
  // Over stdio this ends the server's stdin and waits for it to exit.
  await leave(connected);
  return { left_at: leftAt, closed_after: round(now() - started) };
}

// Starts a slow call and goes away without a word: the connection its
// answer was to come on is closed, nothing else is sent.
async function scenarioVanish() {
  const started = now();
  const { client } = await connect();
  client.callTool({ name: "slow", arguments: { ms: 20000 } }).catch(() => {});
  await sleep(300);
  const leftAt = round(now() - started);
  await client.close();
  return { left_at: leftAt };
}

// `wipe` needs a person: a client that can ask its user is asked (and its
// answer holds); one that cannot gets the host's refusal.
async function scenarioApproval(unasked) {
  const questions = [];
  const answers = ["approve", "decline", "refuse"];
  const askTheUser = async (params) => {
    questions.push({ message: params.message, schema: params.requestedSchema });
    const answer = answers.shift();
    if (answer === "decline") {
      return { action: "decline" };
    }
    return { action: "accept", content: { approve: answer === "approve" } };
  };
  const connected = await connect({ askTheUser });
  const { client } = connected;
  try {
    return {
      questions,
      approved: await call(client, "wipe"),
      declined: await call(client, "wipe"),
      refused: await call(client, "wipe"),
      not_asked: await call(client, "echo", { text: "no question" }),
      unasked_client: unasked,
    };
  } finally {
    await leave(connected);
  }
}

async function guarded(results, name, scenario) {
  try {
    results[name] = await scenario();
  } catch (error) {
    results[name] = { error: String(error), trace: error?.stack ?? "" };
  }
}

async function main() {
  const results = {};
  if (kind === "vanish") {
    await guarded(results, "vanish", () => scenarioVanish());
    process.stdout.write(`${JSON.stringify(results)}\n`);
    return;
  }
  const notifications = { toolsChanged: 0 };
  const onListChanged = () => {
    notifications.toolsChanged += 1;
  };
  const connected = await connect({ onListChanged });
  const { client, transport } = connected;
  if (kind === "stdio") {
    results.stdio = stdioOf(transport.pid);
  }
  await guarded(results, "list", () => scenarioList(client));
  await guarded(results, "results", () => scenarioResults(client));
  await guarded(results, "progress", () => scenarioProgress(client));
  await guarded(results, "cancel", () => scenarioCancel(client));
  await guarded(results, "list_changed", () => scenarioListChanged(client, notifications));
  // What a client that cannot ask its user gets; a failure here is the
  // approval scenario's record.
  let unasked;
  try {
    unasked = await call(client, "wipe");
  } catch (error) {
    unasked = { error: String(error) };
  }
  await leave(connected);
  await guarded(results, "approval", () => scenarioApproval(unasked));
  await guarded(results, "disconnect", () => scenarioDisconnect());
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

await main();
