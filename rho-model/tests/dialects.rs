//! Every dialect, judged the same way by its API's official SDK: responses
//! and streams the SDK built read to the same calls; the conversation rho
//! writes (the model's message sent back, the results, the whole request)
//! is taken by the SDK's request types; and any turn's results answer the
//! calls one to one, in order.
//!
//! One list of dialects makes the tests: each dialect gets a module of its
//! own, so a failure names the dialect.

mod support;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use rho::model::anthropic::Anthropic;
use rho::model::chat::Chat;
use rho::model::gemini::Gemini;
use rho::model::responses::Responses;
use rho::model::{Dialect, Reply};
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{
    Content, Image, Outcome, SessionEntry, Source, Tool, ToolCall, ToolContext, ToolOutput,
    ToolRegistry, ToolResult, async_trait,
};
use serde_json::{Value, json};
use support::{assert_accepted, info, made};

/// A call of a message built here: its id (if any), tool and arguments.
type Sent = (Option<String>, String, Value);

/// How one dialect's API is judged and fed.
struct Peer {
    dialect: Box<dyn Dialect>,
    /// `made.py`'s kind prefix (`<prefix>.response`, `<prefix>.stream`).
    made: &'static str,
    /// `judge.py`'s kinds for a tool, a message and a whole request.
    tool: &'static str,
    message: &'static str,
    request: &'static str,
    /// A whole request of `messages` and `tools`.
    body: fn(Vec<Value>, Value) -> Value,
    /// The first message of a conversation.
    user: fn(&str) -> Value,
    /// A response of calls `(id, name, arguments)` built here, for the
    /// properties (thousands of cases, no SDK round trip each).
    response: fn(&[Sent]) -> Value,
    /// The call ids a reply's history lists, and those its results answer.
    echoed: fn(&[Value]) -> Vec<String>,
    answered: fn(&[Value]) -> Vec<String>,
}

