//! The Chat Completions dialect with what a model (or a server in front of
//! one) sends wrong: every call answered once, in order, the host unharmed.

use std::sync::Arc;

use rho::model::chat::Chat;
use rho::model::{MAX_ARGUMENTS_BYTES, Reply};
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{
    Content, Image, Outcome, Plain, Source, Tool, ToolAnnotations, ToolContext, ToolOutput,
    ToolRegistry, ToolResult, async_trait,
};
use serde_json::{Value, json};

/// `echo` repeats its arguments; `picture` answers an image with details;
/// `fail` answers an error.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Repeats its arguments."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object", "properties": {
            "text": { "type": "string" }, "times": { "type": "integer" } }, "required": ["text"] })
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    async fn run(&self, args: Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text(args.to_string())
    }
}

struct Picture;

#[async_trait]
impl Tool for Picture {
    fn name(&self) -> &str {
        "picture"
    }
    fn description(&self) -> &str {
        "Draws."
    }
    async fn run(&self, _args: Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::from_result(
            ToolResult::from_content(
                [
                    Content::text("a dot"),
                    Content::image(Image::new("image/png", vec![1, 2, 3])),
                ],
                false,
            )
            .with_details(Plain::from(json!({ "secret": "for screens only" }))),
        )
    }
}

struct Fail;

#[async_trait]
impl Tool for Fail {
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Fails."
    }
    async fn run(&self, _args: Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::error("it did not work")
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("builtin"))
        .expect("a source");
    source.add(Arc::new(Echo)).expect("echo");
    source.add(Arc::new(Picture)).expect("picture");
    source.add(Arc::new(Fail)).expect("fail");
    registry
}

/// Runs `reply`'s calls as one turn; the messages that answer them.
fn answer(runtime: &tokio::runtime::Runtime, registry: &ToolRegistry, reply: &Reply) -> Vec<Value> {
    runtime.block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry.clone());
        let entries = turns.turn(reply.calls.clone()).await;
        Chat::new().results(reply, &entries)
    })
}

fn response(calls: Value) -> Value {
    json!({ "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{ "index": 0, "finish_reason": "tool_calls",
            "message": { "role": "assistant", "content": null, "tool_calls": calls } }] })
}

fn function(id: &str, name: &str, arguments: &str) -> Value {
    json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } })
}

fn delta(index: u64, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut function = json!({ "arguments": arguments });
    if let Some(name) = name {
        function["name"] = name.into();
    }
    let mut call = json!({ "index": index, "function": function });
    if let Some(id) = id {
        call["id"] = id.into();
        call["type"] = "function".into();
    }
    json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0,
        "delta": { "tool_calls": [call] }, "finish_reason": null }] })
}

