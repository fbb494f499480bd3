//! The annotation gate on real calls on a real multi-thread tokio runtime:
//! who is asked, what waits, what the model reads, that a panicking
//! approver ends only its own call, and what a remembered allowance
//! answers in the approver's place.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_tool_core::annotation_gate::{Match, Rule};
use rho_tool_core::untrusted::{install_quiet_panic_hook, restore_panic_hook};
use rho_tool_core::{
    AnnotationGate, ApprovalRequest, Approver, CallEvent, Outcome, Runner, Tool, ToolAnnotations,
    ToolCall, ToolContext, ToolOutput, Verdict, async_trait,
};

/// A tool with the annotations, trust and timeout it is given, counting
/// its runs.
struct Probe {
    name: &'static str,
    annotations: ToolAnnotations,
    untrusted: bool,
    timeout: Duration,
    runs: Arc<AtomicUsize>,
}

impl Probe {
    fn new(name: &'static str, annotations: ToolAnnotations) -> Self {
        Self {
            name,
            annotations,
            untrusted: false,
            timeout: Duration::from_secs(30),
            runs: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }

    fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        "Answers with its name."
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn is_untrusted(&self) -> bool {
        self.untrusted
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations.clone()
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text(format!("{} ran", self.name))
    }
}

/// An approver that counts its requests, keeps the last one, waits
/// `delay` on the runtime's timer, then gives `verdict`.
#[derive(Clone)]
struct Person {
    asked: Arc<AtomicUsize>,
    last: Arc<Mutex<Option<ApprovalRequest>>>,
    delay: Duration,
    verdict: Verdict,
}

impl Person {
    fn answering(verdict: Verdict) -> Self {
        Self {
            asked: Arc::new(AtomicUsize::new(0)),
            last: Arc::new(Mutex::new(None)),
            delay: Duration::ZERO,
            verdict,
        }
    }

    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }

    fn last(&self) -> ApprovalRequest {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .expect("the person was asked")
    }
}

/// A struct of the host's own is an approver too, beside the closures.
#[async_trait]
impl Approver for Person {
    async fn approve(&self, request: ApprovalRequest) -> Verdict {
        self.asked.fetch_add(1, Ordering::SeqCst);
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(request);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.verdict.clone()
    }
}

fn gated(gate: AnnotationGate) -> Runner<TokioExecutor> {
    Runner::new(TokioExecutor::current().expect("a runtime with a timer")).with_gate(Arc::new(gate))
}

/// A runner with `gate`, whose asks go to `approver`.
fn approved(gate: AnnotationGate, approver: impl Approver + 'static) -> Runner<TokioExecutor> {
    gated(gate).with_approver(Arc::new(approver))
}

