//! The MCP reference server (`@modelcontextprotocol/server-everything`,
//! pinned, installed from npm on demand) imported as a rho source: its
//! tools listed with their schemas and hints, text, image and structured
//! answers, progress as partial results, rho's deadline on a long call
//! (the server keeps serving), a tool list that changes after the
//! handshake, and every tool's answer arriving whole: the same parts, in
//! the same order, with the same bytes and annotations, and the same
//! structured content, as the server wrote them. Each runs in a tokio
//! host and in a smol host.

#[macro_use]
mod import_support;

use std::time::{Duration, Instant};

use import_support::{
    Host, RawEverything, Smol, Tokio, call, check_reference_answers, check_reference_progress,
    check_reference_tools_added_after_the_handshake, everything_calls, everything_source,
};
use rho_registry::ToolRegistry;
use rho_tool_core::{Outcome, ToolResult};
use serde_json::{Value, json};

fn lists_its_tools_with_schemas_and_hints(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(everything_source("everything").connect(&registry))
        .expect("the reference server imports");
    let tools = registry.tools();
    let echo = tools
        .iter()
        .find(|tool| tool.name == "echo")
        .unwrap_or_else(|| panic!("echo in {:?}", source.tools()));
    assert_eq!(echo.source, "everything");
    assert!(echo.untrusted, "an imported tool is untrusted");
    assert_eq!(echo.parameters["properties"]["message"]["type"], "string");
    let structured = tools
        .iter()
        .find(|tool| tool.name == "get-structured-content")
        .expect("get-structured-content");
    assert_eq!(
        structured.output_schema.as_ref().expect("an output schema")["properties"]["temperature"]["type"],
        "number"
    );
    let image = tools
        .iter()
        .find(|tool| tool.name == "get-tiny-image")
        .expect("get-tiny-image");
    assert!(image.annotations.is_read_only(), "{:?}", image.annotations);
    assert_eq!(
        image.annotations.title.as_deref(),
        Some("Get Tiny Image Tool")
    );
    assert!(source.server_pid().is_some());
}

fn answers_text_images_and_structured_content(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(everything_source("everything").connect(&registry))
        .expect("the reference server imports");
    let runner = host.runner();
    host.block_on(check_reference_answers(&registry, &runner));
}

fn progress_becomes_partial_results(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(everything_source("everything").connect(&registry))
        .expect("the reference server imports");
    let runner = host.runner();
    host.block_on(check_reference_progress(&registry, &runner, 4));
}

fn a_long_call_ends_at_rhos_timeout_and_the_server_keeps_serving(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            everything_source("everything")
                .timeout(Duration::from_millis(500))
                .connect(&registry),
        )
        .expect("the reference server imports");
    let pid = source.server_pid();
    let runner = host.runner();
    host.block_on(async {
        let started = Instant::now();
        let long = call(
            &registry,
            &runner,
            "trigger-long-running-operation",
            json!({ "duration": 30, "steps": 3 }),
        )
        .await;
        assert_eq!(long.outcome, Outcome::TimedOut, "{}", long.result.text());
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let echo = call(
            &registry,
            &runner,
            "echo",
            json!({ "message": "still here" }),
        )
        .await;
        assert_eq!(echo.result.text(), "Echo: still here");
    });
    assert_eq!(source.server_pid(), pid, "the same server, not a restart");
}

fn the_tools_it_adds_after_the_handshake_are_listed(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(everything_source("everything").connect(&registry))
        .expect("the reference server imports");
    check_reference_tools_added_after_the_handshake(&source);
}

/// What a client compares of an answer: its parts, its structured content
/// (`null` when there is none) and whether it is an error.
fn compared(content: &Value, structured: Option<&Value>, is_error: Option<&Value>) -> Value {
    numbers_as_floats(json!({
        "content": content,
        "structuredContent": structured.cloned().unwrap_or(Value::Null),
        "isError": is_error.and_then(Value::as_bool).unwrap_or(false),
    }))
}

/// `value` with every number a float. JSON does not tell `1` from `1.0`
/// (every SDK reads them as the same number), but `serde_json` does, and
/// the server writes an annotation's priority of 1 as `1` where rmcp,
/// which holds it as an `f32`, writes `1.0`.
fn numbers_as_floats(value: Value) -> Value {
    match value {
        Value::Number(number) => number
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Number(number), Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_floats).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, numbers_as_floats(value)))
                .collect(),
        ),
        other => other,
    }
}

/// `result` as MCP's JSON: rho writes its parts (with their extras) in
/// MCP's shape, and its details are the structured content.
fn as_mcp(result: &ToolResult) -> Value {
    let json = serde_json::to_value(result).expect("a result is JSON");
    compared(&json["content"], json.get("details"), json.get("isError"))
}

fn every_answer_arrives_whole(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(everything_source("everything").connect(&registry))
        .expect("the reference server imports");
    check_reference_tools_added_after_the_handshake(&source);
    let calls = everything_calls();
    let listed = source.tools();
    for tool in &listed {
        assert!(
            calls.iter().any(|call| call.tool == tool),
            "the reference server lists `{tool}`, which no call here compares"
        );
    }
    // The same server, as it answers a client that reads it by hand.
    let mut raw = RawEverything::start();
    let task_only = raw.task_only_tools(&listed);
    let runner = host.runner();
    for call_of in &calls {
        assert!(
            listed.iter().any(|tool| tool == call_of.tool),
            "`{}` is not listed: {listed:?}",
            call_of.tool
        );
        let mut tries = Vec::new();
        for _ in 0..call_of.tries {
            let sent = if task_only.iter().any(|tool| tool == call_of.tool) {
                raw.call_as_task(call_of.tool, &call_of.arguments)
            } else {
                raw.call(call_of.tool, &call_of.arguments)
            };
            let sent = compared(
                &sent["content"],
                sent.get("structuredContent"),
                sent.get("isError"),
            );
            let end = host.block_on(call(
                &registry,
                &runner,
                call_of.tool,
                call_of.arguments.clone(),
            ));
            let got = as_mcp(&end.result);
            let same = got == sent;
            tries.push((sent, got));
            if same {
                break;
            }
        }
        let (sent, got) = tries.last().expect("one try at least");
        assert_eq!(
            got, sent,
            "`{}` with {}: what rho got (left) is not what the server sent (right), in {} tries",
            call_of.tool, call_of.arguments, call_of.tries
        );
    }
}

on_both_hosts!(
    lists_its_tools_with_schemas_and_hints,
    answers_text_images_and_structured_content,
    progress_becomes_partial_results,
    a_long_call_ends_at_rhos_timeout_and_the_server_keeps_serving,
    the_tools_it_adds_after_the_handshake_are_listed,
    every_answer_arrives_whole,
);