fn finish() -> Value {
    json!({ "object": "chat.completion.chunk",
        "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] })
}

/// The ids the echoed assistant message lists, in order.
fn echoed_ids(reply: &Reply) -> Vec<String> {
    reply.history[0]["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|call| call["id"].as_str().expect("an id").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The `tool_call_id` of each tool message, in order.
fn answered_ids(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["tool_call_id"].as_str().expect("an id").to_owned())
        .collect()
}

#[test]
fn interleaved_deltas_of_parallel_calls_come_out_in_the_models_order() {
    let arguments = [
        r#"{"text":"first","times":1}"#,
        r#"{"text":"second"}"#,
        r#"{"text":"third, with \"quotes\" and ünïcode"}"#,
    ];
    let mut stream = Chat::new().stream(None);
    // Each call opens with its id and name; then one character of each
    // call's arguments in turn, as servers interleave them.
    for (index, id) in ["a", "b", "c"].iter().enumerate() {
        stream
            .push(&delta(index as u64, Some(id), Some("echo"), ""))
            .expect("a chunk");
    }
    let chars: Vec<Vec<char>> = arguments
        .iter()
        .map(|text| text.chars().collect())
        .collect();
    let longest = chars.iter().map(Vec::len).max().unwrap_or(0);
    for position in 0..longest {
        for (index, text) in chars.iter().enumerate().rev() {
            if let Some(c) = text.get(position) {
                stream
                    .push(&delta(index as u64, None, None, &c.to_string()))
                    .expect("a chunk");
            }
        }
    }
    stream.push(&finish()).expect("a chunk");
    let reply = stream.finish();
    assert_eq!(reply.stop.as_deref(), Some("tool_calls"));
    let got: Vec<(String, Value)> = reply
        .calls
        .iter()
        .map(|call| (call.id.clone(), call.arguments.clone()))
        .collect();
    let want: Vec<(String, Value)> = ["a", "b", "c"]
        .iter()
        .zip(arguments)
        .map(|(id, text)| ((*id).to_owned(), serde_json::from_str(text).expect("json")))
        .collect();
    assert_eq!(got, want);
    // The message sent back holds the arguments as the model sent them.
    assert_eq!(
        reply.history[0]["tool_calls"][2]["function"]["arguments"],
        arguments[2]
    );
}

#[test]
fn a_stream_cut_inside_arguments_answers_that_call_with_an_error_and_runs_the_rest() {
    let runtime = runtime();
    let registry = registry();
    let mut stream = Chat::new().stream(None);
    stream
        .push(&delta(0, Some("whole"), Some("echo"), r#"{"text":"ok"}"#))
        .expect("a chunk");
    stream
        .push(&delta(1, Some("cut"), Some("echo"), r#"{"text":"no"#))
        .expect("a chunk");
    // No finish: the connection dropped.
    let reply = stream.finish();
    assert_eq!(reply.stop, None);
    assert!(reply.calls[0].malformed.is_none());
    assert_eq!(
        reply.calls[1].malformed.as_deref(),
        Some("the response ended inside its arguments")
    );
    let messages = answer(&runtime, &registry, &reply);
    assert_eq!(answered_ids(&messages), ["whole", "cut"]);
    assert_eq!(messages[0]["content"], r#"{"text":"ok"}"#);
    assert_eq!(
        messages[1]["content"],
        "this call was not run: the response ended inside its arguments"
    );
}

#[test]
fn reused_and_missing_ids_get_fresh_ones_and_an_error_each() {
    let runtime = runtime();
    let registry = registry();
    let reply = Chat::new()
        .read(
            &response(json!([
                function("same", "echo", r#"{"text":"1"}"#),
                function("same", "echo", r#"{"text":"2"}"#),
                { "type": "function", "function": { "name": "echo", "arguments": "{\"text\":\"3\"}" } },
                function("", "echo", r#"{"text":"4"}"#),
            ])),
            None,
        )
        .expect("a reply");
    let ids = echoed_ids(&reply);
    assert_eq!(ids, ["same", "rho_call_1", "rho_call_2", "rho_call_3"]);
    let messages = answer(&runtime, &registry, &reply);
    // Each id of the message sent back is answered once, in order.
    assert_eq!(answered_ids(&messages), ids);
    assert_eq!(messages[0]["content"], r#"{"text":"1"}"#);
    assert!(
        messages[1]["content"]
            .as_str()
            .expect("text")
            .contains("its id `same` is the id of an earlier call"),
        "{}",
        messages[1]
    );
    for message in &messages[2..] {
        assert!(
            message["content"]
                .as_str()
                .expect("text")
                .contains("without an id"),
            "{message}"
        );
    }
}

#[test]
fn ten_thousand_calls_in_one_message_get_ten_thousand_answers_in_order() {
    let runtime = runtime();
    let registry = registry();
    let calls: Vec<Value> = (0..10_000)
        .map(|n| {
            let name = if n % 1_000 == 7 {
                "no_such_tool"
            } else {
                "echo"
            };
            function(&format!("c{n}"), name, &format!(r#"{{"text":"{n}"}}"#))
        })
        .collect();
    let reply = Chat::new()
        .read(&response(Value::Array(calls)), None)
        .expect("a reply");
    assert_eq!(reply.calls.len(), 10_000);
    let messages = answer(&runtime, &registry, &reply);
    assert_eq!(messages.len(), 10_000);
    assert_eq!(answered_ids(&messages), echoed_ids(&reply));
    assert_eq!(messages[9_999]["content"], r#"{"text":"9999"}"#);
    let unknown = messages[1_007]["content"].as_str().expect("text");
    assert!(unknown.contains("no_such_tool"), "{unknown}");
}

#[test]
fn megabytes_of_arguments_are_taken_and_past_the_bound_refused() {
    let runtime = runtime();
    let registry = registry();
    let big = "x".repeat(4 << 20);
    let mut stream = Chat::new().stream(None);
    stream
        .push(&delta(0, Some("big"), Some("echo"), r#"{"text":""#))
        .expect("a chunk");
    for piece in big.as_bytes().chunks(1 << 20) {
        let piece = std::str::from_utf8(piece).expect("ascii");
        stream.push(&delta(0, None, None, piece)).expect("a chunk");
    }
    stream
        .push(&delta(0, None, None, r#""}"#))
        .expect("a chunk");
    // A second call that goes on past the bound.
    stream
        .push(&delta(1, Some("huge"), Some("echo"), r#"{"text":""#))
        .expect("a chunk");
    let mib = "y".repeat(1 << 20);
    for _ in 0..(MAX_ARGUMENTS_BYTES >> 20) + 1 {
        stream.push(&delta(1, None, None, &mib)).expect("a chunk");
    }
    stream.push(&finish()).expect("a chunk");
    let reply = stream.finish();
    assert_eq!(
        reply.calls[0].arguments["text"].as_str().map(str::len),
        Some(4 << 20)
    );
    let refused = reply.calls[1].malformed.as_deref().expect("refused");
    assert!(refused.contains("longer than"), "{refused}");
    // What is sent back is not the model's megabytes again.
    assert_eq!(
        reply.history[0]["tool_calls"][1]["function"]["arguments"],
        "{}"
    );
    let messages = answer(&runtime, &registry, &reply);
    assert_eq!(answered_ids(&messages), ["big", "huge"]);
}

#[test]
fn chunks_of_the_wrong_shape_are_errors_or_ignored_never_a_panic() {
    let mut stream = Chat::new().stream(None);
    for chunk in [json!([1, 2]), json!("data"), json!(null)] {
        assert!(stream.push(&chunk).is_err(), "{chunk}");
    }
    for chunk in [
        json!({}),
        json!({ "choices": [] }),
        json!({ "choices": "no" }),
        json!({ "choices": [{ "delta": { "tool_calls": "no" } }] }),
        json!({ "choices": [{ "delta": { "tool_calls": [{ "index": "zero", "function": 7 }] } }] }),
        json!({ "choices": [{ "delta": { "tool_calls": [{ "index": u64::MAX, "id": "far", "function": { "name": "echo", "arguments": "{\"text\":\"far\"}" } }] } }] }),
        json!({ "usage": { "total_tokens": 3 } }),
    ] {
        stream.push(&chunk).expect("taken");
    }
    stream.push(&finish()).expect("a chunk");
    let reply = stream.finish();
    // The call at index u64::MAX is one call, not a list that long.
    assert!(reply.calls.iter().any(|call| call.id == "far"), "{reply:?}");
    assert!(reply.calls.len() <= 2, "{reply:?}");
    // A whole response of the wrong shape is an error.
    for response in [
        json!({}),
        json!({ "choices": [] }),
        json!({ "choices": [{}] }),
        json!([]),
    ] {
        assert!(Chat::new().read(&response, None).is_err(), "{response}");
    }
}

#[test]
fn results_flag_nothing_leak_no_details_and_put_images_in_a_user_message_after() {
    let runtime = runtime();
    let registry = registry();
    let reply = Chat::new()
        .read(
            &response(json!([
                function("p", "picture", "{}"),
                function("f", "fail", "{}"),
                function("e", "echo", r#"{"text":"hi"}"#),
            ])),
            None,
        )
        .expect("a reply");
    let messages = answer(&runtime, &registry, &reply);
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(answered_ids(&messages[..3]), ["p", "f", "e"]);
    assert_eq!(
        messages[0]["content"],
        "a dot\n[1 image of this result follow in the next user message]"
    );
    assert_eq!(messages[1]["content"], "it did not work");
    assert_eq!(
        messages[3],
        json!({ "role": "user", "content": [
            { "type": "text", "text": "Images of tool call `p` (picture):" },
            { "type": "image_url", "image_url": { "url": "data:image/png;base64,AQID" } },
        ] })
    );
    let all = serde_json::to_string(&messages).expect("json");
    assert!(!all.contains("for screens only"), "{all}");
}

#[test]
fn a_call_the_turn_never_ended_is_answered_as_not_run() {
    let reply = Chat::new()
        .read(
            &response(json!([
                function("a", "echo", r#"{"text":"1"}"#),
                function("b", "echo", r#"{"text":"2"}"#),
            ])),
            None,
        )
        .expect("a reply");
    // The host ran no turn (it was stopped before): no entries at all.
    let messages = Chat::new().results(&reply, &[]);
    assert_eq!(answered_ids(&messages), ["a", "b"]);
    assert!(
        messages[1]["content"]
            .as_str()
            .expect("text")
            .starts_with("this call was not run"),
        "{}",
        messages[1]
    );
}

#[test]
fn an_aborted_turn_still_answers_every_call() {
    let runtime = runtime();
    let registry = registry();
    let reply = Chat::new()
        .read(
            &response(json!([
                function("a", "echo", r#"{"text":"1"}"#),
                function("b", "picture", "{}"),
            ])),
            None,
        )
        .expect("a reply");
    let messages = runtime.block_on(async {
        let turns = TurnRunner::new(TokioExecutor::current().expect("tokio"), registry.clone());
        let turn = turns.turn(reply.calls.clone());
        turn.abort_handle().abort();
        let entries = turn.await;
        assert!(
            entries
                .iter()
                .all(|entry| entry.outcome == Outcome::Aborted),
            "{entries:?}"
        );
        Chat::new().results(&reply, &entries)
    });
    assert_eq!(answered_ids(&messages), ["a", "b"]);
}

#[test]
fn strict_modes_nulls_are_read_back_as_left_out_through_the_list() {
    let registry = registry();
    let chat = Chat::new();
    let tools = chat.tools(&registry.tools()).expect("a list");
    let listed = tools.to_json();
    let echo = &listed
        .as_array()
        .expect("a list")
        .iter()
        .find(|tool| tool["function"]["name"] == "echo")
        .expect("echo is listed")["function"];
    assert_eq!(echo["strict"], true);
    assert_eq!(
        echo["parameters"]["properties"]["times"]["type"],
        json!(["integer", "null"])
    );
    let reply = chat
        .read(
            &response(json!([function(
                "a",
                "echo",
                r#"{"text":"x","times":null}"#
            )])),
            Some(&tools),
        )
        .expect("a reply");
    assert_eq!(reply.calls[0].arguments, json!({ "text": "x" }));
    // The message sent back keeps what the model sent.
    assert_eq!(
        reply.history[0]["tool_calls"][0]["function"]["arguments"],
        r#"{"text":"x","times":null}"#
    );
}

/// A host that allows no loss gets the list refused, naming the tool and
/// what its conversion would change; one that allows the loss gets it,
/// with the changes reported.
#[test]
fn a_host_can_refuse_a_lossy_conversion() {
    use rho::model::schema::{ChangeKind, Loss};
    use rho::model::{ListError, Options};

    let registry = registry();
    let error = Chat::with_options(Options::new().max_loss(Loss::None))
        .tools(&registry.tools())
        .expect_err("closing echo's open object narrows it");
    match error {
        ListError::Lossy {
            tool,
            loss,
            changes,
        } => {
            assert_eq!((tool.as_str(), loss), ("echo", Loss::Narrowed));
            assert!(
                changes
                    .iter()
                    .any(|change| change.what == ChangeKind::Closed),
                "{changes:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let list = Chat::new()
        .tools(&registry.tools())
        .expect("any loss allowed");
    assert_eq!(list.loss(), Loss::Narrowed);
    let echo = list
        .listed()
        .iter()
        .find(|listed| listed.name == "echo")
        .expect("echo");
    assert!(
        echo.strict
            && echo
                .changes
                .iter()
                .any(|change| matches!(change.what, ChangeKind::MadeNullable { .. }))
    );
}
