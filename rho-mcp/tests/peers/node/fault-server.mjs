// A small MCP server over stdio, written by hand (no SDK), that misbehaves
// on request: the stand-in for the faults rho-mcp's import tests provoke.
//
//   node fault-server.mjs
//
// RHO_FAULT_START picks a fault at start: `hang` (never answers
// `initialize`), `garbage` (writes a line that is not JSON first), `exit`
// (writes to stderr and exits with code 7 at once).
// Each tool call misbehaves as its name says; see `tools` below.
import process from "node:process";
import fs from "node:fs";

const start = process.env.RHO_FAULT_START || "";
if (start === "exit") {
    process.stderr.write("fault-server: refusing to start\n");
    process.exit(7);
}
if (start === "garbage") {
    process.stdout.write("Welcome to the fault server!\n");
}

const cancelled = [];
// The `serial` call under way, if any, and the calls served, in order.
let serialBusy = null;
const served = [];
let extraTool = false;

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const answer = (id, result) => send({ jsonrpc: "2.0", id, result });
const text = (id, value) => answer(id, { content: [{ type: "text", text: value }] });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const object = (properties = {}) => ({ type: "object", properties });
const tools = () => [
    { name: "echo", description: "Answers `text`.", inputSchema: object({ text: { type: "string" } }),
      annotations: { readOnlyHint: true, title: "Echo" } },
    { name: "sleep", description: "Answers after `ms` milliseconds.", inputSchema: object({ ms: { type: "number" } }) },
    { name: "hang", description: "Never answers.", inputSchema: object() },
    { name: "cancelled", description: "The request ids it was told were cancelled.", inputSchema: object() },
    { name: "die", description: "Writes `stderr` to stderr, then exits with `code` after `ms`.",
      inputSchema: object({ code: { type: "number" }, ms: { type: "number" }, stderr: { type: "string" } }) },
    { name: "garbage", description: "Writes a line that is not JSON.", inputSchema: object() },
    { name: "huge", description: "Writes a line of `mb` megabytes.", inputSchema: object({ mb: { type: "number" } }) },
    { name: "unknown_id", description: "Answers a request it was never sent.", inputSchema: object() },
    { name: "close_stdout", description: "Closes its stdout and stays alive.", inputSchema: object() },
    { name: "progress", description: "Reports `steps` steps of progress, then answers (all in one write with `burst`).",
      inputSchema: object({ steps: { type: "number" }, burst: { type: "boolean" } }) },
    { name: "picture", description: "An image and structured content.", inputSchema: object(),
      outputSchema: object({ width: { type: "number" } }) },
    { name: "fails", description: "Answers with isError.", inputSchema: object() },
    { name: "answer", description: "Answers with `result` as given, with an audio part of `audioBytes` bytes after its content if asked.",
      inputSchema: object({ result: { type: "object" }, audioBytes: { type: "number" } }) },
    { name: "add_tool", description: "Adds the tool `added` and says the list changed.", inputSchema: object() },
    { name: "serial", description: "Takes `ms` milliseconds to answer call `n`; fails a call that overlaps another (a server that cannot take parallel calls).",
      inputSchema: object({ ms: { type: "number" }, n: { type: "number" } }) },
    { name: "task_only", description: "Runs only as a task (MCP 2025-11-25): answers after `ms` milliseconds.",
      inputSchema: object({ ms: { type: "number" } }), execution: { taskSupport: "required" } },
    { name: "task_only_quiet", description: "As `task_only`, but its listing does not say so: only its refusal of a plain call does.",
      inputSchema: object({ ms: { type: "number" } }) },
    { name: "cancelled_tasks", description: "The task ids it was told were cancelled.", inputSchema: object() },
    ...(extraTool ? [{ name: "added", description: "Added at run time.", inputSchema: object() }] : []),
];

// The tasks of 2025-11-25 made of calls, by id: each a promise of its
// result and whether it was cancelled.
const tasks = new Map();
const cancelledTasks = [];
const isoNow = () => new Date().toISOString();

function createTask(id, ms, progressToken) {
    const taskId = `task-${tasks.size + 1}`;
    const task = { cancelled: false };
    // Halfway, it reports its progress with the call's token.
    const report = () => progressToken !== undefined &&
        send({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken, progress: 1, total: 2 } });
    task.result = sleep(ms / 2).then(report).then(() => sleep(ms / 2))
        .then(() => ({ content: [{ type: "text", text: `done after ${ms} ms` }] }));
    tasks.set(taskId, task);
    answer(id, { task: { taskId, status: "working", createdAt: isoNow(), lastUpdatedAt: isoNow(), ttl: null } });
}

