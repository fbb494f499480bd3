//! Asking a client on MCP 2026-07-28 (input-required results, SEP-2322),
//! checked with raw HTTP requests as such a client sends them: a gate's
//! approval and a tool's questions go out in the answer to the client's
//! request, the call waits on the server for the retry, the tool runs
//! once, the clock starts at the approval, a request state is good for one
//! retry of its own call, a call nobody answers ends at the server's
//! input deadline, and a tool that requires what the client did not
//! declare ends its request with MCP's missing-capability error.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::rmcp::model::ClientCapabilities;
use rho_mcp::{ElicitationApprover, HttpOptions, HttpServer, McpClient, McpServer, Questions};
use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};
use rho_tool_core::annotation_gate::Match;
use rho_tool_core::{
    AnnotationGate, Outcome, Runner, Tool, ToolContext, ToolOutput, Verdict, async_trait,
};
use serde_json::{Value, json};

mod support;

use support::stateless::{DropFlag, Seen, StatelessClient, approval, form};

/// `guarded`: needs the user's approval, then takes 100 ms of its 300 ms
/// timeout. `two_questions`: asks a name, then a colour. `needs_a_person`:
/// requires that the client takes elicitation ([`McpClient::require`]).
enum Fixture {
    Guarded(Arc<Seen>),
    TwoQuestions(Arc<Seen>),
    NeedsAPerson(Arc<Seen>),
}

#[async_trait]
impl Tool for Fixture {
    fn name(&self) -> &str {
        match self {
            Fixture::Guarded(_) => "guarded",
            Fixture::TwoQuestions(_) => "two_questions",
            Fixture::NeedsAPerson(_) => "needs_a_person",
        }
    }
    fn description(&self) -> &str {
        "a test tool"
    }
    fn timeout(&self) -> Duration {
        Duration::from_millis(300)
    }
    async fn run(&self, _arguments: Value, context: ToolContext) -> ToolOutput {
        match self {
            Fixture::Guarded(seen) => {
                seen.runs.fetch_add(1, Ordering::SeqCst);
                context.sleep(Duration::from_millis(100)).await;
                ToolOutput::text("guarded ran")
            }
            Fixture::TwoQuestions(seen) => {
                seen.runs.fetch_add(1, Ordering::SeqCst);
                let _flag = DropFlag(seen.clone());
                let client = McpClient::of(&context).expect("served over MCP");
                let mut said = Vec::new();
                for (key, message, field) in [
                    ("name", "Your name?", "name"),
                    ("colour", "Your colour?", "colour"),
                ] {
                    let answers = match client
                        .ask(Questions::new().elicit(key, form(message, field)))
                        .await
                    {
                        Ok(answers) => answers,
                        Err(error) => return ToolOutput::error(error.to_string()),
                    };
                    let answer = answers
                        .elicit(key)
                        .and_then(|answer| answer.content.as_ref())
                        .and_then(|content| content.get(field))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    said.push(answer);
                }
                ToolOutput::text(said.join(" likes "))
            }
            Fixture::NeedsAPerson(seen) => {
                seen.runs.fetch_add(1, Ordering::SeqCst);
                let _flag = DropFlag(seen.clone());
                let client = McpClient::of(&context).expect("served over MCP");
                let elicitation = ClientCapabilities::builder().enable_elicitation().build();
                match client.require(elicitation).await {
                    Ok(()) => ToolOutput::text("the client has a person to ask"),
                    // Its request has ended and the call is being
                    // stopped: this answer reaches nobody.
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
        }
    }
}

/// A server of the fixtures whose gate asks before `guarded`, through
/// the client (the host's own approver would say no).
async fn serve(seen: &Arc<Seen>, input_deadline: Duration) -> HttpServer {
    serve_counted(seen, input_deadline).await.0
}

/// [`serve`], with the accounting of the fixtures' source, which
/// quarantines a tool at its first counted failure.
async fn serve_counted(
    seen: &Arc<Seen>,
    input_deadline: Duration,
) -> (HttpServer, Arc<Accounting>) {
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    let source = registry
        .add_source(Source::trusted("test").with_policy(accounting.clone()))
        .expect("a source");
    source
        .add(Arc::new(Fixture::Guarded(seen.clone())))
        .expect("a name");
    source
        .add(Arc::new(Fixture::TwoQuestions(seen.clone())))
        .expect("a name");
    source
        .add(Arc::new(Fixture::NeedsAPerson(seen.clone())))
        .expect("a name");
    let asks = ElicitationApprover::new(|_request| async { Verdict::deny("the host says no") });
    let runner = Runner::new(TokioExecutor::current().expect("a tokio runtime"))
        .with_gate(Arc::new(
            AnnotationGate::new()
                .ask(Match::tool("guarded"))
                .otherwise(Verdict::Allow),
        ))
        .with_approver(Arc::new(asks.clone()));
    let server = McpServer::new(runner, registry)
        .with_elicitation(asks)
        .with_input_deadline(input_deadline)
        .serve_http(HttpOptions::new())
        .await
        .expect("serves on loopback");
    (server, accounting)
}

/// The one question of an input-required `result`: its key and request.
fn only_question(result: &Value) -> (String, Value) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{result}");
    let (key, request) = requests.iter().next().expect("one");
    (key.clone(), request.clone())
}

fn state(result: &Value) -> String {
    result["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned()
}

fn accept(key: &str, content: Value) -> Value {
    json!({ key: { "action": "accept", "content": content } })
}

/// The gate's question goes to a 2026 client as an input-required
/// elicitation; the retry with the answer lets the call run, once; the
/// answer came after longer than the tool's timeout, which did not run
/// meanwhile (the clock starts at approval).
#[tokio::test]
async fn a_gates_approval_goes_out_as_input_required_and_the_clock_starts_at_the_answer() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen, Duration::from_secs(60)).await;
    let client = StatelessClient::new(server.url());

