//! The stand-in MCP server of the MCP soak: a stdio server written by hand
//! (no SDK), one JSON-RPC message a line, whose tools misbehave as their
//! names say. `rho-soak __mcp_stand_in [MARKER]` runs it; the marker only
//! lets the soak find its processes.
//!
//! - `echo` answers its `text`; `fail` answers with `isError`;
//! - `sleep` answers after `ms` milliseconds (on a thread of its own, so
//!   other calls go on meanwhile);
//! - `hang` never answers;
//! - `die` writes to stderr and exits with `code` at once;
//! - `garbage` writes a line that is not JSON.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

/// The subcommand that runs the stand-in.
pub(crate) const SUBCOMMAND: &str = "__mcp_stand_in";

/// Writes whole lines to stdout, one writer at a time.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn line(&self, text: &str) {
        let mut out = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // A client that has gone makes these fail; stdin's end stops us.
        let _ = out.write_all(text.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }

    fn send(&self, message: &Value) {
        self.line(&message.to_string());
    }

    fn answer(&self, id: &Value, result: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    fn text(&self, id: &Value, text: &str, is_error: bool) {
        self.answer(
            id,
            json!({ "content": [{ "type": "text", "text": text }], "isError": is_error }),
        );
    }
}

fn tools() -> Value {
    let object = |properties: Value| json!({ "type": "object", "properties": properties });
    json!([
        { "name": "echo", "description": "Answers `text`.", "inputSchema": object(json!({ "text": { "type": "string" } })) },
        { "name": "fail", "description": "Answers with isError.", "inputSchema": object(json!({})) },
        { "name": "sleep", "description": "Answers after `ms`.", "inputSchema": object(json!({ "ms": { "type": "integer" } })) },
        { "name": "hang", "description": "Never answers.", "inputSchema": object(json!({})) },
        { "name": "die", "description": "Exits with `code`.", "inputSchema": object(json!({ "code": { "type": "integer" } })) },
        { "name": "garbage", "description": "Writes a line that is not JSON.", "inputSchema": object(json!({})) },
    ])
}

/// Runs the stand-in until its stdin ends.
pub(crate) fn main() {
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        handle(&out, &message);
    }
}

fn handle(out: &Out, message: &Value) {
    let id = &message["id"];
    let params = &message["params"];
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => out.answer(
            id,
            json!({ "protocolVersion": params["protocolVersion"],
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "rho-soak-stand-in", "version": "1" } }),
        ),
        "tools/list" => out.answer(id, json!({ "tools": tools() })),
        "tools/call" => call(out, id, params),
        "ping" => out.answer(id, json!({})),
        method if method.starts_with("notifications/") => {}
        method => out.send(&json!({ "jsonrpc": "2.0", "id": id,
            "error": { "code": -32601, "message": format!("no method {method}") } })),
    }
}

fn call(out: &Out, id: &Value, params: &Value) {
    let arguments = &params["arguments"];
    match params["name"].as_str().unwrap_or_default() {
        "echo" => out.text(id, arguments["text"].as_str().unwrap_or_default(), false),
        "fail" => out.text(id, "it failed", true),
        "sleep" => {
            let ms = arguments["ms"].as_u64().unwrap_or(0);
            let (out, id) = (out.clone(), id.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(ms));
                out.text(&id, "slept", false);
            });
        }
        "hang" => {}
        "die" => {
            let code = arguments["code"].as_i64().unwrap_or(1);
            eprintln!("stand-in: dying with code {code}");
            std::process::exit(i32::try_from(code).unwrap_or(1));
        }
        "garbage" => out.line("this is not json {"),
        name => out.send(&json!({ "jsonrpc": "2.0", "id": id,
            "error": { "code": -32602, "message": format!("no tool {name}") } })),
    }
}
