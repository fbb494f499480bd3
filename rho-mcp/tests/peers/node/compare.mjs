// Records everything a client of one MCP server sees, with the official MCP
// TypeScript SDK's client over streamable HTTP, as one JSON object on
// stdout: the same record as ../compare_client.py (the server's identity,
// capabilities and instructions, every list, every listed resource read,
// and the calls, prompt gets, reads (before the calls and after them) and
// completions a script asks for).
//
//     node compare.mjs SCRIPT_JSON URL
//
// The Rust test (tests/proxy_transparent.rs) runs it against a server and
// against the proxy in front of it and compares the two records. An
// answer is recorded as the SDK returned it; an error as its code and
// message.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [scriptJson, url] = process.argv.slice(2);
const script = JSON.parse(scriptJson);

async function recorded(step) {
  try {
    return { ok: await step() };
  } catch (error) {
    if (typeof error?.code === "number") {
      return { error: { code: error.code, message: error.message } };
    }
    return { failed: String(error) };
  }
}

async function everythingListed(listPage, field) {
  const items = [];
  let cursor;
  do {
    const page = await listPage(cursor === undefined ? {} : { cursor });
    items.push(...page[field]);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

const client = new Client({ name: "rho-node-compare", version: "1" }, { capabilities: {} });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const out = {};
const capabilities = client.getServerCapabilities() ?? {};
out.protocol_version = client.transport?.protocolVersion ?? null;
out.server_info = client.getServerVersion() ?? null;
out.capabilities = capabilities;
out.instructions = client.getInstructions() ?? null;
if (capabilities.tools) {
  out.tools = await recorded(() => everythingListed((p) => client.listTools(p), "tools"));
}
let resources = [];
if (capabilities.resources) {
  out.resources = await recorded(() => everythingListed((p) => client.listResources(p), "resources"));
  out.templates = await recorded(() =>
    everythingListed((p) => client.listResourceTemplates(p), "resourceTemplates"),
  );
  resources = (out.resources.ok ?? []).map((resource) => resource.uri);
}
if (capabilities.prompts) {
  out.prompts = await recorded(() => everythingListed((p) => client.listPrompts(p), "prompts"));
}
out.reads = {};
for (const uri of [...resources, ...(script.reads ?? [])]) {
  out.reads[uri] = await recorded(() => client.readResource({ uri }));
}
out.calls = [];
for (const call of script.calls ?? []) {
  out.calls.push(await recorded(() => client.callTool({ name: call.name, arguments: call.arguments ?? {} })));
}
// Read after the calls: what a call left in the client's session.
out.reads_after = {};
for (const uri of script.reads_after ?? []) {
  out.reads_after[uri] = await recorded(() => client.readResource({ uri }));
}
out.prompt_gets = [];
for (const prompt of script.prompts ?? []) {
  out.prompt_gets.push(await recorded(() => client.getPrompt({ name: prompt.name, arguments: prompt.arguments })));
}
out.completions = [];
for (const completion of script.completions ?? []) {
  out.completions.push(await recorded(() => client.complete({ ref: completion.ref, argument: completion.argument })));
}
await client.close();
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
