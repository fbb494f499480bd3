//! The official OpenAI Python SDK judges every Chat Completions shape rho
//! writes (tool lists, the assistant message sent back, tool and image
//! messages, a whole request), and builds every response and stream rho
//! reads.

mod support;

use std::sync::Arc;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use rho::model::chat::Chat;
use rho::model::{Options, Reply, Strictness};
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{
    Content, Image, Source, Tool, ToolCall, ToolContext, ToolOutput, ToolRegistry, ToolResult,
    async_trait,
};
use serde_json::{Value, json};
use support::{assert_accepted, info, made};

/// Answers with its arguments as text, and an image when asked for one.
struct Echo(&'static str, Value);

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "Repeats its arguments."
    }
    fn parameters(&self) -> Value {
        self.1.clone()
    }
    async fn run(&self, args: Value, _cx: ToolContext) -> ToolOutput {
        if args.get("image").and_then(Value::as_bool) == Some(true) {
            return ToolOutput::from_result(ToolResult::from_content(
                [
                    Content::text("drawn"),
                    Content::image(Image::new("image/png", vec![137, 80, 78, 71])),
                ],
                false,
            ));
        }
        ToolOutput::text(args.to_string())
    }
}

/// Schemas as hosts meet them: optional fields, enums, nested objects,
/// shared definitions, a recursive tree, keywords strict mode lacks, a
/// free-form map, no parameters at all.
fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("builtin"))
        .expect("a source");
    let tools: Vec<(&'static str, Value)> = vec![
        (
            "read_file",
            json!({ "type": "object", "properties": {
            "path": { "type": "string", "description": "Path in the workspace." },
            "offset": { "type": "integer", "minimum": 0 },
            "limit": { "type": "integer", "minimum": 1, "maximum": 2000 },
            "image": { "type": "boolean" } }, "required": ["path"] }),
        ),
        (
            "edit",
            json!({ "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Edit",
            "type": "object", "properties": {
                "path": { "type": "string", "minLength": 1 },
                "edits": { "type": "array", "items": { "$ref": "#/$defs/Replace" }, "minItems": 1 },
                "mode": { "enum": ["exact", "regex"], "default": "exact" } },
            "required": ["path", "edits"],
            "$defs": { "Replace": { "type": "object", "properties": {
                "old": { "type": "string" }, "new": { "type": "string" } }, "required": ["old", "new"] } } }),
        ),
        (
            "tree",
            json!({ "type": "object", "properties": { "root": { "$ref": "#/$defs/Node" } },
            "$defs": { "Node": { "type": "object", "properties": {
                "name": { "type": "string" }, "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } } } } } }),
        ),
        (
            "set_env",
            json!({ "type": "object", "properties": {
            "vars": { "type": "object", "additionalProperties": { "type": "string" } } }, "required": ["vars"] }),
        ),
        (
            "choose",
            json!({ "type": "object", "properties": {
            "value": { "oneOf": [{ "type": "string", "format": "email" }, { "type": "integer" }] },
            "when": { "type": "string", "format": "date-time" },
            "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true } },
            "required": ["value"], "additionalProperties": false }),
        ),
        ("ping", json!({ "type": "object" })),
        ("empty", json!({})),
    ];
    for (name, schema) in tools {
        source.add(Arc::new(Echo(name, schema))).expect("a tool");
    }
    registry
}

#[test]
fn every_tool_list_is_taken_by_the_openai_sdk_in_each_strictness() {
    let registry = registry();
    let mut values = Vec::new();
    for strict in [Strictness::WherePossible, Strictness::Never] {
        let list = Chat::with_options(Options::new().strict(strict))
            .tools(&registry.tools())
            .expect("a list");
        for tool in list.to_json().as_array().expect("a list") {
            values.push(("openai.chat.tool", tool.clone()));
        }
    }
    // Generated schemas too, each in strict mode where it can be.
    let mut runner = TestRunner::deterministic();
    for _ in 0..300 {
        let (schema, _) = support::shapes::root()
            .new_tree(&mut runner)
            .expect("a schema")
            .current();
        let list = Chat::new().tools([&info(schema)]).expect("a list");
        values.push(("openai.chat.tool", list.to_json()[0].clone()));
    }
    // Each strict schema is one the SDK's own strict-making leaves as is.
    let strict: Vec<(&str, Value)> = values
        .iter()
        .filter(|(_, tool)| tool["function"]["strict"] == true)
        .map(|(_, tool)| {
            (
                "openai.strict_schema",
                tool["function"]["parameters"].clone(),
            )
        })
        .collect();
    assert!(strict.len() > 100, "only {} strict schemas", strict.len());
    values.extend(strict);
    assert_accepted(&values);
    // What could be strict was; the rest says why not.
    let list = Chat::new().tools(&registry.tools()).expect("a list");
    let not_strict: Vec<&str> = list
        .listed()
        .iter()
        .filter(|listed| !listed.strict)
        .map(|listed| listed.name.as_str())
        .collect();
    assert_eq!(not_strict, ["empty", "ping", "set_env", "tree"]);
}

/// Calls as hosts meet them, for the SDK to put in a response: good ones,
/// unicode, no arguments, arguments that are not JSON, a reused id, an
/// unknown tool.
fn calls() -> Vec<Value> {
    vec![
        json!({ "id": "call_a", "name": "read_file", "arguments": r#"{"path":"src/lib.rs","offset":null,"limit":null,"image":true}"# }),
        json!({ "id": "call_b", "name": "edit", "arguments": r#"{"path":"ünï/cøde.rs","edits":[{"old":"a\"b","new":"c\\nd"}],"mode":null}"# }),
        json!({ "id": "call_c", "name": "ping", "arguments": "" }),
        json!({ "id": "call_d", "name": "read_file", "arguments": r#"{"path": "x", "#}),
        json!({ "id": "call_a", "name": "read_file", "arguments": r#"{"path":"again"}"# }),
        json!({ "id": "call_e", "name": "no_such_tool", "arguments": "{}" }),
    ]
}

/// What matters of a reply's calls: id, name, arguments, and whether
/// malformed.
fn seen(reply: &Reply) -> Vec<(String, String, Value, bool)> {
    reply
        .calls
        .iter()
        .map(|call: &ToolCall| {
            (
                call.id.clone(),
                call.name.clone(),
                call.arguments.clone(),
                call.malformed.is_some(),
            )
        })
        .collect()
}

#[test]
fn a_response_and_its_streams_made_by_the_sdk_read_to_the_same_calls() {
    let registry = registry();
    let chat = Chat::new();
    let tools = chat.tools(&registry.tools()).expect("a list");
    let mut requests =
        vec![json!({ "kind": "openai.chat.response", "calls": calls(), "text": "Let me look." })];
    for chunk in [1, 3, 64] {
        requests.push(json!({ "kind": "openai.chat.stream", "calls": calls(), "text": "Let me look.", "chunk": chunk }));
    }
    let made = made(&requests);
    let whole = chat.read(&made[0], Some(&tools)).expect("a reply");
    assert_eq!(whole.text.as_deref(), Some("Let me look."));
    assert_eq!(whole.stop.as_deref(), Some("tool_calls"));
    let expected = vec![
        (
            "call_a".to_owned(),
            "read_file".to_owned(),
            json!({ "path": "src/lib.rs", "image": true }),
            false,
        ),
        (
            "call_b".to_owned(),
            "edit".to_owned(),
            json!({ "path": "ünï/cøde.rs", "edits": [{ "old": "a\"b", "new": "c\\nd" }] }),
            false,
        ),
        ("call_c".to_owned(), "ping".to_owned(), json!({}), false),
        (
            "call_d".to_owned(),
            "read_file".to_owned(),
            Value::Null,
            true,
        ),
        (
            "rho_call_1".to_owned(),
            "read_file".to_owned(),
            Value::Null,
            true,
        ),
        (
            "call_e".to_owned(),
            "no_such_tool".to_owned(),
            json!({}),
            false,
        ),
    ];
    assert_eq!(seen(&whole), expected);
    for (index, stream) in made[1..].iter().enumerate() {
        let mut reader = chat.stream(Some(&tools));
        for chunk in stream.as_array().expect("chunks") {
            reader.push(chunk).expect("a chunk");
        }
        let reply = reader.finish();
        assert_eq!(seen(&reply), expected, "stream {index}");
        assert_eq!(reply.history, whole.history, "stream {index}");
        assert_eq!(reply.text, whole.text);
    }
}

#[test]
fn a_whole_conversation_rho_writes_is_taken_by_the_openai_sdk() {
    let registry = registry();
    let chat = Chat::new();
    let tools = chat.tools(&registry.tools()).expect("a list");
    let made = made(&[json!({ "kind": "openai.chat.response", "calls": calls() })]);
    let reply = chat.read(&made[0], Some(&tools)).expect("a reply");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let entries = runtime.block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry.clone());
        turns.turn(reply.calls.clone()).await
    });
    let results = chat.results(&reply, &entries);
    // One tool message per call, then the image message.
    assert_eq!(results.len(), reply.calls.len() + 1);
    assert_eq!(results.last().expect("a message")["role"], "user");

    let mut messages = vec![json!({ "role": "user", "content": "Look at src/lib.rs" })];
    messages.extend(reply.history.iter().cloned());
    messages.extend(results);
    let mut values: Vec<(&str, Value)> = messages
        .iter()
        .map(|message| ("openai.chat.message", message.clone()))
        .collect();
    values.push((
        "openai.chat.request.nonstreaming",
        json!({ "model": "gpt-5", "messages": messages, "tools": tools.to_json(), "parallel_tool_calls": true }),
    ));
    assert_accepted(&values);
}

/// The judge refuses what the API refuses, so that its yes means
/// something: an image in a tool message (why rho puts images in a user
/// message after), a key the API does not define, a schema that is not
/// strict yet, and a call answered without its id.
#[test]
fn the_sdk_judge_refuses_the_shapes_the_api_refuses() {
    let refused = [
        (
            "openai.chat.message",
            json!({ "role": "tool", "tool_call_id": "a", "content": [
            { "type": "image_url", "image_url": { "url": "data:image/png;base64,AQID" } }] }),
        ),
        (
            "openai.chat.tool",
            json!({ "type": "function", "function": { "name": "f", "parameters": {}, "is_error": true } }),
        ),
        (
            "openai.chat.message",
            json!({ "role": "tool", "content": "no id" }),
        ),
        (
            "openai.strict_schema",
            json!({ "type": "object", "properties": { "a": { "type": "string" } } }),
        ),
    ];
    let verdicts = support::judge(&refused);
    for ((kind, value), verdict) in refused.iter().zip(verdicts) {
        assert!(verdict.is_err(), "{kind} took {value}");
    }
}
