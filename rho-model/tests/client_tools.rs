//! The APIs' client tools run by rho (Anthropic's bash and text editor,
//! OpenAI's shell and apply_patch): declared in the API's own types (judged
//! by the official SDK), called by a response the SDK built, run as rho
//! tools (the commands confined by the kernel, the edits beneath the
//! workspace), answered in the shapes the SDK takes.
//!
//! Without libtest's harness: this binary is also the confinement launcher
//! of its shell's commands, so `main` must call `serve_if_launcher` before
//! anything else runs.

mod support;

use std::path::Path;
use std::sync::Arc;

use rho::model::ListError;
use rho::model::anthropic::{self, Anthropic};
use rho::model::client::{ApplyPatch, BASH, Bash, OpenAiShell, TEXT_EDITOR, TextEditor};
use rho::model::responses::{self, Responses};
use rho::process::ShellTool;
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{Outcome, Source, ToolRegistry};
use serde_json::{Value, json};

fn main() {
    rho::process::confine::serve_if_launcher();
    client_tools_are_declared_in_anthropics_types_and_run_confined();
    shell_and_apply_patch_run_as_the_responses_api_declares_them();
    a_client_tool_the_registry_lacks_fails_the_list();
    println!("client_tools: 3 passed");
}

fn workspace(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("client-tools")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a workspace");
    dir
}

