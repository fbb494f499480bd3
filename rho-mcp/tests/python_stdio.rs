//! The official MCP Python SDK as a client of rho's server over stdio:
//! the sample registry (`rho-mcp sample`), one tool for each way a call
//! can go, driven by `tests/peers/client.py`.
//!
//! The client runs once for all these tests (a real process, a real
//! session); each test checks one part of what it saw.

mod support;

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Value, json};
use support::{log_path, run_python_client, scenario, text};

struct Run {
    seen: Value,
    log: PathBuf,
}

fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("python-stdio");
        let server = env!("CARGO_BIN_EXE_rho-mcp");
        let seen = run_python_client(
            &["stdio", server, "sample"],
            &[("RHO_MCP_SAMPLE_LOG", &log)],
        );
        Run { seen, log }
    })
}

fn results() -> &'static Value {
    scenario(&run().seen, "results")
}

#[test]
fn tools_list_comes_from_the_registry() {
    let list = scenario(&run().seen, "list");
    let names: Vec<&str> = list["names"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in ["echo", "pixel", "panic", "hang", "word_stats", "flaky"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert_eq!(list["echo_description"], "Answers with `text`.");
    assert_eq!(list["echo_input_schema"]["required"], json!(["text"]));
    assert_eq!(
        list["echo_annotations"],
        json!({ "title": "echo", "read_only_hint": true })
    );
    assert_eq!(
        list["flaky_annotations"],
        Value::Null,
        "an untrusted tool's hints are not the host's word"
    );
    assert_eq!(
        list["word_stats_output_schema"]["required"],
        json!(["words", "longest"])
    );
}

#[test]
fn an_answer_is_text_or_image_content() {
    let echo = &results()["echo"];
    assert_eq!(
        (echo["is_error"].clone(), text(echo)),
        (json!(false), "hello".to_owned())
    );
    let pixel = &results()["pixel"];
    assert_eq!(pixel["kinds"], json!(["image", "text"]));
    assert_eq!(results()["pixel_image"]["mime"], "image/png");
    assert!(
        results()["pixel_image"]["data"]
            .as_str()
            .expect("base64")
            .starts_with("iVBORw0KGgo"),
        "a PNG, base64 on the wire"
    );
}

#[test]
fn a_tools_own_error_is_an_error_result() {
    let fail = &results()["fail"];
    assert_eq!(fail["is_error"], true);
    assert_eq!(text(fail), "the tool says no");
}

#[test]
fn a_panic_is_an_error_result_naming_the_tool() {
    let panic = &results()["panic"];
    assert_eq!(panic["is_error"], true);
    assert!(
        text(panic).contains("tool `panic` panicked") && text(panic).contains("on purpose"),
        "{panic}"
    );
}

#[test]
fn a_hung_tool_is_killed_at_its_timeout() {
    let hang = &results()["hang"];
    assert_eq!(hang["is_error"], true);
    assert!(
        text(hang).contains("tool `hang` timed out after 300ms"),
        "{hang}"
    );
    let seconds = hang["seconds"].as_f64().expect("timed");
    assert!((0.29..2.0).contains(&seconds), "answered after {seconds} s");
}

#[test]
fn an_unknown_tool_gets_the_nearest_names() {
    let unknown = &results()["unknown"];
    assert_eq!(unknown["is_error"], true);
    assert!(
        text(unknown).contains("no such tool `ecko`; the nearest tool is `echo`"),
        "{unknown}"
    );
    assert_eq!(unknown["structured"]["nearest"], json!(["echo"]));
}

#[test]
fn invalid_arguments_get_every_failing_path() {
    let invalid = &results()["invalid"];
    assert_eq!(invalid["is_error"], true);
    let text = text(invalid);
    assert!(
        text.contains("at `/text`: 2 is not of type \"string\""),
        "{text}"
    );
    assert!(text.contains("'txt' was unexpected"), "{text}");
    let paths: Vec<&str> = invalid["structured"]["errors"]
        .as_array()
        .expect("the failures as data")
        .iter()
        .filter_map(|failure| failure["path"].as_str())
        .collect();
    assert_eq!(paths, ["/text", ""]);
}

#[test]
fn details_are_structured_content_checked_against_the_output_schema() {
    let stats = &results()["word_stats"];
    assert_eq!(stats["is_error"], false);
    assert_eq!(stats["structured"], json!({ "words": 3, "longest": "ccc" }));

    let bad = &results()["bad_stats"];
    assert_eq!(bad["is_error"], true, "{bad}");
    let text = text(bad);
    assert!(text.contains("do not fit its output schema"), "{text}");
    assert!(text.contains("at `/words`"), "{text}");
    assert_eq!(bad["structured"], Value::Null);
}

#[test]
fn partial_results_are_progress_notifications() {
    let progress = scenario(&run().seen, "progress");
    assert_eq!(text(&progress["result"]), "counted to 5");
    let seen = progress["progress"].as_array().expect("notifications");
    let steps: Vec<f64> = seen.iter().filter_map(|p| p["progress"].as_f64()).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(seen[0]["total"], 5.0);
    assert_eq!(seen[4]["message"], "step 5 of 5");
}

#[test]
fn a_cancelled_call_is_aborted_at_once_and_the_session_goes_on() {
    let cancel = scenario(&run().seen, "cancel");
    let stopped = cancel["stopped_within"].as_f64();
    assert!(
        stopped.is_some_and(|seconds| seconds < 1.0),
        "the call still ran after the cancellation: {cancel}"
    );
    assert_eq!(text(&cancel["after"]), "still here");
}

#[test]
fn list_changed_follows_the_registry() {
    let changed = scenario(&run().seen, "list_changed");
    assert_eq!(changed["defined"]["is_error"], false);
    assert!(
        changed["told_define"].is_number(),
        "told of the new tool: {changed}"
    );
    assert!(
        changed["names_after_define"]
            .as_array()
            .expect("names")
            .contains(&json!("defined"))
    );
    // Two crashes quarantine the agent's tool: the client is told, and it
    // leaves the list.
    assert!(
        changed["told_quarantine"].is_number(),
        "told of the quarantine: {changed}"
    );
    assert!(
        !changed["names_after_quarantine"]
            .as_array()
            .expect("names")
            .contains(&json!("flaky"))
    );
    let refused = &changed["refused"];
    assert_eq!(refused["is_error"], true);
    assert!(
        text(refused).contains("disabled after 2 failures"),
        "{refused}"
    );
}

#[test]
fn a_client_that_leaves_mid_call_has_its_calls_aborted() {
    let disconnect = scenario(&run().seen, "disconnect");
    let closed = disconnect["closed_after"].as_f64().expect("timed");
    assert!(
        closed < 3.0,
        "the server took {closed} s to go: {disconnect}"
    );
    // The sample logged each `slow` call's start and drop: every one that
    // started (20 s long) was dropped soon after the client left or
    // cancelled, and the server process ended.
    let log = std::fs::read_to_string(&run().log).expect("the sample's log");
    let started = log
        .lines()
        .filter(|line| line.ends_with(" started"))
        .count();
    let dropped: Vec<u64> = log
        .lines()
        .filter_map(|line| line.split(" dropped after ").nth(1))
        .filter_map(|ms| ms.trim_end_matches(" ms").parse().ok())
        .collect();
    assert_eq!(started, 2, "{log}");
    assert_eq!(dropped.len(), started, "{log}");
    assert!(dropped.iter().all(|ms| *ms < 2000), "{log}");
    assert_eq!(log.lines().last(), Some("exit"), "{log}");
}
