//! Anthropic's client tools run by rho: declared in Anthropic's own types
//! (judged by the official SDK), called by a response the SDK built, run as
//! rho tools (the commands confined by the kernel, the edits beneath the
//! workspace), answered in `tool_result` blocks the SDK takes.
//!
//! Without libtest's harness: this binary is also the confinement launcher
//! of its shell's commands, so `main` must call `serve_if_launcher` before
//! anything else runs.

mod support;

use std::path::Path;
use std::sync::Arc;

use rho::model::ListError;
use rho::model::anthropic::{Anthropic, ClientTool};
use rho::model::client::{BASH, Bash, TEXT_EDITOR, TextEditor};
use rho::process::ShellTool;
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{Outcome, Source, ToolRegistry};
use serde_json::{Value, json};

fn main() {
    rho::process::confine::serve_if_launcher();
    client_tools_are_declared_in_anthropics_types_and_run_confined();
    a_client_tool_the_registry_lacks_fails_the_list();
    println!("anthropic_client_tools: 2 passed");
}

fn workspace() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("anthropic-client-tools");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a workspace");
    dir
}

fn client_tools_are_declared_in_anthropics_types_and_run_confined() {
    let dir = workspace();
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
        .with_client_tool(ClientTool::Bash)
        .with_client_tool(ClientTool::TextEditor {
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

fn a_client_tool_the_registry_lacks_fails_the_list() {
    let registry = ToolRegistry::new();
    let error = Anthropic::new()
        .with_client_tool(ClientTool::Bash)
        .tools(&registry.tools())
        .expect_err("no bash to run the calls");
    assert_eq!(
        error,
        ListError::Missing {
            tool: "bash".into()
        }
    );
}