    let asked = client.call("guarded", json!({}), json!({})).await;
    let (_, request) = only_question(&asked);
    assert_eq!(request["method"], "elicitation/create");
    assert!(
        request["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("guarded")),
        "{request}"
    );
    assert_eq!(seen.runs.load(Ordering::SeqCst), 0, "ran before approval");

    // The person takes longer than the tool's whole timeout.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let done = client.call("guarded", json!({}), approval(&asked)).await;
    assert_eq!(done["content"][0]["text"], "guarded ran", "{done}");
    assert_eq!(done["isError"], json!(false), "{done}");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
    server.shutdown().await.expect("shuts down");
}

/// A declined approval denies the call; the tool never runs.
#[tokio::test]
async fn a_declined_approval_denies_the_call() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen, Duration::from_secs(60)).await;
    let client = StatelessClient::new(server.url());
    let asked = client.call("guarded", json!({}), json!({})).await;
    let (key, _) = only_question(&asked);
    let denied = client
        .call(
            "guarded",
            json!({}),
            json!({ "inputResponses": { key: { "action": "decline" } }, "requestState": state(&asked) }),
        )
        .await;
    assert_eq!(denied["isError"], json!(true), "{denied}");
    assert!(
        denied["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("declined")),
        "{denied}"
    );
    assert_eq!(seen.runs.load(Ordering::SeqCst), 0);
    server.shutdown().await.expect("shuts down");
}

/// A request state resumes its own call once: used again, changed, or
/// sent with other arguments, it is refused with -32602 and the call
/// waits on; the tool runs once over both rounds.
#[tokio::test]
async fn a_request_state_resumes_its_own_call_once() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen, Duration::from_secs(60)).await;
    let client = StatelessClient::new(server.url());
    let arguments = json!({ "n": 1 });

    let first = client
        .call("two_questions", arguments.clone(), json!({}))
        .await;
    let (key, _) = only_question(&first);
    assert_eq!(key, "name");
    let second = client
        .call(
            "two_questions",
            arguments.clone(),
            json!({ "inputResponses": accept("name", json!({ "name": "Ada" })), "requestState": state(&first) }),
        )
        .await;
    let (key, _) = only_question(&second);
    assert_eq!(key, "colour");
    assert_ne!(state(&first), state(&second));

    let invalid = |answer: &Value| answer["error"]["code"] == json!(-32602);
    // The first state again: used.
    let replayed = client
        .call(
            "two_questions",
            arguments.clone(),
            json!({ "inputResponses": accept("name", json!({ "name": "Eve" })), "requestState": state(&first) }),
        )
        .await;
    assert!(invalid(&replayed), "{replayed}");
    // The second, changed.
    let changed = client
        .call(
            "two_questions",
            arguments.clone(),
            json!({ "inputResponses": accept("colour", json!({ "colour": "red" })), "requestState": format!("{}0", state(&second)) }),
        )
        .await;
    assert!(invalid(&changed), "{changed}");
    // The second, for other arguments.
    let other = client
        .call(
            "two_questions",
            json!({ "n": 2 }),
            json!({ "inputResponses": accept("colour", json!({ "colour": "red" })), "requestState": state(&second) }),
        )
        .await;
    assert!(invalid(&other), "{other}");

    let done = client
        .call(
            "two_questions",
            arguments,
            json!({ "inputResponses": accept("colour", json!({ "colour": "green" })), "requestState": state(&second) }),
        )
        .await;
    assert_eq!(done["content"][0]["text"], "Ada likes green", "{done}");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
    server.shutdown().await.expect("shuts down");
}