fn client_tools_are_declared_in_anthropics_types_and_run_confined() {
    let dir = workspace("anthropic");
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("client"))
        .expect("a source");
    source
        .add(Arc::new(Bash::new(ShellTool::new(&dir))))
        .expect("bash");
    source
        .add(Arc::new(
            TextEditor::new(&dir)
                .expect("an editor")
                .with_max_characters(20_000),
        ))
        .expect("the editor");
    let dialect = Anthropic::new()
        .with_client_tool(anthropic::ClientTool::Bash)
        .with_client_tool(anthropic::ClientTool::TextEditor {
            max_characters: Some(20_000),
        });
    let tools = dialect.tools(&registry.tools()).expect("a list");
    let declared = tools.to_json();
    assert_eq!(
        declared,
        json!([
            { "type": "bash_20250124", "name": "bash" },
            { "type": "text_editor_20250728", "name": "str_replace_based_edit_tool", "max_characters": 20_000 },
        ])
    );

    // The model's calls, in a response the SDK built.
    let calls = [
        (
            BASH,
            json!({ "command": "printf 'hello\\n' > notes.txt && cat notes.txt" }),
        ),
        (
            TEXT_EDITOR,
            json!({ "command": "view", "path": "notes.txt" }),
        ),
        (
            TEXT_EDITOR,
            json!({ "command": "str_replace", "path": "notes.txt", "old_str": "hello", "new_str": "hello, rho" }),
        ),
        (BASH, json!({ "command": "cat notes.txt; cat /etc/shadow" })),
        (BASH, json!({ "restart": true })),
    ];
    let made = support::made(&[json!({ "kind": "anthropic.response",
        "calls": calls.iter().enumerate().map(|(n, (name, arguments))| json!({
            "id": format!("toolu_{n}"), "name": name, "arguments": arguments.to_string() })).collect::<Vec<_>>() })]);
    let reply = dialect.read(&made[0], Some(&tools)).expect("a reply");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let entries = runtime.block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry.clone());
        turns.turn(reply.calls.clone()).await
    });
    let texts: Vec<String> = entries.iter().map(|entry| entry.text()).collect();
    assert_eq!(entries[0].outcome, Outcome::Succeeded, "{texts:#?}");
    assert_eq!(texts[0], "hello\n");
    assert_eq!(texts[1], "     1\thello\n");
    assert!(texts[2].contains("hello, rho"), "{texts:#?}");
    // The edit is seen by the next command; the shadow file is not.
    assert!(entries[3].is_error(), "{texts:#?}");
    assert!(texts[3].contains("hello, rho"), "{texts:#?}");
    assert!(
        texts[3].contains("denied") || texts[3].contains("No such file"),
        "{texts:#?}"
    );
    assert!(texts[4].contains("restarted"), "{texts:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).expect("the file"),
        "hello, rho\n"
    );

    // What rho writes back is taken by the SDK's request types.
    let results = dialect.results(&reply, &entries);
    let mut messages = vec![json!({ "role": "user", "content": "Write a note." })];
    messages.extend(reply.history.iter().cloned());
    messages.extend(results);
    let mut values: Vec<(&str, Value)> = declared
        .as_array()
        .expect("a list")
        .iter()
        .map(|tool| ("anthropic.tool", tool.clone()))
        .collect();
    values.extend(
        messages
            .iter()
            .map(|message| ("anthropic.message", message.clone())),
    );
    values.push((
        "anthropic.request.nonstreaming",
        json!({ "model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages, "tools": declared }),
    ));
    support::assert_accepted(&values);
}

fn shell_and_apply_patch_run_as_the_responses_api_declares_them() {
    let dir = workspace("responses");
    std::fs::write(dir.join("greet.py"), "def greet():\n    print(\"Hi\")\n").expect("a file");
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("client"))
        .expect("a source");
    source
        .add(Arc::new(OpenAiShell::new(ShellTool::new(&dir))))
        .expect("shell");
    source
        .add(Arc::new(ApplyPatch::new(&dir).expect("apply_patch")))
        .expect("apply_patch");
    let dialect = Responses::new()
        .with_client_tool(responses::ClientTool::Shell)
        .with_client_tool(responses::ClientTool::ApplyPatch);
    let tools = dialect.tools(&registry.tools()).expect("a list");
    assert_eq!(
        tools.to_json(),
        json!([{ "type": "apply_patch" }, { "type": "shell" }])
    );

    let calls = [
        (
            "apply_patch",
            json!({ "type": "update_file", "path": "greet.py",
            "diff": "@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n" }),
        ),
        (
            "apply_patch",
            json!({ "type": "create_file", "path": "notes/todo.md", "diff": "+one" }),
        ),
        (
            "apply_patch",
            json!({ "type": "update_file", "path": "greet.py", "diff": "-    print(\"Bye\")\n+x\n" }),
        ),
        (
            "shell",
            json!({ "commands": ["cat greet.py", "exit 3", "sleep 5"], "timeout_ms": 1500 }),
        ),
        (
            "apply_patch",
            json!({ "type": "delete_file", "path": "../escape.txt" }),
        ),
    ];
    let made = support::made(&[json!({ "kind": "openai.responses.client_calls",
        "calls": calls.iter().enumerate().map(|(n, (name, arguments))| json!({
            "id": format!("call_{n}"), "name": name, "arguments": arguments.to_string() })).collect::<Vec<_>>() })]);
    let reply = dialect.read(&made[0], Some(&tools)).expect("a reply");
    assert_eq!(reply.calls.len(), 5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let entries = runtime.block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry.clone());
        turns.turn(reply.calls.clone()).await
    });
    let texts: Vec<String> = entries.iter().map(|entry| entry.text()).collect();
    assert_eq!(texts[0], "updated `greet.py`", "{texts:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("greet.py")).expect("the file"),
        "def greet():\n    print(\"Hello\")\n"
    );
    // Its folder made where missing, as `mkdir -p`.
    assert_eq!(texts[1], "created `notes/todo.md`", "{texts:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes/todo.md")).expect("the file"),
        "one\n"
    );
    assert!(
        texts[2].contains("its lines are not in the file"),
        "{texts:#?}"
    );
    assert!(texts[4].contains("outside the workspace"), "{texts:#?}");

    let results = dialect.results(&reply, &entries);
    assert_eq!(results[0]["type"], "apply_patch_call_output");
    assert_eq!(results[0]["status"], "completed");
    assert_eq!(results[2]["status"], "failed");
    let shell = &results[3];
    assert_eq!(shell["type"], "shell_call_output");
    let output = shell["output"].as_array().expect("a list");
    assert_eq!(output.len(), 3, "{shell:#}");
    assert_eq!(output[0]["stdout"], "def greet():\n    print(\"Hello\")\n");
    assert_eq!(
        output[0]["outcome"],
        json!({ "type": "exit", "exit_code": 0 })
    );
    assert_eq!(
        output[1]["outcome"],
        json!({ "type": "exit", "exit_code": 3 })
    );
    assert_eq!(output[2]["outcome"], json!({ "type": "timeout" }));

    let mut input = vec![json!({ "role": "user", "content": "Say hello." })];
    input.extend(reply.history.iter().cloned());
    input.extend(results);
    let mut values: Vec<(&str, Value)> = tools
        .to_json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|tool| ("openai.responses.tool", tool.clone()))
        .collect();
    values.extend(
        input
            .iter()
            .map(|item| ("openai.responses.input_item", item.clone())),
    );
    values.push((
        "openai.responses.request.nonstreaming",
        json!({ "model": "gpt-5", "input": input, "tools": tools.to_json(), "store": false }),
    ));
    support::assert_accepted(&values);
}

fn a_client_tool_the_registry_lacks_fails_the_list() {
    let registry = ToolRegistry::new();
    let error = Anthropic::new()
        .with_client_tool(anthropic::ClientTool::Bash)
        .tools(&registry.tools())
        .expect_err("no bash to run the calls");
    assert_eq!(
        error,
        ListError::Missing {
            tool: "bash".into()
        }
    );
}
