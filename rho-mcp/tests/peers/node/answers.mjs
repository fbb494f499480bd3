// Calls the same tools of two MCP servers over stdio with the official MCP
// TypeScript SDK, one call after the other, and prints what each answered
// as one JSON object, for the Rust tests to compare: the same record as
// ../answers_client.py.
//
//     node answers.mjs SPEC
//
// SPEC is JSON: `{"direct": [command...], "proxied": [command...], "calls":
// [{"tool": name, "arguments": {...}, "tries": n}]}`. Each call is made
// `tries` times (default 1), each time to the direct server then to the
// proxied one, so that an answer holding the time of day can be compared
// within one second. A tool a server lists as runnable only as a task is
// called as one. A call that throws records its error instead; the Rust
// test decides what is right.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StdioClientTransport,
  getDefaultEnvironment,
} from "@modelcontextprotocol/sdk/client/stdio.js";

const spec = JSON.parse(process.argv[2]);

async function connect(command) {
  const transport = new StdioClientTransport({
    command: command[0],
    args: command.slice(1),
    env: getDefaultEnvironment(),
    stderr: "inherit",
  });
  const client = new Client({ name: "rho-node-answers", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

// The tools each client was listed as runnable only as tasks
// (`execution.taskSupport: "required"`): called as tasks, with the SDK's
// own task client, which waits for the task's result.
const taskOnly = new Map();

async function answer(client, call) {
  const params = { name: call.tool, arguments: call.arguments ?? {} };
  try {
    if (taskOnly.get(client)?.has(call.tool)) {
      for await (const message of client.experimental.tasks.callToolStream(params)) {
        if (message.type === "result") return { result: message.result };
        if (message.type === "error") throw message.error;
      }
      throw new Error("the task's stream ended without a result");
    }
    return { result: await client.callTool(params) };
  } catch (error) {
    return { error: String(error), trace: error?.stack ?? null };
  }
}

async function names(client) {
  const tools = (await client.listTools()).tools;
  taskOnly.set(
    client,
    new Set(tools.filter((tool) => tool.execution?.taskSupport === "required").map((tool) => tool.name)),
  );
  return tools.map((tool) => tool.name).sort();
}

const direct = await connect(spec.direct);
const proxied = await connect(spec.proxied);
const seen = {
  direct_tools: await names(direct),
  proxied_tools: await names(proxied),
  calls: [],
};
for (const call of spec.calls) {
  const tries = [];
  for (let n = 0; n < (call.tries ?? 1); n++) {
    tries.push({ direct: await answer(direct, call), proxied: await answer(proxied, call) });
  }
  seen.calls.push({ tool: call.tool, arguments: call.arguments ?? null, tries });
}
await direct.close();
await proxied.close();
console.log(JSON.stringify(seen));