async function taskResult(id, taskId) {
    const task = tasks.get(taskId);
    if (!task) return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no task ${taskId}` } });
    const result = await task.result;
    if (task.cancelled) return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `task ${taskId} was cancelled` } });
    answer(id, { ...result, _meta: { "io.modelcontextprotocol/related-task": { taskId } } });
}

async function call(id, name, args, meta) {
    switch (name) {
        case "echo": return text(id, String(args.text ?? ""));
        case "sleep": await sleep(args.ms ?? 0); return text(id, `slept ${args.ms} ms`);
        case "hang": return;
        case "cancelled": return text(id, JSON.stringify(cancelled));
        case "die":
            process.stderr.write(String(args.stderr ?? ""));
            await sleep(args.ms ?? 0);
            process.exit(args.code ?? 1);
        case "garbage": process.stdout.write("this is not json {\n"); return;
        case "huge": {
            const chunk = "x".repeat(1 << 20);
            for (let i = 0; i < (args.mb ?? 64); i++) {
                if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once("drain", r));
            }
            process.stdout.write("\n");
            return;
        }
        case "unknown_id": return answer(987654, { content: [] });
        case "close_stdout": fs.closeSync(1); setInterval(() => {}, 1000); return;
        case "progress": {
            const steps = args.steps ?? 3;
            if (args.burst) {
                // Every step and the answer in one write: the client reads
                // them all at once.
                let lines = "";
                for (let i = 1; i <= steps && meta?.progressToken !== undefined; i++) {
                    lines += JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress",
                        params: { progressToken: meta.progressToken, progress: i, total: steps } }) + "\n";
                }
                lines += JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "done" }] } }) + "\n";
                process.stdout.write(lines);
                return;
            }
            for (let i = 1; i <= steps; i++) {
                if (meta?.progressToken !== undefined) {
                    send({ jsonrpc: "2.0", method: "notifications/progress",
                           params: { progressToken: meta.progressToken, progress: i, total: steps, message: `step ${i}` } });
                }
                await sleep(20);
            }
            return text(id, "done");
        }
        case "picture":
            return answer(id, { content: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
                                          { type: "text", text: "a picture" }],
                                structuredContent: { width: 1 } });
        case "fails": return answer(id, { content: [{ type: "text", text: "it went wrong" }], isError: true });
        case "serial": {
            if (serialBusy !== null) {
                return answer(id, { content: [{ type: "text", text: `call ${args.n} overlapped call ${serialBusy}` }], isError: true });
            }
            serialBusy = args.n;
            await sleep(args.ms ?? 0);
            serialBusy = null;
            served.push(args.n);
            return text(id, `call ${args.n} served ${served.length}`);
        }
        case "answer": {
            const result = { content: [], ...(args.result ?? {}) };
            if (args.audioBytes) {
                const bytes = Buffer.alloc(args.audioBytes);
                for (let i = 0; i < bytes.length; i++) bytes[i] = i % 251;
                result.content = [...result.content, { type: "audio", mimeType: "audio/wav", data: bytes.toString("base64") }];
            }
            return answer(id, result);
        }
        case "add_tool":
            extraTool = true;
            send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
            return text(id, "added");
        case "added": return text(id, "I was added");
        case "task_only":
        case "task_only_quiet":
            return send({ jsonrpc: "2.0", id, error: { code: -32601, message: `tool ${name} requires task augmentation` } });
        case "cancelled_tasks": return text(id, JSON.stringify(cancelledTasks));
        default:
            return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } });
    }
}

function handle(message) {
    const { id, method, params } = message;
    if (method === "initialize") {
        if (start === "hang") return;
        return answer(id, { protocolVersion: params.protocolVersion, capabilities: { tools: { listChanged: true } },
                            serverInfo: { name: "fault-server", version: "1" } });
    }
    if (method === "notifications/cancelled") {
        cancelled.push(params.requestId);
        process.stderr.write(`fault-server: cancelled ${params.requestId}\n`);
        return;
    }
    if (method === "tools/list") return answer(id, { tools: tools() });
    if (method === "tools/call" && params.task && params.name.startsWith("task_only")) {
        return createTask(id, params.arguments?.ms ?? 0, params._meta?.progressToken);
    }
    if (method === "tools/call") return call(id, params.name, params.arguments ?? {}, params._meta);
    if (method === "tasks/result") return taskResult(id, params.taskId);
    if (method === "tasks/cancel") {
        const task = tasks.get(params.taskId);
        if (task) task.cancelled = true;
        cancelledTasks.push(params.taskId);
        return answer(id, { taskId: params.taskId, status: "cancelled", createdAt: isoNow(), lastUpdatedAt: isoNow(), ttl: null });
    }
    if (method === "ping") return answer(id, {});
    if (id !== undefined && method !== undefined) {
        send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
    }
}

let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim()) handle(JSON.parse(line));
    }
});
// MCP's way to tell a stdio server to end: its stdin closes.
process.stdin.on("end", () => process.exit(0));
