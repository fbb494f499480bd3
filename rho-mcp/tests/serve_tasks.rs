//! Long calls as MCP tasks (the tasks extension, SEP-2663), checked with
//! raw 2026-07-28 HTTP requests: a call that outlasts the server's `after`
//! becomes a task whose status and result `tasks/get` tells, one that ends
//! sooner is answered as usual, a task's questions wait for `tasks/update`
//! (the tool's clock held) until the server's input deadline,
//! `tasks/cancel` stops the tool itself, and a
//! client that takes no tasks gets plain answers or, for a tool served
//! only as a task, MCP's missing-capability error.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

mod support;

use support::stateless::{Seen, StatelessClient};
use support::tasks::{
    check_a_long_call_becomes_a_task, serve, serve_with_input_deadline, task_id, task_when, tasking,
};

/// A call that outlasts `after` becomes a task: working, then completed
/// with the tool's result inlined; the tool ran once. A short call is
/// answered at once, without a task; an unknown task id is -32602.
#[tokio::test]
async fn a_long_call_becomes_a_task_and_a_short_one_is_answered() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen).await;
    let client = tasking(server.url());

    check_a_long_call_becomes_a_task(&client, 500).await;
    assert_eq!(seen.runs.load(Ordering::SeqCst), 2);

    let unknown = client
        .request("tasks/get", json!({ "taskId": "nope" }))
        .await;
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
    server.shutdown().await.expect("shuts down");
}

/// `tasks/cancel` aborts the rho call: the tool's future is dropped and
/// it ticks no more; the task is cancelled, and cancelling it again is
/// the same empty answer.
#[tokio::test]
async fn tasks_cancel_stops_the_tool_itself() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen).await;
    let client = tasking(server.url());
    let id = task_id(&client.call("ticking", json!({}), json!({})).await);

    let ack = client
        .request("tasks/cancel", json!({ "taskId": id }))
        .await;
    assert!(ack.get("error").is_none(), "{ack}");
    let cancelled = task_when(&client, &id, "cancelled").await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(seen.dropped.load(Ordering::SeqCst), "the tool still runs");
    let ticks = seen.ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        seen.ticks.load(Ordering::SeqCst),
        ticks,
        "the tool ticks on"
    );

    let again = client
        .request("tasks/cancel", json!({ "taskId": id }))
        .await;
    assert!(again.get("error").is_none(), "{again}");
    server.shutdown().await.expect("shuts down");
}

/// A task's questions show on `tasks/get` until `tasks/update` answers
/// them, one at a time if the client likes; the answers reach the tool,
/// whose 300 ms timeout did not run while the questions waited 600 ms.
#[tokio::test]
async fn a_tasks_questions_wait_for_tasks_update_with_the_clock_held() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen).await;
    let client = tasking(server.url());
    let id = task_id(&client.call("asking", json!({}), json!({})).await);

    let asking = task_when(&client, &id, "input_required").await;
    let mut keys: Vec<_> = asking["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    keys.sort();
    assert_eq!(keys, ["colour", "name"], "{asking}");

    tokio::time::sleep(Duration::from_millis(600)).await;
    let answer =
        |key: &str, value: &str| json!({ key: { "action": "accept", "content": { key: value } } });
    client
        .request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": answer("name", "Ada") }),
        )
        .await;
    let half = client.request("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(half["status"], "input_required", "{half}");
    let left: Vec<_> = half["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    assert_eq!(left, ["colour"], "{half}");

    client
        .request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": answer("colour", "green") }),
        )
        .await;
    let done = task_when(&client, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Ada likes green",
        "{done}"
    );
    assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
    server.shutdown().await.expect("shuts down");
}

/// Property: a task whose questions nobody answers ends at the server's
/// input deadline: failed, saying so, its tool stopped; an answer that
/// comes after finds nothing to resume.
#[tokio::test]
async fn a_task_nobody_answers_fails_at_the_input_deadline() {
    let seen = Arc::new(Seen::default());
    let server = serve_with_input_deadline(&seen, Duration::from_millis(300)).await;
    let client = tasking(server.url());
    let id = task_id(&client.call("asking", json!({}), json!({})).await);
    let asking = task_when(&client, &id, "input_required").await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let failed = task_when(&client, &id, "failed").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|text| text.contains("input deadline")),
        "{failed}"
    );
    assert!(seen.dropped.load(Ordering::SeqCst), "the tool still runs");
    let late = json!({ "name": { "action": "accept", "content": { "name": "Ada" } } });
    client
        .request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": late }),
        )
        .await;
    let after = client.request("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(after["status"], "failed", "{after}");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
    server.shutdown().await.expect("shuts down");
}

/// A tool that crashes in a task makes it failed, with an error object
/// and no result.
#[tokio::test]
async fn a_crash_fails_the_task() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen).await;
    let client = tasking(server.url());
    let id = task_id(&client.call("crashing", json!({}), json!({})).await);
    let failed = task_when(&client, &id, "failed").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|text| text.contains("crashed")),
        "{failed}"
    );
    assert!(failed.get("result").is_none(), "{failed}");
    server.shutdown().await.expect("shuts down");
}

/// A client that takes no tasks waits for its answer as before; a tool
/// served only as a task is refused to it with -32021 naming the tasks
/// extension, before it runs.
#[tokio::test]
async fn a_client_without_tasks_gets_plain_answers_or_a_missing_capability() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen).await;
    let client = StatelessClient::new(server.url());
    let plain = client.call("work", json!({ "ms": 300 }), json!({})).await;
    assert_eq!(plain["content"][0]["text"], "worked 300 ms", "{plain}");

    let refused = client.call("only_task", json!({}), json!({})).await;
    assert_eq!(refused["error"]["code"], json!(-32021), "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some(),
        "{refused}"
    );
    server.shutdown().await.expect("shuts down");
}
