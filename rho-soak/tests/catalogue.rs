//! The catalogue of bad input: one test per row, each on a real tokio
//! multi-thread runtime, each asserting a clear error result (or error
//! value) and that nothing is lost or stuck: the turn ends within a bound,
//! every call has exactly one session entry and one start and one end
//! event, and no rho task is left afterwards.

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use rho_conformance::support::{Latch, SetOnDrop, TestGate, TestTool, flag};
use rho_tool_core::untrusted::{Limits, Plain, PlainError, timeout_text};
use rho_tool_core::{Image, Outcome, ToolCall, ToolContext, ToolOutput, Verdict};
use rho_turn::{KeepDetails, TurnEvent};
use serde_json::{Value, json};
use support::{BOUND, Bench, SchemaTool, answering, dismantle, nested_objects};

/// 100 MiB.
const HUGE: usize = 100 << 20;

fn call(id: &str, tool: &str, arguments: Value) -> ToolCall {
    ToolCall::new(id, tool, arguments)
}

#[test]
fn arguments_of_every_json_type_but_an_object_are_refused() {
    let tool = answering("echo");
    let runs = tool.runs();
    let bench = Bench::new().with(tool);
    let turns = bench.turns();
    let not_objects = [
        ("null", json!(null)),
        ("true", json!(true)),
        ("false", json!(false)),
        ("integer", json!(42)),
        ("float", json!(-1.5)),
        ("string", json!("path=/etc/passwd")),
        ("empty array", json!([])),
        ("array", json!([1, { "a": 2 }])),
    ];
    let calls = not_objects
        .iter()
        .map(|(id, arguments)| call(id, "echo", arguments.clone()))
        .collect();
    let run = bench.run(&turns, calls);
    for (entry, (kind, _)) in run.entries.iter().zip(&not_objects) {
        assert_eq!(entry.outcome, Outcome::Refused, "{kind}");
        let text = entry.text();
        assert!(
            text.contains("tool `echo` was not run: its arguments do not fit its schema")
                && text.contains("is not of type \"object\""),
            "{kind}: {text}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no tool ran");
    let health = bench.health("echo");
    assert_eq!(
        (health.calls, health.refused, health.strikes),
        (8, 8, 0),
        "each refusal reaches the tool's source as a refusal, never as a strike"
    );
    bench.assert_nothing_left();
}

#[test]
fn schema_violations_are_refused_naming_each_path() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "minLength": 1 },
            "lines": { "type": "integer", "minimum": 1 },
            "mode": { "enum": ["text", "binary"] },
        },
        "required": ["path"],
        "additionalProperties": false,
    });
    let tool = answering("read_file");
    let runs = tool.runs();
    let bench = Bench::new().with(SchemaTool::new(tool, schema));
    let turns = bench.turns();
    let cases: [(&str, Value, &[&str]); 7] = [
        ("missing", json!({ "lines": 3 }), &[""]),
        ("wrong type", json!({ "path": 7 }), &["/path"]),
        (
            "below minimum",
            json!({ "path": "a", "lines": 0 }),
            &["/lines"],
        ),
        (
            "not in enum",
            json!({ "path": "a", "mode": "hex" }),
            &["/mode"],
        ),
        ("extra", json!({ "path": "a", "colour": "red" }), &[""]),
        (
            "several",
            json!({ "path": "", "lines": "x", "mode": 1 }),
            &["/path", "/lines", "/mode"],
        ),
        ("valid", json!({ "path": "a.txt", "lines": 2 }), &[]),
    ];
    let calls = cases
        .iter()
        .map(|(id, arguments, _)| call(id, "read_file", arguments.clone()))
        .collect();
    let run = bench.run(&turns, calls);
    for (entry, (case, _, paths)) in run.entries.iter().zip(&cases) {
        if paths.is_empty() {
            assert_eq!(entry.outcome, Outcome::Succeeded, "{case}");
            continue;
        }
        assert_eq!(entry.outcome, Outcome::Refused, "{case}");
        let text = entry.text();
        assert!(text.contains("do not fit its schema"), "{case}: {text}");
        let details = entry
            .result
            .details
            .as_ref()
            .map(Plain::to_json)
            .expect("refusal details");
        assert_eq!(details["refused"], "invalid_arguments", "{case}");
        let listed: Vec<&str> = details["errors"]
            .as_array()
            .expect("a list of errors")
            .iter()
            .filter_map(|error| error["path"].as_str())
            .collect();
        for path in *paths {
            assert!(listed.contains(path), "{case}: {path} in {listed:?}");
            let shown = if path.is_empty() {
                "at the arguments".to_owned()
            } else {
                format!("at `{path}`")
            };
            assert!(text.contains(&shown), "{case}: {shown} in {text}");
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the valid call ran");
    let health = bench.health("read_file");
    // The source hears of the refused calls too (the model misreads its
    // tool), as refusals.
    assert_eq!(
        (
            health.calls,
            health.succeeded,
            health.refused,
            health.strikes
        ),
        (7, 1, 6, 0)
    );
    bench.assert_nothing_left();
}

#[test]
fn an_unknown_tool_is_refused_with_the_nearest_names() {
    let bench = Bench::new()
        .with(answering("read_file"))
        .with(answering("write_file"));
    let turns = bench.turns();
    let run = bench.run(
        &turns,
        vec![
            call("typo", "reed_file", json!({})),
            call("nothing like it", "launch_rockets", json!({})),
            call("empty name", "", json!({})),
            call("fine", "read_file", json!({})),
        ],
    );
    let texts: Vec<String> = run.entries.iter().map(|entry| entry.text()).collect();
    for entry in &run.entries[..3] {
        assert_eq!(entry.outcome, Outcome::Refused, "{}", entry.call_id);
    }
    assert_eq!(
        texts[0],
        "no such tool `reed_file`; the nearest tool is `read_file`"
    );
    assert!(
        texts[1].starts_with("no such tool `launch_rockets`"),
        "{}",
        texts[1]
    );
    assert!(texts[2].starts_with("no such tool ``"), "{}", texts[2]);
    let details = run.entries[0]
        .result
        .details
        .as_ref()
        .map(Plain::to_json)
        .expect("refusal details");
    assert_eq!(details["refused"], "unknown_tool");
    assert_eq!(run.entries[3].outcome, Outcome::Succeeded);
    bench.assert_nothing_left();
}

#[test]
fn a_100_mib_argument_string_is_refused_with_a_bounded_echo_or_passed_whole() {
    let bounded = SchemaTool::new(
        answering("note"),
        json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 1_048_576 } },
        }),
    );
    let measure = TestTool::new("measure", |arguments: Value, _cx| async move {
        let length = arguments["text"].as_str().map_or(0, str::len);
        ToolOutput::text(format!("{length} bytes"))
    });
    let bench = Bench::new().with(bounded).with(measure);
    let turns = bench.turns();
    let huge = || json!({ "text": "x".repeat(HUGE) });
    let run = bench.run(
        &turns,
        vec![
            call("limited", "note", huge()),
            call("whole", "measure", huge()),
        ],
    );
    let refused = &run.entries[0];
    assert_eq!(refused.outcome, Outcome::Refused);
    let text = refused.text();
    assert!(
        text.contains("at `/text`"),
        "{}",
        &text[..text.len().min(500)]
    );
    assert!(
        text.len() < 16 * 1024,
        "the error echoes a bounded part of the arguments, not {} bytes",
        text.len()
    );
    assert_eq!(run.entries[1].outcome, Outcome::Succeeded);
    assert_eq!(run.entries[1].text(), format!("{HUGE} bytes"));
    bench.assert_nothing_left();
}

