//! The MCP reference server (`@modelcontextprotocol/server-everything`,
//! pinned, installed from npm on demand) imported as a rho source: its
//! tools listed with their schemas and hints, text, image and structured
//! answers, progress as partial results, rho's deadline on a long call
//! (the server keeps serving), and a tool list that changes after the
//! handshake. Each runs in a tokio host and in a smol host.

#[macro_use]
mod import_support;

use std::time::{Duration, Instant};

use import_support::{
    Host, Smol, Tokio, call, check_reference_answers, check_reference_progress,
    check_reference_tools_added_after_the_handshake, everything_source,
};
use rho_registry::ToolRegistry;
use rho_tool_core::Outcome;
use serde_json::json;

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

on_both_hosts!(
    lists_its_tools_with_schemas_and_hints,
    answers_text_images_and_structured_content,
    progress_becomes_partial_results,
    a_long_call_ends_at_rhos_timeout_and_the_server_keeps_serving,
    the_tools_it_adds_after_the_handshake_are_listed,
);
