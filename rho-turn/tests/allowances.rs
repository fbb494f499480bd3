//! Approvals that are remembered: an approver's "allow for the rest of the
//! session" is kept by the turn runner, answers later questions it covers
//! without asking anyone, is listed and revoked, never outranks a gate's
//! denial, and covers a destructive tool only as the host allows. Each on
//! tokio and on smol, with the ready [`AnnotationGate`] asking.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rho_tool_core::{
    Allowance, Allowances, AnnotationGate, ApprovalRequest, DestructiveTools, Executor, Gate,
    Outcome, Tool, ToolAnnotations, ToolCall, ToolOutput, Verdict, async_trait,
};
use rho_turn::{SessionEntry, Turn};
use serde_json::json;
use support::{Tools, call, tool};

/// A shell-like tool: answers the command it was given. No hints, so
/// destructive, as a shell is.
fn shell() -> impl Tool {
    tool("sh", |args, _cx| async move {
        ToolOutput::text(format!("ran {}", args["command"].as_str().unwrap_or("?")))
    })
}

fn sh(id: &str, command: &str) -> ToolCall {
    call(id, "sh", json!({ "command": command }))
}

/// An approver that records what it is asked and answers with `answer`.
#[derive(Clone, Default)]
struct Person {
    asked: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn approver(
        &self,
        answer: impl Fn(&ApprovalRequest) -> Verdict + Send + Sync + 'static,
    ) -> Arc<dyn rho_tool_core::Approver> {
        let asked = self.asked.clone();
        Arc::new(move |request: ApprovalRequest| {
            asked.lock().expect("the record").push(
                request.arguments["command"]
                    .as_str()
                    .unwrap_or(&request.tool)
                    .to_owned(),
            );
            let verdict = answer(&request);
            async move { verdict }
        })
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.asked.lock().expect("the record"))
    }
}

fn outcomes(entries: &[SessionEntry]) -> Vec<Outcome> {
    entries.iter().map(|entry| entry.outcome).collect()
}

/// A person allows `git status` for the session: later `git status …`
/// calls are not asked about, other commands (and `git status` glued to
/// another command) are; revoked, it is asked again.
fn a_remembered_prefix_answers_later_questions<E: Executor>(
    executor: E,
    block_on: impl Fn(Turn<E>) -> Vec<SessionEntry>,
) {
    let tools = Tools::new().add(shell());
    let person = Person::default();
    let turns = tools
        .turns(executor, Arc::new(AnnotationGate::new()))
        .with_allowances(Allowances::new().destructive_tools(DestructiveTools::Scoped))
        .with_approver(person.approver(|request| {
            match Allowance::prefix_of(request, "command", 2) {
                Some(prefix) if request.arguments["command"] == "git status" => {
                    Verdict::Remember(prefix)
                }
                _ => Verdict::Allow,
            }
        }));

    let entries = block_on(turns.turn([sh("1", "git status")]));
    assert_eq!(outcomes(&entries), [Outcome::Succeeded]);
    assert_eq!(person.take(), ["git status"]);
    let kept = turns.allowances().list();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        kept[0].1,
        Allowance::command_prefix("sh", "command", ["git", "status"])
    );

    let entries = block_on(turns.turn([
        sh("2", "git status --short"),
        sh("3", "git status; rm -rf ~"),
        sh("4", "git log"),
        sh("5", "'git' \"status\""),
    ]));
    assert_eq!(outcomes(&entries), [Outcome::Succeeded; 4]);
    let mut asked = person.take();
    asked.sort();
    assert_eq!(asked, ["git log", "git status; rm -rf ~"]);

    // A clone of the runner shares the session's allowances.
    let (id, _) = turns.clone().allowances().list().remove(0);
    assert!(turns.allowances().revoke(id).is_some());
    block_on(turns.turn([sh("6", "git status")]));
    assert_eq!(person.take(), ["git status"], "revoked, it is asked again");
}

/// Denies calls whose command mentions `push`; asks about the rest.
struct NoPush;