fn call(id: &str, tool: &str) -> ToolCall {
    ToolCall::new(id, tool, serde_json::json!({ "path": "/tmp/x" }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_trusted_tool_runs_without_the_approver_being_asked() {
    let person = Person::answering(Verdict::deny("would have said no"));
    let runner = approved(AnnotationGate::new(), person.clone());
    let tool = Probe::new("read_file", ToolAnnotations::new().read_only());
    let runs = tool.runs.clone();

    let end = runner.start(call("1", "read_file"), Arc::new(tool)).await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(end.result.text(), "read_file ran");
    assert_eq!(person.asked(), 0, "a read-only tool is never asked about");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_tool_waits_for_the_approver_and_no_clock_runs_meanwhile() {
    // The person takes four times the tool's timeout, then allows it.
    let timeout = Duration::from_millis(100);
    let person = Person::answering(Verdict::Allow).after(timeout * 4);
    let runner = approved(AnnotationGate::new(), person.clone());
    let tool = Probe::new("delete_file", ToolAnnotations::new().destructive(true)).timeout(timeout);
    let runs = tool.runs.clone();

    let mut handle = runner.start(call("2", "delete_file"), Arc::new(tool));
    let mut awaited_gate = false;
    let end = loop {
        match handle.next_event().await.expect("an end") {
            CallEvent::AwaitingApproval(waiting) => {
                assert_eq!(waiting.call_id, "2");
                assert_eq!(runs.load(Ordering::SeqCst), 0, "not run before approval");
                awaited_gate = true;
            }
            CallEvent::Ended(end) => break end,
            CallEvent::Queued(_) | CallEvent::Running(_) | CallEvent::Update(_) => {}
        }
    };
    assert!(awaited_gate, "the loop is told the gate is waiting");
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), "delete_file ran");
    assert!(
        end.waited >= timeout * 4,
        "the wait for the person ({:?}) is longer than the timeout",
        end.waited
    );
    assert!(end.ran.expect("it ran") < timeout);
    assert_eq!(person.asked(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let request = person.last();
    assert_eq!(request.call_id, "2");
    assert_eq!(request.tool, "delete_file");
    assert_eq!(request.arguments, serde_json::json!({ "path": "/tmp/x" }));
    assert_eq!(
        request.annotations,
        ToolAnnotations::new().destructive(true)
    );
    assert!(!request.untrusted);
    assert_eq!(request.reason, "no rule allows it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approvers_denial_reaches_the_models_text() {
    let person = Person::answering(Verdict::deny("the user said no"));
    let runner = approved(AnnotationGate::new(), person.clone());
    let tool = Probe::new("send_mail", ToolAnnotations::new().destructive(false));
    let runs = tool.runs.clone();

    let end = runner.start(call("3", "send_mail"), Arc::new(tool)).await;
    assert_eq!(end.outcome, Outcome::Denied);
    assert!(end.result.is_error);
    assert_eq!(
        end.result.text(),
        "tool `send_mail` was not run: the gate denied it: not approved: the user said no"
    );
    assert_eq!(person.asked(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_approver_a_destructive_tool_is_denied_with_a_clear_text() {
    let runner = gated(AnnotationGate::new().ask(Match::Destructive));
    let tool = Probe::new("drop_table", ToolAnnotations::new());
    let runs = tool.runs.clone();

    let end = runner.start(call("4", "drop_table"), Arc::new(tool)).await;
    assert_eq!(end.outcome, Outcome::Denied);
    assert_eq!(
        end.result.text(),
        "tool `drop_table` was not run: the gate denied it: \
         it needs approval (destructive tools) and no approver is set"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_denies_by_name_before_anyone_is_asked() {
    let person = Person::answering(Verdict::Allow);
    let gate =
        AnnotationGate::new().rule(Rule::deny(Match::tool("format_disk")).because("never here"));
    let runner = approved(gate, person.clone());

    let end = runner
        .start(
            call("5", "format_disk"),
            Arc::new(Probe::new(
                "format_disk",
                ToolAnnotations::new().read_only(),
            )),
        )
        .await;
    assert_eq!(end.outcome, Outcome::Denied);
    assert_eq!(
        end.result.text(),
        "tool `format_disk` was not run: the gate denied it: the approval policy denies it: never here"
    );
    assert_eq!(person.asked(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_tool_claiming_read_only_is_asked_not_allowed() {
    let person = Person::answering(Verdict::Allow);
    let runner = approved(AnnotationGate::new(), person.clone());
    let claims = ToolAnnotations::new().read_only().title("Harmless");
    let tool = Probe::new("agent_script", claims.clone()).untrusted();
    let runs = tool.runs.clone();

    let end = runner
        .start(call("6", "agent_script"), Arc::new(tool))
        .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(person.asked(), 1, "asked, not let through on its claim");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let request = person.last();
    assert!(request.untrusted);
    assert_eq!(request.annotations, claims, "the person sees the claims");
    assert_eq!(
        request.reason,
        "no rule allows it; its own hints are not believed: its code is untrusted"
    );

    // Without an approver it is denied, like any tool that must be asked.
    let end = gated(AnnotationGate::new())
        .start(
            call("7", "agent_script"),
            Arc::new(Probe::new("agent_script", claims.clone()).untrusted()),
        )
        .await;
    assert_eq!(end.outcome, Outcome::Denied);

    // A host that vouches for untrusted hints opts in, and is not asked.
    let believing = approved(
        AnnotationGate::new().believe_untrusted_hints(true),
        person.clone(),
    );
    let end = believing
        .start(
            call("8", "agent_script"),
            Arc::new(Probe::new("agent_script", claims).untrusted()),
        )
        .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(person.asked(), 1, "not asked again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_that_panics_ends_the_call_as_crashed_and_the_process_lives() {
    // The panics are expected: keep them off the test's output.
    let installed = install_quiet_panic_hook();
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let approver = move |request: ApprovalRequest| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        async move {
            if request.tool == "panics_at_once" {
                panic!("the approver's screen broke");
            }
            // After an await: the panic comes from a later poll.
            tokio::time::sleep(Duration::from_millis(10)).await;
            if request.tool == "panics_later" {
                panic!("the approver gave up after {n} requests");
            }
            Verdict::Allow
        }
    };
    let runner = approved(AnnotationGate::new(), approver);

    for (id, name, message) in [
        ("9", "panics_at_once", "the approver's screen broke"),
        (
            "10",
            "panics_later",
            "the approver gave up after 1 requests",
        ),
    ] {
        let tool = Probe::new(name, ToolAnnotations::new());
        let runs = tool.runs.clone();
        let end = runner.start(call(id, name), Arc::new(tool)).await;
        assert_eq!(end.outcome, Outcome::Crashed, "{name}");
        assert!(end.result.is_error);
        assert!(
            end.result.text().contains(message),
            "the panic's text reaches the model: {}",
            end.result.text()
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0, "{name} never ran");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2);

    // The loop, the runtime and the gate live on.
    let end = runner
        .start(
            call("11", "fine"),
            Arc::new(Probe::new("fine", ToolAnnotations::new())),
        )
        .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    if installed {
        restore_panic_hook();
    }
}

/// Answers every call `Remember(every call of its tool)`, as a gate.
struct RememberingGate;

#[async_trait]
impl rho_tool_core::Gate for RememberingGate {
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        Verdict::Remember(rho_tool_core::Allowance::tool(tool.name()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_that_remembers_allows_and_keeps_only_what_could_cover_the_tool() {
    let runner = Runner::new(TokioExecutor::current().expect("a runtime with a timer"))
        .with_gate(Arc::new(RememberingGate));
    let read = Probe::new("read_file", ToolAnnotations::new().read_only());
    let wipe = Probe::new("wipe", ToolAnnotations::new().destructive(true));
    let (read_runs, wipe_runs) = (read.runs.clone(), wipe.runs.clone());

    let end = runner.start(call("1", "read_file"), Arc::new(read)).await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    let end = runner.start(call("2", "wipe"), Arc::new(wipe)).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "allowed, though not kept");
    assert_eq!(
        (
            read_runs.load(Ordering::SeqCst),
            wipe_runs.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    let kept: Vec<String> = runner
        .allowances()
        .list()
        .into_iter()
        .map(|(_, allowance)| allowance.tool_name().to_owned())
        .collect();
    assert_eq!(
        kept,
        ["read_file"],
        "a destructive tool is not covered by default"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_an_allowance_covers_runs_without_asking_the_approver() {
    let person = Person::answering(Verdict::deny("would have said no"));
    let allowances =
        rho_tool_core::Allowances::new().destructive_tools(rho_tool_core::DestructiveTools::Scoped);
    allowances.add(rho_tool_core::Allowance::arguments(
        "delete_file",
        serde_json::json!({ "path": "/tmp/x" }),
    ));
    let runner = approved(AnnotationGate::new(), person.clone()).with_allowances(allowances);
    let tool = Arc::new(Probe::new(
        "delete_file",
        ToolAnnotations::new().destructive(true),
    ));

    let end = runner.start(call("1", "delete_file"), tool.clone()).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(person.asked(), 0);

    let other = ToolCall::new("2", "delete_file", serde_json::json!({ "path": "/etc" }));
    let end = runner.start(other, tool).await;
    assert_eq!(end.outcome, Outcome::Denied);
    assert_eq!(person.asked(), 1, "other arguments are asked about");
}
