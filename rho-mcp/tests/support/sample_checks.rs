//! What the official MCP SDKs' clients (Python's, TypeScript's) must see
//! of the sample registry, whatever the transport: one check a function, each given the client's
//! record of its run and the sample's log.

#![allow(dead_code, unreachable_pub)]

use serde_json::{Value, json};

use super::{PeerRun, scenario, text};

fn results(seen: &Value) -> &Value {
    scenario(seen, "results")
}

pub fn tools_list_comes_from_the_registry(run: &PeerRun) {
    let seen = &run.seen;
    let list = scenario(seen, "list");
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

pub fn an_answer_is_text_or_image_content(run: &PeerRun) {
    let seen = &run.seen;
    let echo = &results(seen)["echo"];
    assert_eq!(
        (echo["is_error"].clone(), text(echo)),
        (json!(false), "hello".to_owned())
    );
    let pixel = &results(seen)["pixel"];
    assert_eq!(pixel["kinds"], json!(["image", "text"]));
    assert_eq!(results(seen)["pixel_image"]["mime"], "image/png");
    assert!(
        results(seen)["pixel_image"]["data"]
            .as_str()
            .expect("base64")
            .starts_with("iVBORw0KGgo"),
        "a PNG, base64 on the wire"
    );
}

pub fn a_tools_own_error_is_an_error_result(run: &PeerRun) {
    let seen = &run.seen;
    let fail = &results(seen)["fail"];
    assert_eq!(fail["is_error"], true);
    assert_eq!(text(fail), "the tool says no");
}

pub fn a_panic_is_an_error_result_naming_the_tool(run: &PeerRun) {
    let seen = &run.seen;
    let panic = &results(seen)["panic"];
    assert_eq!(panic["is_error"], true);
    assert!(
        text(panic).contains("tool `panic` panicked") && text(panic).contains("on purpose"),
        "{panic}"
    );
}

pub fn a_hung_tool_is_killed_at_its_timeout(run: &PeerRun) {
    let seen = &run.seen;
    let hang = &results(seen)["hang"];
    assert_eq!(hang["is_error"], true);
    assert!(
        text(hang).contains("tool `hang` timed out after 300ms"),
        "{hang}"
    );
    let seconds = hang["seconds"].as_f64().expect("timed");
    assert!((0.29..2.0).contains(&seconds), "answered after {seconds} s");
}

pub fn an_unknown_tool_gets_the_nearest_names(run: &PeerRun) {
    let seen = &run.seen;
    let unknown = &results(seen)["unknown"];
    assert_eq!(unknown["is_error"], true);
    assert!(
        text(unknown).contains("no such tool `ecko`; the nearest tool is `echo`"),
        "{unknown}"
    );
    assert_eq!(unknown["structured"]["nearest"], json!(["echo"]));
}

pub fn invalid_arguments_get_every_failing_path(run: &PeerRun) {
    let seen = &run.seen;
    let invalid = &results(seen)["invalid"];
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

pub fn details_are_structured_content_checked_against_the_output_schema(run: &PeerRun) {
    let seen = &run.seen;
    let stats = &results(seen)["word_stats"];
    assert_eq!(stats["is_error"], false);
    assert_eq!(stats["structured"], json!({ "words": 3, "longest": "ccc" }));

    let bad = &results(seen)["bad_stats"];
    assert_eq!(bad["is_error"], true, "{bad}");
    let text = text(bad);
    assert!(text.contains("do not fit its output schema"), "{text}");
    assert!(text.contains("at `/words`"), "{text}");
    assert_eq!(bad["structured"], Value::Null);
}

pub fn partial_results_are_progress_notifications(run: &PeerRun) {
    let seen = &run.seen;
    let progress = scenario(seen, "progress");
    assert_eq!(text(&progress["result"]), "counted to 5");
    let seen = progress["progress"].as_array().expect("notifications");
    let steps: Vec<f64> = seen.iter().filter_map(|p| p["progress"].as_f64()).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(seen[0]["total"], 5.0);
    assert_eq!(seen[4]["message"], "step 5 of 5");
}

pub fn a_cancelled_call_is_aborted_at_once_and_the_session_goes_on(run: &PeerRun) {
    let seen = &run.seen;
    let cancel = scenario(seen, "cancel");
    let stopped = cancel["stopped_within"].as_f64();
    assert!(
        stopped.is_some_and(|seconds| seconds < 1.0),
        "the call still ran after the cancellation: {cancel}"
    );
    assert_eq!(text(&cancel["after"]), "still here");
}

pub fn list_changed_follows_the_registry(run: &PeerRun) {
    let seen = &run.seen;
    let changed = scenario(seen, "list_changed");
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

pub fn a_client_that_leaves_mid_call_has_its_calls_aborted(run: &PeerRun) {
    let seen = &run.seen;
    let disconnect = scenario(seen, "disconnect");
    let closed = disconnect["closed_after"].as_f64().expect("timed");
    assert!(
        closed < 3.0,
        "the server took {closed} s to go: {disconnect}"
    );
    // The sample logged each `slow` call's start and drop: every one that
    // started (20 s long) was dropped soon after the client left or
    // cancelled, and the server process ended.
    let log = &run.log;
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

pub fn approval_is_asked_of_the_clients_user_or_the_host_decides(run: &PeerRun) {
    let approval = scenario(&run.seen, "approval");
    let questions = approval["questions"].as_array().expect("questions");
    assert_eq!(
        questions.len(),
        3,
        "asked once a call of `wipe`: {approval}"
    );
    let message = questions[0]["message"].as_str().expect("a message");
    assert!(message.contains("Run the tool `wipe`"), "{message}");
    assert_eq!(
        questions[0]["schema"]["properties"]["approve"]["type"],
        "boolean"
    );
    assert_eq!(approval["approved"]["is_error"], false, "{approval}");
    assert_eq!(text(&approval["approved"]), "wiped (not really)");
    assert_eq!(approval["declined"]["is_error"], true);
    assert!(
        text(&approval["declined"]).contains("the user declined"),
        "{approval}"
    );
    assert!(
        text(&approval["refused"]).contains("did not approve"),
        "{approval}"
    );
    assert_eq!(
        approval["not_asked"]["is_error"], false,
        "no question for other tools"
    );
    let unasked = &approval["unasked_client"];
    assert_eq!(unasked["is_error"], true);
    assert!(
        text(unasked).contains("this client cannot ask one"),
        "a client without elicitation gets the host's answer: {unasked}"
    );
}

/// Makes a `#[test]` of each check, run on what `$run()` (a
/// `&'static PeerRun`) recorded.
#[macro_export]
macro_rules! sample_tests {
    ($run:path) => {
        #[test]
        fn approval_is_asked_of_the_clients_user_or_the_host_decides() {
            support::sample_checks::approval_is_asked_of_the_clients_user_or_the_host_decides(
                $run(),
            );
        }
        #[test]
        fn tools_list_comes_from_the_registry() {
            support::sample_checks::tools_list_comes_from_the_registry($run());
        }
        #[test]
        fn an_answer_is_text_or_image_content() {
            support::sample_checks::an_answer_is_text_or_image_content($run());
        }
        #[test]
        fn a_tools_own_error_is_an_error_result() {
            support::sample_checks::a_tools_own_error_is_an_error_result($run());
        }
        #[test]
        fn a_panic_is_an_error_result_naming_the_tool() {
            support::sample_checks::a_panic_is_an_error_result_naming_the_tool($run());
        }
        #[test]
        fn a_hung_tool_is_killed_at_its_timeout() {
            support::sample_checks::a_hung_tool_is_killed_at_its_timeout($run());
        }
        #[test]
        fn an_unknown_tool_gets_the_nearest_names() {
            support::sample_checks::an_unknown_tool_gets_the_nearest_names($run());
        }
        #[test]
        fn invalid_arguments_get_every_failing_path() {
            support::sample_checks::invalid_arguments_get_every_failing_path($run());
        }
        #[test]
        fn details_are_structured_content_checked_against_the_output_schema() {
            support::sample_checks::details_are_structured_content_checked_against_the_output_schema($run());
        }
        #[test]
        fn partial_results_are_progress_notifications() {
            support::sample_checks::partial_results_are_progress_notifications($run());
        }
        #[test]
        fn a_cancelled_call_is_aborted_at_once_and_the_session_goes_on() {
            support::sample_checks::a_cancelled_call_is_aborted_at_once_and_the_session_goes_on($run());
        }
        #[test]
        fn list_changed_follows_the_registry() {
            support::sample_checks::list_changed_follows_the_registry($run());
        }
        #[test]
        fn a_client_that_leaves_mid_call_has_its_calls_aborted() {
            support::sample_checks::a_client_that_leaves_mid_call_has_its_calls_aborted($run());
        }
    };
}