#[async_trait]
impl Gate for NoPush {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        if call.arguments.to_string().contains("push") {
            Verdict::deny("no pushing")
        } else {
            Verdict::ask("it runs a command")
        }
    }
}

/// An allowance answers questions only: the gate's denial still denies.
/// And a covered call needs no approver at all.
fn an_allowance_never_outranks_a_denial<E: Executor>(
    executor: E,
    block_on: impl Fn(Turn<E>) -> Vec<SessionEntry>,
) {
    let tools = Tools::new().add(shell());
    let allowances = Allowances::new().destructive_tools(DestructiveTools::Always);
    allowances.add(Allowance::tool("sh"));
    // No approver: a covered call runs, anything else would be denied.
    let turns = tools
        .turns(executor, Arc::new(NoPush))
        .with_allowances(allowances.clone());
    let entries = block_on(turns.turn([sh("1", "git push"), sh("2", "git fetch")]));
    assert_eq!(outcomes(&entries), [Outcome::Denied, Outcome::Succeeded]);
    assert!(
        entries[0].text().contains("no pushing"),
        "{}",
        entries[0].text()
    );

    allowances.clear();
    let entries = block_on(turns.turn([sh("3", "git fetch")]));
    assert_eq!(outcomes(&entries), [Outcome::Denied]);
    assert!(
        entries[0].text().contains("no approver is set"),
        "{}",
        entries[0].text()
    );
}

/// What a person asks to be remembered is kept only where the host's
/// setting lets it cover the tool: never a destructive tool by default;
/// with `Scoped`, only narrower than the whole tool; an untrusted tool's
/// claim of being harmless is not believed. The call asked about runs in
/// every case.
fn destructive_tools_are_covered_only_as_the_host_allows<E: Executor>(
    executor: E,
    block_on: impl Fn(Turn<E>) -> Vec<SessionEntry>,
) {
    let harmless = ToolAnnotations::new().destructive(false);
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = |name: &'static str| {
        let runs = runs.clone();
        tool(name, move |_args, _cx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { ToolOutput::text("done") }
        })
    };
    let tools = Tools::new()
        .add(counted("write").with_annotations(harmless.clone()))
        .add(counted("wipe"))
        .add_untrusted(counted("agent_tool").with_annotations(harmless));
    let person = Person::default();
    let remember_tool =
        |request: &ApprovalRequest| Verdict::Remember(Allowance::tool(&request.tool));
    let message = || {
        [
            call("1", "write", json!({})),
            call("2", "wipe", json!({})),
            call("3", "agent_tool", json!({})),
        ]
    };

    for (setting, kept) in [
        (DestructiveTools::Never, vec!["write"]),
        (DestructiveTools::Scoped, vec!["write"]),
        (
            DestructiveTools::Always,
            vec!["write", "wipe", "agent_tool"],
        ),
    ] {
        let turns = tools
            .turns(executor.clone(), Arc::new(AnnotationGate::new()))
            .with_allowances(Allowances::new().destructive_tools(setting))
            .with_approver(person.approver(remember_tool));
        runs.store(0, Ordering::SeqCst);
        let entries = block_on(turns.turn(message()));
        assert_eq!(outcomes(&entries), [Outcome::Succeeded; 3], "{setting:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let mut names: Vec<String> = turns
            .allowances()
            .list()
            .into_iter()
            .map(|(_, allowance)| allowance.tool_name().to_owned())
            .collect();
        names.sort();
        let mut kept = kept.clone();
        kept.sort();
        assert_eq!(names, kept, "{setting:?}");
        assert_eq!(person.take().len(), 3, "{setting:?}: each asked once");

        // Asked again only about what was not kept.
        block_on(turns.turn(message()));
        assert_eq!(person.take().len(), 3 - kept.len(), "{setting:?}");
    }
}

on_tokio_and_smol! {
    a_remembered_command_prefix_answers_later_questions_until_revoked => a_remembered_prefix_answers_later_questions;
    an_allowance_never_outranks_a_gates_denial => an_allowance_never_outranks_a_denial;
    destructive_tools_are_covered_only_as_the_host_allows => destructive_tools_are_covered_only_as_the_host_allows;
}