/// The environment variable that makes the deep-arguments test run its
/// body (in a child process of its own).
const DEEP_CHILD: &str = "RHO_SOAK_CATALOGUE_DEEP_CHILD";
/// How deep the arguments nest.
const DEEP: usize = 1_000_000;

/// The body of the deep-arguments row: a call whose arguments nest a
/// million objects deep must end with a clear error result.
fn deep_arguments_child() {
    let bench = Bench::new().with(answering("echo"));
    let turns = bench.turns();
    let arguments = nested_objects(DEEP);
    println!("deep: built {DEEP} levels");
    let run = bench.run(&turns, vec![call("deep", "echo", arguments)]);
    let entry = &run.entries[0];
    println!("deep: {} {}", entry.outcome, entry.text());
    assert_eq!(entry.outcome, Outcome::Refused, "{}", entry.text());
    // Whatever the events still hold of the arguments goes without
    // recursion.
    for event in run.events {
        if let Ok(TurnEvent::ToolExecutionStart(start)) = Arc::try_unwrap(event) {
            dismantle(start.arguments);
        }
    }
    bench.assert_nothing_left();
    println!("deep: refused, nothing left");
}

/// Runs in a child process, so that a stack overflow (which aborts the
/// process: no test harness can catch it) fails only this test, with the
/// child's own words.
#[test]
fn arguments_nested_a_million_levels_end_with_a_clear_error() {
    if std::env::var_os(DEEP_CHILD).is_some() {
        deep_arguments_child();
        return;
    }
    let name = "arguments_nested_a_million_levels_end_with_a_clear_error";
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env(DEEP_CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs again");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            break status;
        }
        if start.elapsed() > BOUND * 2 {
            let _ = child.kill();
            break child.wait().expect("the killed child's status");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().expect("the child's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success() && stdout.contains("deep: refused, nothing left"),
        "a call whose arguments nest {DEEP} levels deep must end with a clear error; the \
         process ended with {status} instead.\n--- its stdout:\n{}\n--- its stderr:\n{}",
        tail(&stdout),
        tail(&stderr),
    );
}

/// The last lines of a child's output.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

#[test]
fn an_image_with_empty_bytes_or_a_mime_type_that_is_not_an_image_fails_clearly() {
    let pictures = TestTool::new("pictures", |arguments: Value, _cx| async move {
        let png = || Image::new("image/png", vec![0x89, b'P', b'N', b'G']);
        match arguments["case"].as_str() {
            Some("empty") => ToolOutput::image(Image::new("image/png", Vec::new()), "empty"),
            Some("text") => ToolOutput::image(Image::new("text/plain", b"hi".to_vec()), "text"),
            Some("no subtype") => ToolOutput::image(Image::new("image/", b"x".to_vec()), "x"),
            Some("second") => ToolOutput::images(vec![png(), Image::new("", b"x".to_vec())], "2"),
            _ => ToolOutput::image(png(), "a fine picture"),
        }
    });
    let bench = Bench::new().with(pictures);
    let turns = bench.turns();
    let cases = [
        ("empty", "image 0 of the answer is invalid: it has no bytes"),
        (
            "text",
            "image 0 of the answer is invalid: its mime type `text/plain` is not an image type",
        ),
        (
            "no subtype",
            "image 0 of the answer is invalid: its mime type `image/` is not an image type",
        ),
        (
            "second",
            "image 1 of the answer is invalid: its mime type `` is not an image type",
        ),
        ("fine", ""),
    ];
    let calls = cases
        .iter()
        .map(|(case, _)| call(case, "pictures", json!({ "case": case })))
        .collect();
    let run = bench.run(&turns, calls);
    for (entry, (case, reason)) in run.entries.iter().zip(&cases) {
        if reason.is_empty() {
            assert_eq!(entry.outcome, Outcome::Succeeded, "{case}");
            assert_eq!(entry.result.image_count(), 1);
            continue;
        }
        assert_eq!(entry.outcome, Outcome::Failed, "{case}");
        assert_eq!(
            entry.text(),
            format!("tool `pictures` gave an unusable answer: {reason}"),
            "{case}"
        );
        assert_eq!(
            entry.result.image_count(),
            0,
            "{case}: no image reaches the model"
        );
    }
    let health = bench.health("pictures");
    assert_eq!((health.failed, health.crashed, health.succeeded), (4, 0, 1));
    bench.assert_nothing_left();
}

#[test]
fn details_of_100_mib_under_each_keep_details_policy() {
    let plain = TestTool::new("huge_plain", |_arguments, _cx| async move {
        ToolOutput::text("plain details").with_plain_details(Plain::Text("d".repeat(HUGE)))
    });
    let foreign = TestTool::new("huge_foreign", |_arguments, _cx| async move {
        ToolOutput::text("foreign details").with_details("d".repeat(HUGE))
    });
    let bench = Bench::new().with(plain).with(foreign);
    let policies = [
        ("None", KeepDetails::None),
        ("All", KeepDetails::All),
        ("MaxBytes", KeepDetails::MaxBytes(4096)),
        (
            "With",
            KeepDetails::with(|end| {
                end.details().map(|details| {
                    Plain::Text(format!("{} of {} bytes", details.kind(), details.size()))
                })
            }),
        ),
    ];
    for (name, policy) in policies {
        let turns = bench.turns().with_keep_details(policy);
        let run = bench.run(
            &turns,
            vec![
                call("plain", "huge_plain", json!({})),
                call("foreign", "huge_foreign", json!({})),
            ],
        );
        // Plain details pass whole to subscribers; the session keeps what
        // the policy says.
        let entry = &run.entries[0];
        assert_eq!(entry.outcome, Outcome::Succeeded, "{name}");
        let whole = run.end(0).details().and_then(Plain::as_str).map(str::len);
        assert_eq!(
            whole,
            Some(HUGE),
            "{name}: subscribers get the details whole"
        );
        let kept = entry.result.details.as_ref();
        match name {
            "None" => assert_eq!(kept, None),
            "All" => assert_eq!(kept.and_then(Plain::as_str).map(str::len), Some(HUGE)),
            "MaxBytes" => assert_eq!(
                kept.map(Plain::to_json),
                Some(json!({ "details_omitted": true, "bytes": HUGE + 2, "max_bytes": 4096 }))
            ),
            _ => assert_eq!(
                kept.and_then(Plain::as_str),
                Some(format!("text of {} bytes", HUGE + Limits::VALUE_COST).as_str()),
                "the host function's summary"
            ),
        }
        // Foreign details that large are not made plain data (the default
        // limits): a clear error, nothing kept.
        let entry = &run.entries[1];
        assert_eq!(entry.outcome, Outcome::Failed, "{name}");
        let text = entry.text();
        assert!(
            text.starts_with(
                "tool `huge_foreign` gave an unusable answer: the answer's details \
                              could not be made plain data:"
            ) && text.contains("exceeds the limit"),
            "{name}: {text}"
        );
        assert_eq!(entry.result.details, None, "{name}");
        assert_eq!(run.end(1).details(), None, "{name}");
    }
    bench.assert_nothing_left();
}

#[test]
fn two_calls_with_the_same_id_in_one_turn() {
    let tool = answering("echo");
    let runs = tool.runs();
    let bench = Bench::new().with(tool);
    let turns = bench.turns();
    let run = bench.run(
        &turns,
        vec![
            call("same", "echo", json!({})),
            call("other", "echo", json!({})),
            call("same", "echo", json!({})),
        ],
    );
    assert_eq!(run.entries[0].outcome, Outcome::Succeeded);
    assert_eq!(run.entries[1].outcome, Outcome::Succeeded);
    let duplicate = &run.entries[2];
    assert_eq!(duplicate.outcome, Outcome::Refused);
    assert_eq!(duplicate.call_id, "same");
    assert!(
        duplicate
            .text()
            .contains("its id `same` is the id of an earlier call of the same message (call 1"),
        "{}",
        duplicate.text()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the duplicate never ran");
    let health = bench.health("echo");
    assert_eq!((health.calls, health.succeeded, health.refused), (3, 2, 1));
    bench.assert_nothing_left();
}

#[test]
fn a_gate_that_never_answers_then_a_host_abort() {
    let gate_dropped = flag();
    let dropped = gate_dropped.clone();
    let gate = TestGate::new(move |_call| {
        let guard = SetOnDrop(dropped.clone());
        async move {
            let _guard = guard;
            std::future::pending::<Verdict>().await
        }
    });
    let bench = Bench::new().with(answering("deploy"));
    let turns = bench.turns_with(gate);
    let mut stream = turns.events().stream();
    let turn = turns.turn([call("d1", "deploy", json!({}))]);
    let abort = turn.abort_handle();
    let task = bench.runtime.spawn(turn);
    let mut events = Vec::new();
    bench.within(async {
        while let Some(event) = stream.recv().await {
            let waiting = event.name() == "tool_execution_awaiting_approval";
            events.push(event);
            if waiting {
                return;
            }
        }
        panic!("the stream ended before the gate waited");
    });
    // Long past any timeout: the gate's wait has no clock.
    std::thread::sleep(Duration::from_millis(200));
    let pressed = Instant::now();
    std::thread::spawn(move || abort.abort())
        .join()
        .expect("the aborting thread");
    let entries = bench.within(task).expect("the turn's task");
    assert!(pressed.elapsed() < Duration::from_secs(10));
    events.extend(support::drain(&mut stream));
    support::assert_complete(&["d1".to_owned()], &entries, &events);
    let entry = &entries[0];
    assert_eq!(entry.outcome, Outcome::Aborted);
    assert_eq!(entry.text(), "tool `deploy` was aborted by the host");
    assert_eq!(entry.ran, None, "the tool never ran");
    assert!(
        !events
            .iter()
            .any(|event| event.name() == "tool_execution_running"),
        "no clock ever ran"
    );
    let health = bench.health("deploy");
    assert_eq!((health.calls, health.aborted, health.strikes), (1, 1, 0));
    bench.assert_nothing_left();
    assert!(
        gate_dropped.load(Ordering::SeqCst),
        "the gate's future was dropped"
    );
}

#[test]
fn a_tool_that_reports_after_being_killed_is_ignored() {
    let (release, released) = mpsc::channel::<()>();
    let released = Arc::new(Mutex::new(Some(released)));
    let (late_tx, late_rx) = mpsc::channel::<Result<(), PlainError>>();
    let future_dropped = flag();
    let dropped = future_dropped.clone();
    let stubborn = TestTool::new("stubborn", move |_arguments, cx: ToolContext| {
        // A thread the kill cannot reach: it waits, then reports.
        let reporter = cx.clone();
        let released = released
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let late_tx = late_tx.clone();
        std::thread::spawn(move || {
            if let Some(released) = released {
                let _ = released.recv();
            }
            let _ = late_tx.send(reporter.update(&json!({ "late": "but here is my answer" })));
        });
        let guard = SetOnDrop(dropped.clone());
        async move {
            let _guard = guard;
            cx.sleep(Duration::from_secs(3600)).await;
            ToolOutput::text("finished after an hour")
        }
    })
    .with_timeout(Duration::from_millis(100));
    let bench = Bench::new().with(stubborn);
    let turns = bench.turns();
    let mut stream = turns.events().stream();
    let entries = bench.within(turns.turn([call("s1", "stubborn", json!({}))]));
    let timeout = timeout_text("stubborn", Duration::from_millis(100));
    assert_eq!(entries[0].outcome, Outcome::TimedOut);
    assert_eq!(entries[0].text(), timeout);
    // The task is gone (its future dropped) while the thread still runs.
    bench.assert_nothing_left();
    assert!(future_dropped.load(Ordering::SeqCst));
    release.send(()).expect("the thread waits");
    let late = late_rx.recv_timeout(BOUND).expect("the thread reported");
    assert_eq!(
        late,
        Ok(()),
        "a late update is accepted and dropped, not an error"
    );
    std::thread::sleep(Duration::from_millis(100));
    let events = support::drain(&mut stream);
    support::assert_complete(&["s1".to_owned()], &entries, &events);
    assert!(
        !events
            .iter()
            .any(|event| event.name() == "tool_execution_update"),
        "the late update never reached a subscriber"
    );
    let end = events
        .iter()
        .find_map(|event| match event.as_ref() {
            TurnEvent::ToolExecutionEnd(end) => Some(end),
            _ => None,
        })
        .expect("an end event");
    assert_eq!(end.outcome(), Outcome::TimedOut);
    assert_eq!(end.result().text(), timeout, "the result is unchanged");
    let health = bench.health("stubborn");
    assert_eq!((health.calls, health.timed_out), (1, 1));
}

#[test]
fn a_subscriber_dropped_mid_turn_changes_nothing_for_the_others() {
    const CALLS: usize = 16;
    const UPDATES: usize = 40;
    let dropped_latch = Latch::new();
    let latch = dropped_latch.clone();
    let chatty = TestTool::new("chatty", move |_arguments, cx: ToolContext| {
        let latch = latch.clone();
        async move {
            for step in 0..UPDATES {
                cx.update(&json!({ "step": step }))
                    .expect("plain progress is accepted");
                cx.sleep(Duration::from_millis(1)).await;
            }
            // Answers only once the other subscriber is gone: the drop
            // happens while every call is still in flight.
            latch.wait().await;
            ToolOutput::text("done")
        }
    });
    let bench = Bench::new().with(chatty);
    let bus = support::bus(CALLS * UPDATES * 2);
    let turns = bench.turns().with_events(bus.clone());
    let mut leaving = bus.stream();
    let mut staying = bus.stream();
    let took_before_leaving = Arc::new(AtomicBool::new(false));
    let took = took_before_leaving.clone();
    let reader = bench.runtime.spawn(async move {
        for _ in 0..25 {
            if leaving.recv().await.is_none() {
                return;
            }
        }
        took.store(true, Ordering::SeqCst);
        drop(leaving);
        dropped_latch.open();
    });
    let calls = (0..CALLS)
        .map(|index| call(&format!("c{index}"), "chatty", json!({})))
        .collect::<Vec<_>>();
    let ids: Vec<String> = calls.iter().map(|call| call.id.clone()).collect();
    let entries = bench.within(turns.turn(calls));
    bench.within(reader).expect("the reader's task");
    assert!(took_before_leaving.load(Ordering::SeqCst));
    assert_eq!(bus.subscriber_count(), 1, "the dropped stream unsubscribed");
    let events = support::drain(&mut staying);
    support::assert_complete(&ids, &entries, &events);
    assert_eq!(staying.lagged(), 0);
    for (index, entry) in entries.iter().enumerate() {
        assert_eq!(entry.outcome, Outcome::Succeeded);
        let updates = events
            .iter()
            .filter(|event| event.index() == index && event.name() == "tool_execution_update")
            .count();
        assert_eq!(
            updates, UPDATES,
            "call {index}: every update reached the other"
        );
        let running = events
            .iter()
            .filter(|event| event.index() == index && event.name() == "tool_execution_running")
            .count();
        assert_eq!(running, 1, "call {index}");
    }
    bench.assert_nothing_left();
}
