//! Keep-details and the output cap: what the session and the model get,
//! while subscribers get everything whole.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{AllowAll, Outcome, ToolContext, ToolOutput};
use rho_turn::{KeepDetails, OutputCap, SessionEntry, TurnEvent, json_size};
use serde_json::{Value, json};
use support::{Recorder, Tools, call, executor, runtime, tool};

/// A tool whose details are a list of `rows` numbers, and one without.
fn tools() -> Tools {
    let table = tool("table", |args, _cx: ToolContext| async move {
        let rows = args["rows"].as_u64().unwrap_or(0);
        let list: Vec<u64> = (0..rows).collect();
        ToolOutput::text(format!("{rows} rows")).with_details(json!({ "rows": list }))
    });
    let plain = tool("plain", |_args, _cx: ToolContext| async move {
        ToolOutput::text("no details")
    });
    Tools::new().add(table).add(plain)
}

fn details_of(rows: u64) -> Value {
    json!({ "rows": (0..rows).collect::<Vec<u64>>() })
}

/// Runs one turn (a small table, a big one, an error, no details) under
/// `keep`; returns the session entries and the ends subscribers saw.
fn run(keep: KeepDetails) -> (Vec<SessionEntry>, Vec<rho_turn::ExecutionEnd>) {
    let runtime = runtime();
    let tools = tools();
    let turns = tools
        .turns(executor(&runtime), Arc::new(AllowAll))
        .with_keep_details(keep);
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let entries = runtime.block_on(turns.turn([
        call("small", "table", json!({ "rows": 3 })),
        call("big", "table", json!({ "rows": 1000 })),
        call("unknown", "tabel", json!({})),
        call("none", "plain", json!({})),
    ]));
    assert!(subscription.wait_idle(Duration::from_secs(10)));
    let mut ends = recorder.ends();
    ends.sort_by_key(|end| end.index);
    // Subscribers always get the details whole, whatever the policy.
    assert_eq!(ends[0].details().map(Plain::to_json), Some(details_of(3)));
    assert_eq!(
        ends[1].details().map(Plain::to_json),
        Some(details_of(1000))
    );
    assert_eq!(
        ends[2]
            .details()
            .map(Plain::to_json)
            .expect("refusal details")["refused"],
        "unknown_tool"
    );
    assert_eq!(ends[3].details(), None);
    // The model reads the same text under every policy.
    assert_eq!(entries[0].text(), "3 rows");
    assert_eq!(entries[1].text(), "1000 rows");
    assert_eq!(entries[2].outcome, Outcome::Refused);
    (entries, ends)
}

fn kept(entry: &SessionEntry) -> Option<Value> {
    entry.result.details.as_ref().map(Plain::to_json)
}

#[test]
fn keep_all_keeps_every_detail() {
    let (entries, ends) = run(KeepDetails::All);
    for (entry, end) in entries.iter().zip(&ends) {
        assert_eq!(entry.result.details.as_ref(), end.details());
    }
}

#[test]
fn keep_none_keeps_no_detail() {
    let (entries, _) = run(KeepDetails::None);
    assert!(entries.iter().all(|entry| entry.result.details.is_none()));
}

#[test]
fn keep_at_most_n_bytes_marks_what_it_left_out() {
    let max = 200;
    let (entries, ends) = run(KeepDetails::MaxBytes(max));
    assert_eq!(kept(&entries[0]), Some(details_of(3)));
    let big = json_size(ends[1].details().expect("details"));
    assert_eq!(
        big,
        serde_json::to_string(&details_of(1000))
            .expect("JSON")
            .len()
    );
    assert_eq!(
        kept(&entries[1]),
        Some(json!({ "details_omitted": true, "bytes": big, "max_bytes": max }))
    );
    assert_eq!(kept(&entries[2]).expect("kept")["refused"], "unknown_tool");
    assert_eq!(kept(&entries[3]), None);
}

#[test]
fn a_host_function_decides_what_is_kept() {
    let keep = KeepDetails::with(|end| match end.tool() {
        // Keep only how many rows there were.
        "table" => {
            let rows = end.details()?.get("rows")?.as_list()?.len();
            Some(Plain::from(json!({ "row_count": rows })))
        }
        _ => None,
    });
    let (entries, _) = run(keep);
    assert_eq!(kept(&entries[0]), Some(json!({ "row_count": 3 })));
    assert_eq!(kept(&entries[1]), Some(json!({ "row_count": 1000 })));
    assert_eq!(kept(&entries[2]), None);
    assert_eq!(kept(&entries[3]), None);
}

#[test]
fn a_panicking_host_function_leaves_a_marker() {
    rho_tool_core::untrusted::install_quiet_panic_hook();
    let (entries, _) = run(KeepDetails::with(|_end| panic!("policy bug")));
    let marker = kept(&entries[0]).expect("a marker");
    assert_eq!(marker["details_omitted"], true);
    assert!(
        marker["reason"]
            .as_str()
            .expect("a reason")
            .contains("policy bug")
    );
}

#[test]
fn the_output_cap_keeps_head_and_tail_for_the_model_and_everything_for_subscribers() {
    let runtime = runtime();
    // 30,000 bytes of text with multi-byte characters, a head and a tail.
    let long = tool("long", |_args, _cx: ToolContext| async move {
        let body = "é€😀".repeat(3333);
        ToolOutput::text(format!("HEAD{body}TAIL"))
    });
    let short = tool("short", |_args, _cx: ToolContext| async move {
        ToolOutput::text("brief")
    });
    let exempt = tool("exempt", |_args, _cx: ToolContext| async move {
        ToolOutput::text("x".repeat(5000))
    });
    let tools = Tools::new().add(long).add(short).add(exempt);
    let turns = tools
        .turns(executor(&runtime), Arc::new(AllowAll))
        .with_output_cap(OutputCap::bytes(1000))
        .with_tool_output_cap("exempt", None);
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let entries = runtime.block_on(turns.turn([
        call("1", "long", json!({})),
        call("2", "short", json!({})),
        call("3", "exempt", json!({})),
    ]));
    assert!(subscription.wait_idle(Duration::from_secs(10)));

    let full_len = 4 + 9 * 3333 + 4;
    let text = entries[0].text();
    assert!(text.starts_with("HEAD") && text.ends_with("TAIL"), "{text}");
    let cut = entries[0].cut_bytes;
    assert!(cut >= full_len - 1000, "{cut}");
    assert!(
        text.contains(&format!("[… {cut} of {full_len} bytes cut …]")),
        "{text}"
    );
    assert!(text.len() < 1100);
    assert_eq!(entries[1].text(), "brief");
    assert_eq!(entries[1].cut_bytes, 0);
    assert_eq!(entries[2].text().len(), 5000);

    let ends = recorder.ends();
    let long_end = ends
        .iter()
        .find(|end| end.call_id() == "1")
        .expect("an end");
    assert_eq!(long_end.result().text().len(), full_len);
    let names: Vec<&str> = recorder.all().iter().map(TurnEvent::name).collect();
    assert_eq!(
        names.iter().filter(|n| **n == "tool_execution_end").count(),
        3
    );
}