fn chat() -> Peer {
    Peer {
        dialect: Box::new(Chat::new()),
        made: "openai.chat",
        tool: "openai.chat.tool",
        message: "openai.chat.message",
        request: "openai.chat.request.nonstreaming",
        body: |messages, tools| json!({ "model": "gpt-5", "messages": messages, "tools": tools }),
        user: |text| json!({ "role": "user", "content": text }),
        response: |calls| {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, arguments)| {
                    let mut call = json!({ "type": "function",
                        "function": { "name": name, "arguments": arguments.to_string() } });
                    if let Some(id) = id {
                        call["id"] = id.clone().into();
                    }
                    call
                })
                .collect();
            json!({ "choices": [{ "index": 0, "finish_reason": "tool_calls",
                "message": { "role": "assistant", "content": null, "tool_calls": calls } }] })
        },
        echoed: |history| ids(&history[0]["tool_calls"], "id"),
        answered: |results| {
            results
                .iter()
                .filter(|message| message["role"] == "tool")
                .map(|message| {
                    message["tool_call_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        },
    }
}

fn responses() -> Peer {
    Peer {
        dialect: Box::new(Responses::new()),
        made: "openai.responses",
        tool: "openai.responses.tool",
        message: "openai.responses.input_item",
        request: "openai.responses.request.nonstreaming",
        body: |input, tools| json!({ "model": "gpt-5", "input": input, "tools": tools, "store": false }),
        user: |text| json!({ "role": "user", "content": text }),
        response: |calls| {
            let items: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(index, (id, name, arguments))| {
                    let mut item = json!({ "type": "function_call", "id": format!("fc_{index}"),
                        "name": name, "arguments": arguments.to_string(), "status": "completed" });
                    if let Some(id) = id {
                        item["call_id"] = id.clone().into();
                    }
                    item
                })
                .collect();
            json!({ "object": "response", "status": "completed", "output": items })
        },
        echoed: |history| ids(&Value::Array(history.to_vec()), "call_id"),
        answered: |results| ids(&Value::Array(results.to_vec()), "call_id"),
    }
}

fn anthropic() -> Peer {
    Peer {
        dialect: Box::new(Anthropic::new()),
        made: "anthropic",
        tool: "anthropic.tool",
        message: "anthropic.message",
        request: "anthropic.request.nonstreaming",
        body: |messages, tools| json!({ "model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages, "tools": tools }),
        user: |text| json!({ "role": "user", "content": text }),
        response: |calls| {
            let blocks: Vec<Value> = calls
                .iter()
                .map(|(id, name, arguments)| {
                    let mut block = json!({ "type": "tool_use", "name": name, "input": arguments });
                    if let Some(id) = id {
                        block["id"] = id.clone().into();
                    }
                    block
                })
                .collect();
            json!({ "type": "message", "role": "assistant", "content": blocks, "stop_reason": "tool_use" })
        },
        echoed: |history| ids(&history[0]["content"], "id"),
        answered: |results| {
            results
                .first()
                .map(|message| ids(&message["content"], "tool_use_id"))
                .unwrap_or_default()
        },
    }
}

fn gemini() -> Peer {
    Peer {
        dialect: Box::new(Gemini::new()),
        made: "gemini",
        tool: "gemini.tool",
        message: "gemini.content",
        request: "gemini.request",
        body: |contents, tools| json!({ "contents": contents, "tools": tools }),
        user: |text| json!({ "role": "user", "parts": [{ "text": text }] }),
        response: |calls| {
            let parts: Vec<Value> = calls
                .iter()
                .map(|(id, name, arguments)| {
                    let mut call = json!({ "name": name, "args": arguments });
                    if let Some(id) = id {
                        call["id"] = id.clone().into();
                    }
                    json!({ "functionCall": call })
                })
                .collect();
            json!({ "candidates": [{ "index": 0, "finishReason": "STOP",
                "content": { "role": "model", "parts": parts } }] })
        },
        // Gemini's calls may have no id: each call's id, or `-`.
        echoed: |history| {
            parts_ids(
                history.first().map(|content| &content["parts"]),
                "functionCall",
            )
        },
        answered: |results| {
            parts_ids(
                results.first().map(|content| &content["parts"]),
                "functionResponse",
            )
        },
    }
}

/// The id (or `-`) of each part of `parts` that holds a `key` object.
fn parts_ids(parts: Option<&Value>, key: &str) -> Vec<String> {
    parts
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get(key))
        .map(|item| {
            item.get("id")
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_owned()
        })
        .collect()
}

/// The `key` of each item of `list` that has one.
fn ids(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.get(key).and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Answers with its arguments as text; with an image and an error when
/// asked.
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
        let image = args.get("image").and_then(Value::as_bool) == Some(true);
        let fail = args.get("fail").and_then(Value::as_bool) == Some(true);
        let mut parts = vec![Content::text(args.to_string())];
        if image {
            parts.push(Content::image(Image::new(
                "image/png",
                vec![137, 80, 78, 71],
            )));
            parts.push(Content::image(Image::new("image/tiff", vec![73, 73])));
        }
        ToolOutput::from_result(ToolResult::from_content(parts, fail))
    }
}

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
                "limit": { "type": "integer", "minimum": 1 },
                "image": { "type": "boolean" }, "fail": { "type": "boolean" } }, "required": ["path"] }),
        ),
        (
            "edit",
            json!({ "type": "object", "properties": {
                "path": { "type": "string", "minLength": 1 },
                "edits": { "type": "array", "items": { "$ref": "#/$defs/Replace" } } },
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
        ("ping", json!({ "type": "object" })),
    ];
    for (name, schema) in tools {
        source.add(Arc::new(Echo(name, schema))).expect("a tool");
    }
    registry
}

/// Calls as hosts meet them, whole JSON each: good ones, unicode, no
/// arguments, a reused id, an unknown tool, an image, a failure.
fn calls() -> Vec<Value> {
    vec![
        json!({ "id": "call_a", "name": "read_file", "arguments": r#"{"path":"src/lib.rs","image":true}"# }),
        json!({ "id": "call_b", "name": "edit", "arguments": r#"{"path":"ünï/cøde.rs","edits":[{"old":"a\"b","new":"c\\nd"}]}"# }),
        json!({ "id": "call_c", "name": "ping", "arguments": "" }),
        json!({ "id": "call_a", "name": "read_file", "arguments": r#"{"path":"again"}"# }),
        json!({ "id": "call_e", "name": "no_such_tool", "arguments": "{}" }),
        json!({ "id": "call_f", "name": "read_file", "arguments": r#"{"path":"x","fail":true}"# }),
    ]
}

/// What matters of a reply's calls.
fn seen(reply: &Reply) -> Vec<(String, String, Value, Option<String>)> {
    reply
        .calls
        .iter()
        .map(|call: &ToolCall| {
            (
                call.id.clone(),
                call.name.clone(),
                call.arguments.clone(),
                call.malformed.clone(),
            )
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn run_turn(registry: &ToolRegistry, reply: &Reply) -> Vec<SessionEntry> {
    runtime().block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry.clone());
        turns.turn(reply.calls.clone()).await
    })
}

fn responses_and_streams_made_by_the_sdk_read_to_the_same_calls(peer: Peer) {
    let registry = registry();
    let tools = peer.dialect.tools(&registry.tools()).expect("a list");
    let mut requests = vec![
        json!({ "kind": format!("{}.response", peer.made), "calls": calls(), "text": "Let me look." }),
    ];
    for chunk in [1, 5, 64] {
        requests.push(
            json!({ "kind": format!("{}.stream", peer.made), "calls": calls(),
            "text": "Let me look.", "chunk": chunk }),
        );
    }
    let made = made(&requests);
    let whole = peer.dialect.read(&made[0], Some(&tools)).expect("a reply");
    assert_eq!(whole.text.as_deref(), Some("Let me look."));
    let got = seen(&whole);
    assert_eq!(got.len(), 6);
    assert_eq!(got[0].2, json!({ "path": "src/lib.rs", "image": true }));
    assert_eq!(got[2].2, json!({}));
    assert_eq!(
        (got[3].0.as_str(), got[3].3.is_some()),
        ("rho_call_1", true)
    );
    for (index, stream) in made[1..].iter().enumerate() {
        let mut reader = peer.dialect.stream(Some(&tools));
        for event in stream.as_array().expect("events") {
            reader.push(event).expect("an event");
        }
        let reply = reader.finish();
        assert_eq!(seen(&reply), got, "stream {index}");
        assert_eq!(reply.history, whole.history, "stream {index}");
        assert_eq!(reply.text, whole.text, "stream {index}");
        assert_eq!(reply.stop, whole.stop, "stream {index}");
    }
}

/// A stream the SDK built, cut after each of its events in turn: every
/// cut reads without a panic to calls that are each whole or answered
/// with an error, and the history sent back is taken by the SDK.
fn a_stream_cut_anywhere_reads_to_whole_calls_or_errors(peer: Peer) {
    let registry = registry();
    let tools = peer.dialect.tools(&registry.tools()).expect("a list");
    let made = made(&[
        json!({ "kind": format!("{}.stream", peer.made), "calls": calls(),
        "text": "Let me look.", "chunk": 9 }),
    ]);
    let events = made[0].as_array().expect("events").clone();
    let mut histories = Vec::new();
    for cut in 0..events.len() {
        let mut reader = peer.dialect.stream(Some(&tools));
        for event in &events[..cut] {
            reader.push(event).expect("an event");
        }
        let reply = reader.finish();
        for call in &reply.calls {
            assert!(
                call.malformed.is_some() || call.arguments.is_object(),
                "cut {cut}: {call:?}"
            );
        }
        let entries = run_turn(&registry, &reply);
        let results = peer.dialect.results(&reply, &entries);
        assert_eq!(
            (peer.answered)(&results),
            (peer.echoed)(&reply.history),
            "cut {cut}"
        );
        histories.extend(
            reply
                .history
                .into_iter()
                .map(|message| (peer.message, message)),
        );
    }
    assert_accepted(&histories);
}

fn a_whole_conversation_rho_writes_is_taken_by_the_sdk(peer: Peer) {
    let registry = registry();
    let tools = peer.dialect.tools(&registry.tools()).expect("a list");
    let made = made(&[
        json!({ "kind": format!("{}.response", peer.made), "calls": calls(), "text": "Let me look." }),
    ]);
    let reply = peer.dialect.read(&made[0], Some(&tools)).expect("a reply");
    let entries = run_turn(&registry, &reply);
    let results = peer.dialect.results(&reply, &entries);
    assert_eq!((peer.answered)(&results), (peer.echoed)(&reply.history));
    let all = serde_json::to_string(&results).expect("json");
    assert!(all.contains("image/png"), "the PNG is shown: {all}");
    assert!(all.contains("image/tiff"), "the TIFF is named: {all}");

    let mut messages = vec![(peer.user)("Look at src/lib.rs")];
    messages.extend(reply.history.iter().cloned());
    messages.extend(results);
    let mut values: Vec<(&str, Value)> = messages
        .iter()
        .map(|message| (peer.message, message.clone()))
        .collect();
    values.push((peer.request, (peer.body)(messages, tools.to_json())));
    assert_accepted(&values);
}

fn every_tool_list_is_taken_by_the_sdk(peer: Peer) {
    let registry = registry();
    let mut values: Vec<(&str, Value)> = Vec::new();
    let list = peer.dialect.tools(&registry.tools()).expect("a list");
    values.extend(
        list.to_json()
            .as_array()
            .expect("a list")
            .iter()
            .map(|tool| (peer.tool, tool.clone())),
    );
    let mut runner = TestRunner::deterministic();
    for _ in 0..200 {
        let (schema, _) = support::shapes::root()
            .new_tree(&mut runner)
            .expect("a schema")
            .current();
        let list = peer.dialect.tools(&[info(schema)]).expect("a list");
        values.push((peer.tool, list.to_json()[0].clone()));
    }
    assert_accepted(&values);
}

/// Calls of a message with ids drawn from a few (so some repeat) or none.
fn message() -> impl Strategy<Value = Vec<Sent>> {
    proptest::collection::vec(
        (
            proptest::option::weighted(0.9, (0u8..6).prop_map(|id| format!("id{id}"))),
            proptest::sample::select(vec!["read_file", "ping", "unknown"]),
            (0u32..1000).prop_map(|n| json!({ "path": n.to_string() })),
        )
            .prop_map(|(id, name, arguments)| (id, name.to_owned(), arguments)),
        0..12,
    )
}

/// What a turn might hand back: entries for some of the calls, in any
/// order, some twice, some for calls the message never made.
fn entries_for(reply: &Reply, keep: &[bool], extra: usize) -> Vec<SessionEntry> {
    let entry = |id: &str, tool: &str| SessionEntry {
        call_id: id.to_owned(),
        tool: tool.to_owned(),
        outcome: Outcome::Succeeded,
        result: ToolResult::success(format!("answer of {id}")),
        cut_bytes: 0,
        waited: Duration::ZERO,
        queued: Duration::ZERO,
        ran: None,
        nested: Vec::new(),
    };
    let mut entries: Vec<SessionEntry> = reply
        .calls
        .iter()
        .zip(keep.iter().cycle())
        .filter(|(_, keep)| **keep)
        .map(|(call, _)| entry(&call.id, &call.name))
        .collect();
    entries.reverse();
    if let Some(first) = entries.first().cloned() {
        entries.push(first);
    }
    for n in 0..extra {
        entries.push(entry(&format!("stranger{n}"), "ping"));
    }
    entries
}

/// Any message's calls, with any entries a turn hands back, are answered
/// exactly once each, in the order of the history sent back, and each
/// answer is the entry of that call (or says the call was not run).
fn results_answer_every_call_once_in_order(peer: Peer) {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    });
    let strategy = (
        message(),
        proptest::collection::vec(any::<bool>(), 1..4),
        0usize..3,
    );
    runner
        .run(&strategy, |(calls, keep, extra)| {
            let reply = peer
                .dialect
                .read(&(peer.response)(&calls), None)
                .expect("a reply");
            prop_assert_eq!(reply.calls.len(), calls.len());
            let echoed = (peer.echoed)(&reply.history);
            // Every id sent back is unique (`-`: a Gemini call without one).
            let given: Vec<&String> = echoed.iter().filter(|id| *id != "-").collect();
            let unique: std::collections::HashSet<&&String> = given.iter().collect();
            prop_assert_eq!(
                unique.len(),
                given.len(),
                "ids sent back repeat: {:?}",
                echoed
            );
            let entries = entries_for(&reply, &keep, extra);
            let results = peer.dialect.results(&reply, &entries);
            prop_assert_eq!((peer.answered)(&results), echoed);
            let text = serde_json::to_string(&results).expect("json");
            for entry in &entries {
                let shown = text.contains(&format!("answer of {}", entry.call_id));
                prop_assert_eq!(shown, !entry.call_id.starts_with("stranger"));
            }
            Ok(())
        })
        .expect("the property holds");
}

/// 10,000 calls in one message, one of them with megabytes of arguments
/// and every thousandth of a tool that does not exist: each call is run
/// or refused, and answered once, in order.
fn ten_thousand_calls_and_megabytes_of_arguments_are_each_answered(peer: Peer) {
    let registry = registry();
    let big = "x".repeat(4 << 20);
    let calls: Vec<Sent> = (0..10_000)
        .map(|n| {
            let name = if n % 1_000 == 7 {
                "no_such_tool"
            } else {
                "read_file"
            };
            let path = if n == 5 { big.clone() } else { n.to_string() };
            (
                Some(format!("c{n}")),
                name.to_owned(),
                json!({ "path": path }),
            )
        })
        .collect();
    let reply = peer
        .dialect
        .read(&(peer.response)(&calls), None)
        .expect("a reply");
    assert_eq!(reply.calls.len(), 10_000);
    assert_eq!(
        reply.calls[5].arguments["path"].as_str().map(str::len),
        Some(4 << 20)
    );
    let entries = run_turn(&registry, &reply);
    assert_eq!(entries.len(), 10_000);
    let results = peer.dialect.results(&reply, &entries);
    let answered = (peer.answered)(&results);
    assert_eq!(answered.len(), 10_000);
    assert_eq!(answered, (peer.echoed)(&reply.history));
    let refused = entries
        .iter()
        .filter(|entry| entry.outcome == Outcome::Refused)
        .count();
    assert_eq!(refused, 10);
}

/// The tests, one module per dialect.
macro_rules! dialects {
    ($($dialect:ident),* $(,)?) => {$(
        mod $dialect {
            #[test]
            fn responses_and_streams_made_by_the_sdk_read_to_the_same_calls() {
                super::responses_and_streams_made_by_the_sdk_read_to_the_same_calls(super::$dialect());
            }
            #[test]
            fn a_stream_cut_anywhere_reads_to_whole_calls_or_errors() {
                super::a_stream_cut_anywhere_reads_to_whole_calls_or_errors(super::$dialect());
            }
            #[test]
            fn a_whole_conversation_rho_writes_is_taken_by_the_sdk() {
                super::a_whole_conversation_rho_writes_is_taken_by_the_sdk(super::$dialect());
            }
            #[test]
            fn every_tool_list_is_taken_by_the_sdk() {
                super::every_tool_list_is_taken_by_the_sdk(super::$dialect());
            }
            #[test]
            fn ten_thousand_calls_and_megabytes_of_arguments_are_each_answered() {
                super::ten_thousand_calls_and_megabytes_of_arguments_are_each_answered(super::$dialect());
            }
            #[test]
            fn results_answer_every_call_once_in_order() {
                super::results_answer_every_call_once_in_order(super::$dialect());
            }
        }
    )*};
}

dialects!(chat, responses, anthropic, gemini);