/// An answer that is not the result its question calls for is asked for
/// again, under a fresh state.
#[tokio::test]
async fn an_answer_of_the_wrong_shape_is_asked_for_again() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen, Duration::from_secs(60)).await;
    let client = StatelessClient::new(server.url());
    let first = client.call("two_questions", json!({}), json!({})).await;
    let again = client
        .call(
            "two_questions",
            json!({}),
            json!({ "inputResponses": { "name": 12345 }, "requestState": state(&first) }),
        )
        .await;
    let (key, _) = only_question(&again);
    assert_eq!(key, "name");
    assert_ne!(state(&first), state(&again));
    server.shutdown().await.expect("shuts down");
}

/// A call whose client never comes back is ended at the input deadline
/// (its tool stopped), and its state then resumes nothing.
#[tokio::test]
async fn a_call_nobody_answers_ends_at_the_input_deadline() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen, Duration::from_millis(200)).await;
    let client = StatelessClient::new(server.url());
    let asked = client.call("two_questions", json!({}), json!({})).await;
    only_question(&asked);
    assert!(!seen.dropped.load(Ordering::SeqCst));
    let began = Instant::now();
    while !seen.dropped.load(Ordering::SeqCst) {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the waiting call was never stopped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let late = client
        .call(
            "two_questions",
            json!({}),
            json!({ "inputResponses": accept("name", json!({ "name": "Ada" })), "requestState": state(&asked) }),
        )
        .await;
    assert_eq!(late["error"]["code"], json!(-32602), "{late}");
    server.shutdown().await.expect("shuts down");
}

/// Property: an approval nobody gives ends its call at the host's input
/// deadline, aborted, which counts against no tool: three such calls of
/// `guarded` (whose source quarantines a tool at its first counted
/// failure) leave it enabled with no crash or timeout counted and never
/// ran it, and a fourth call, approved, runs.
#[tokio::test]
async fn approvals_nobody_gives_end_at_the_input_deadline_and_count_against_no_tool() {
    let seen = Arc::new(Seen::default());
    let (server, accounting) = serve_counted(&seen, Duration::from_millis(200)).await;
    let client = StatelessClient::new(server.url());
    for _ in 0..3 {
        let asked = client.call("guarded", json!({}), json!({})).await;
        only_question(&asked);
    }
    let aborted = || {
        accounting
            .tool_health("guarded")
            .map_or(0, |health| health.count(Outcome::Aborted))
    };
    let began = Instant::now();
    while aborted() < 3 {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the unanswered calls were not ended: {:?}",
            accounting.tool_health("guarded")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let health = accounting.tool_health("guarded").expect("counted");
    assert_eq!(health.count(Outcome::Crashed), 0, "{health:?}");
    assert_eq!(health.count(Outcome::TimedOut), 0, "{health:?}");
    assert_eq!(health.strikes, 0, "{health:?}");
    assert!(!health.is_quarantined(), "{health:?}");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 0, "ran unapproved");

    let asked = client.call("guarded", json!({}), json!({})).await;
    only_question(&asked);
    let done = client.call("guarded", json!({}), approval(&asked)).await;
    assert_eq!(done["content"][0]["text"], "guarded ran", "{done}");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
    server.shutdown().await.expect("shuts down");
}

/// A tool that requires what its client did not declare ends its request
/// with MCP's missing-capability error naming it (and its call is
/// stopped); a client that declared it gets the tool's answer.
#[tokio::test]
async fn a_tool_that_requires_an_undeclared_capability_ends_its_request_with_32021() {
    let seen = Arc::new(Seen::default());
    let server = serve(&seen, Duration::from_secs(5)).await;
    let without = StatelessClient::new(server.url()).declaring(json!({}));
    let refused = without.call("needs_a_person", json!({}), json!({})).await;
    assert_eq!(refused["error"]["code"], json!(-32021), "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({ "elicitation": {} }),
        "{refused}"
    );
    let began = Instant::now();
    while !seen.dropped.load(Ordering::SeqCst) {
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "the refused call was never stopped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let with = StatelessClient::new(server.url()).declaring(json!({ "elicitation": {} }));
    let answered = with.call("needs_a_person", json!({}), json!({})).await;
    assert_eq!(
        answered["content"][0]["text"], "the client has a person to ask",
        "{answered}"
    );
    assert_eq!(seen.runs.load(Ordering::SeqCst), 2);
    server.shutdown().await.expect("shuts down");
}
