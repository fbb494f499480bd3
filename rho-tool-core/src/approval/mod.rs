//! A ready gate that decides by a tool's annotations, and asks an
//! [`Approver`] (a person, usually) when its rules say so.
//!
//! One concept a module: `rules` what a rule decides and which calls it
//! applies to, `config` the gate written as data; here the gate itself,
//! what it decided about a call ([`Ruling`]), and the approver it asks.

mod config;
mod rules;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

pub use config::GateConfig;
use rules::Facts;
pub use rules::{Decision, GlobError, Match, Rule, ToolGlob};

use crate::annotations::ToolAnnotations;
use crate::call::ToolCall;
use crate::gate::{Gate, Verdict};
use crate::tool::Tool;

/// What a person (or a program) needs to decide about one call: the
/// [`AnnotationGate`] hands it to its [`Approver`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The id the model gave the call.
    pub call_id: String,
    /// The name of the tool that would run.
    pub tool: String,
    /// The arguments the model gave, as JSON.
    pub arguments: serde_json::Value,
    /// The annotations as the tool states them, believed or not (see
    /// [`untrusted`](ApprovalRequest::untrusted)).
    pub annotations: ToolAnnotations,
    /// Whether the tool's code was not written by the host: its
    /// annotations are then its own claims.
    pub untrusted: bool,
    /// Why the gate asks, in words: the rule that matched ("destructive
    /// tools"), or that no rule allowed the call.
    pub reason: String,
}

impl ApprovalRequest {
    /// A request about call `call_id` of `tool` with `arguments`, with no
    /// annotations, trusted, and no reason; set the public fields for the
    /// rest. For testing an approver; the gate makes its own.
    pub fn new(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            arguments,
            annotations: ToolAnnotations::default(),
            untrusted: false,
            reason: String::new(),
        }
    }
}

/// Decides a call an [`AnnotationGate`] asks about: usually by asking a
/// person.
///
/// It runs inside the call's task, like the gate: it may wait as long as it
/// likes (no timeout clock runs yet, and the loop goes on with other
/// calls), and a panic in it ends the call as crashed, never the loop. A
/// denial's reason reaches the model.
///
/// Implemented for every `Fn(ApprovalRequest) -> impl Future<Output =
/// Verdict>` that is `Send + Sync` with a `Send` future, so a closure
/// returning an `async move` block will do:
///
/// ```
/// use rho_tool_core::{ApprovalRequest, AnnotationGate, Verdict};
///
/// let gate = AnnotationGate::new().with_approver(|request: ApprovalRequest| async move {
///     // Ask someone here; this one refuses anything that touches `/etc`.
///     if request.arguments.to_string().contains("/etc") {
///         Verdict::deny("nothing under /etc")
///     } else {
///         Verdict::Allow
///     }
/// });
/// # let _ = gate;
/// ```
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides about the call `request` describes.
    async fn approve(&self, request: ApprovalRequest) -> Verdict;
}

#[async_trait]
impl<F, Fut> Approver for F
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Verdict> + Send + 'static,
{
    async fn approve(&self, request: ApprovalRequest) -> Verdict {
        self(request).await
    }
}

/// A ready [`Gate`] that decides by each tool's name, trust and
/// [`ToolAnnotations`], and asks an [`Approver`] when its rules say so.
///
/// A call gets the first of these that applies:
///
/// 1. the first of the gate's [rules](AnnotationGate::rule) whose test
///    matches, in the order they were added;
/// 2. for a read-only tool, [`read_only_tools`](AnnotationGate::read_only_tools)
///    (default: [`Decision::Allow`]);
/// 3. [`otherwise`](AnnotationGate::otherwise) (default: [`Decision::Ask`]).
///
/// [`Decision::Ask`] waits for the approver; without one the call is
/// denied, with a text that says so. So `AnnotationGate::new()` lets
/// read-only tools run, asks about the rest, and denies them until an
/// approver is set. [`ruling`](AnnotationGate::ruling) tells which step
/// decides a call.
///
/// A gate can also be written in a file a person edits: read a
/// [`GateConfig`] with serde, and make the gate `From` it.
///
/// # Untrusted tools
///
/// The annotations of an untrusted tool ([`Tool::is_untrusted`]) are claims
/// by code the host did not write. By default the gate reads them as
/// absent, that is as MCP's cautious defaults: such a tool is never
/// "read-only" here, so it is asked about, not let through, whatever it
/// claims. The approver still sees the claims. A host that vouches for a
/// source's hints opts in with
/// [`believe_untrusted_hints`](AnnotationGate::believe_untrusted_hints).
///
/// # When it runs
///
/// Inside the call's task, before the tool: the tool's timeout clock starts
/// only once the gate allows, so an approver can take minutes. The gate
/// reads the tool's name, trust and annotations there, per call; a panic of
/// those or of the approver ends the call as crashed.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use rho_tool_core::{
///     AnnotationGate, ApprovalRequest, Match, Outcome, Rule, Runner, Tool, ToolAnnotations,
///     ToolCall, ToolContext, ToolOutput, Verdict, async_trait,
/// };
///
/// /// A tool with the annotations it is given.
/// struct Files(&'static str, ToolAnnotations);
///
/// #[async_trait]
/// impl Tool for Files {
///     fn name(&self) -> &str { self.0 }
///     fn description(&self) -> &str { "Works on files." }
///     fn annotations(&self) -> ToolAnnotations { self.1.clone() }
///     async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
///         ToolOutput::text(format!("{} done", self.0))
///     }
/// }
///
/// let asked = Arc::new(AtomicUsize::new(0));
/// let counter = asked.clone();
/// let gate = AnnotationGate::new()
///     .rule(Rule::deny(Match::tool("format_disk")).because("never on this machine"))
///     .with_approver(move |request: ApprovalRequest| {
///         counter.fetch_add(1, Ordering::SeqCst);
///         async move {
///             // A real host would ask a person here, for as long as it takes.
///             if request.tool == "write_file" { Verdict::Allow } else { Verdict::deny("no") }
///         }
///     });
///
/// let runtime = tokio::runtime::Builder::new_multi_thread().enable_time().build().unwrap();
/// runtime.block_on(async {
///     let runner = Runner::new(rho_exec_tokio::TokioExecutor::current().unwrap())
///         .with_gate(Arc::new(gate));
///     let call = |name: &str| ToolCall::new("call-1", name, serde_json::json!({}));
///
///     // Read-only: runs without asking.
///     let read = Arc::new(Files("read_file", ToolAnnotations::new().read_only()));
///     assert_eq!(runner.start(call("read_file"), read).await.outcome, Outcome::Succeeded);
///     assert_eq!(asked.load(Ordering::SeqCst), 0);
///
///     // Not read-only: the approver is asked, and allows it.
///     let write = Arc::new(Files("write_file", ToolAnnotations::new().destructive(true)));
///     assert_eq!(runner.start(call("write_file"), write).await.outcome, Outcome::Succeeded);
///     assert_eq!(asked.load(Ordering::SeqCst), 1);
///
///     // A rule denies it before anyone is asked, and the model is told why.
///     let format = Arc::new(Files("format_disk", ToolAnnotations::new()));
///     let end = runner.start(call("format_disk"), format).await;
///     assert_eq!(end.outcome, Outcome::Denied);
///     assert!(end.result.text().ends_with("never on this machine"));
///     assert_eq!(asked.load(Ordering::SeqCst), 1);
/// });
/// ```
#[derive(Clone)]
pub struct AnnotationGate {
    rules: Vec<Rule>,
    read_only_tools: Decision,
    otherwise: Decision,
    approver: Option<Arc<dyn Approver>>,
    believe_untrusted_hints: bool,
}

impl Default for AnnotationGate {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for AnnotationGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnnotationGate")
            .field("rules", &self.rules)
            .field("read_only_tools", &self.read_only_tools)
            .field("otherwise", &self.otherwise)
            .field("approver", &self.approver.is_some())
            .field("believe_untrusted_hints", &self.believe_untrusted_hints)
            .finish()
    }
}

impl AnnotationGate {
    /// No rules; read-only tools are allowed, everything else is asked
    /// about; no approver (so asking denies); untrusted tools' hints are
    /// not believed.
    pub fn new() -> Self {
        Self {
            rules: Vec::new(),
            read_only_tools: Decision::Allow,
            otherwise: Decision::Ask,
            approver: None,
            believe_untrusted_hints: false,
        }
    }

    /// Adds `rule` after the rules already there (the first that matches
    /// wins), before the read-only and the `otherwise` steps.
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Adds the rule: calls `when` matches run without asking.
    #[must_use]
    pub fn allow(self, when: Match) -> Self {
        self.rule(Rule::allow(when))
    }

    /// Adds the rule: calls `when` matches are asked about.
    #[must_use]
    pub fn ask(self, when: Match) -> Self {
        self.rule(Rule::ask(when))
    }

    /// Adds the rule: calls `when` matches are denied.
    #[must_use]
    pub fn deny(self, when: Match) -> Self {
        self.rule(Rule::deny(when))
    }

    /// What read-only tools that no rule matched get. Default:
    /// [`Decision::Allow`].
    #[must_use]
    pub fn read_only_tools(mut self, decision: Decision) -> Self {
        self.read_only_tools = decision;
        self
    }

    /// What every other call gets. Default: [`Decision::Ask`].
    #[must_use]
    pub fn otherwise(mut self, decision: Decision) -> Self {
        self.otherwise = decision;
        self
    }

    /// Asks `approver` about the calls the gate asks about.
    #[must_use]
    pub fn with_approver(self, approver: impl Approver + 'static) -> Self {
        self.with_shared_approver(Arc::new(approver))
    }

    /// Asks `approver`, shared with other gates, about the calls the gate
    /// asks about.
    #[must_use]
    pub fn with_shared_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Whether the hints of untrusted tools are read as they are stated
    /// (`true`) or as absent (`false`, the default). Only for a host that
    /// vouches for every untrusted tool's claims: with `true`, an
    /// agent-written tool that calls itself read-only is let through
    /// without asking.
    #[must_use]
    pub fn believe_untrusted_hints(mut self, believe: bool) -> Self {
        self.believe_untrusted_hints = believe;
        self
    }

    /// The rules, in the order they were added: the first that matches a
    /// call decides it.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether the hints of untrusted tools are read as they are stated
    /// (see [`believe_untrusted_hints`](AnnotationGate::believe_untrusted_hints)).
    pub fn believes_untrusted_hints(&self) -> bool {
        self.believe_untrusted_hints
    }

    /// What the gate decides about a tool named `tool` with `annotations`,
    /// untrusted or not, before anyone is asked: for a host that shows which
    /// tools will need approval.
    pub fn decision_for(
        &self,
        tool: &str,
        annotations: &ToolAnnotations,
        untrusted: bool,
    ) -> Decision {
        self.ruling(tool, annotations, untrusted).decision()
    }

    /// What the gate decides about a tool named `tool` with `annotations`,
    /// untrusted or not, before anyone is asked, and which of its steps
    /// decided it: for a host that records which rule let a call through
    /// or stopped it (an audit log), or words its own texts.
    ///
    /// ```
    /// use rho_tool_core::{AnnotationGate, DecidedBy, Decision, Match, ToolAnnotations};
    ///
    /// let gate = AnnotationGate::new()
    ///     .deny(Match::tool("format_disk"))
    ///     .ask(Match::Destructive);
    /// let ruling = gate.ruling("rm", &ToolAnnotations::new(), false);
    /// assert_eq!(ruling.decision(), Decision::Ask);
    /// let DecidedBy::Rule { number, rule } = ruling.decided_by() else { unreachable!() };
    /// assert_eq!((number, rule.when()), (2, &Match::Destructive));
    ///
    /// let ls = gate.ruling("ls", &ToolAnnotations::new().read_only(), false);
    /// assert_eq!((ls.decision(), ls.decided_by()), (Decision::Allow, DecidedBy::ReadOnlyTools));
    /// ```
    pub fn ruling(&self, tool: &str, annotations: &ToolAnnotations, untrusted: bool) -> Ruling<'_> {
        let disbelieved = untrusted && !self.believe_untrusted_hints;
        let unknown = ToolAnnotations::default();
        let facts = Facts {
            name: tool,
            hints: if disbelieved { &unknown } else { annotations },
            untrusted,
        };
        let found = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.when().matches(&facts));
        let (decision, by) = if let Some((index, rule)) = found {
            let number = index + 1;
            (rule.decision(), DecidedBy::Rule { number, rule })
        } else if facts.hints.is_read_only() {
            (self.read_only_tools, DecidedBy::ReadOnlyTools)
        } else {
            (self.otherwise, DecidedBy::Otherwise)
        };
        Ruling {
            decision,
            by,
            claims_set_aside: disbelieved && annotations.has_hints(),
        }
    }
}

/// What an [`AnnotationGate`] decides about one call before anyone is
/// asked, and which of its steps decided it
/// ([`AnnotationGate::ruling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ruling<'a> {
    decision: Decision,
    by: DecidedBy<'a>,
    /// Whether the tool stated hints that the gate read as absent (it is
    /// untrusted, and the gate does not believe such hints): the texts say
    /// so, since the approver and the model see the claims.
    claims_set_aside: bool,
}

impl<'a> Ruling<'a> {
    /// What the call gets: run, ask, or deny.
    pub fn decision(&self) -> Decision {
        self.decision
    }

    /// Which step decided: a rule (and its number), or one of the two
    /// steps after the rules.
    pub fn decided_by(&self) -> DecidedBy<'a> {
        self.by
    }

    /// Why, in the words the gate's texts use: the rule's reason or its
    /// test, "read-only tools", or "no rule allows it".
    fn why(&self) -> String {
        let mut why = match self.by {
            DecidedBy::Rule { rule, .. } => match rule.reason() {
                Some(reason) => reason.to_owned(),
                None => rule.when().to_string(),
            },
            DecidedBy::ReadOnlyTools => Match::ReadOnly.to_string(),
            DecidedBy::Otherwise => "no rule allows it".to_owned(),
        };
        if self.claims_set_aside {
            why.push_str("; its own hints are not believed: its code is untrusted");
        }
        why
    }
}

/// Which step of an [`AnnotationGate`] decided a call (see the gate's
/// docs for the order of the steps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecidedBy<'a> {
    /// The first rule that matched.
    Rule {
        /// Its place among the gate's rules, from 1, in the order they were
        /// added: a [`GateConfig`]'s rules keep the file's order, so this is
        /// the rule's place in the file.
        number: usize,
        /// The rule itself.
        rule: &'a Rule,
    },
    /// No rule matched and the tool is read-only: the gate's
    /// [`read_only_tools`](AnnotationGate::read_only_tools) decided.
    ReadOnlyTools,
    /// No rule matched and the tool is not read-only: the gate's
    /// [`otherwise`](AnnotationGate::otherwise) decided.
    Otherwise,
}

#[async_trait]
impl Gate for AnnotationGate {
    async fn check(&self, call: &ToolCall, tool: &dyn Tool) -> Verdict {
        let name = tool.name();
        let annotations = tool.annotations();
        let untrusted = tool.is_untrusted();
        let ruling = self.ruling(name, &annotations, untrusted);
        match ruling.decision() {
            Decision::Allow => Verdict::Allow,
            Decision::Deny => {
                Verdict::deny(format!("the approval policy denies it: {}", ruling.why()))
            }
            Decision::Ask => {
                let why = ruling.why();
                let Some(approver) = &self.approver else {
                    return Verdict::deny(format!(
                        "it needs approval ({why}) and no approver is set"
                    ));
                };
                let request = ApprovalRequest {
                    call_id: call.id.clone(),
                    tool: name.to_owned(),
                    arguments: call.arguments.clone(),
                    annotations,
                    untrusted,
                    reason: why,
                };
                match approver.approve(request).await {
                    Verdict::Allow => Verdict::Allow,
                    Verdict::Deny { reason } => Verdict::deny(format!("not approved: {reason}")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_only() -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }

    #[test]
    fn by_default_read_only_is_allowed_and_the_rest_is_asked() {
        let gate = AnnotationGate::new();
        assert_eq!(
            gate.decision_for("ls", &read_only(), false),
            Decision::Allow
        );
        assert_eq!(
            gate.decision_for("rm", &ToolAnnotations::new(), false),
            Decision::Ask
        );
        let additive = ToolAnnotations::new().destructive(false).idempotent(true);
        assert_eq!(gate.decision_for("touch", &additive, false), Decision::Ask);
    }

    #[test]
    fn an_untrusted_tools_read_only_claim_is_not_believed_unless_asked_to() {
        let gate = AnnotationGate::new();
        assert_eq!(gate.decision_for("ls", &read_only(), true), Decision::Ask);
        let ruling = gate.ruling("ls", &read_only(), true);
        assert_eq!(
            ruling.why(),
            "no rule allows it; its own hints are not believed: its code is untrusted"
        );
        // Not believed means read as absent: destructive, open world.
        let strict = AnnotationGate::new().deny(Match::Destructive);
        assert_eq!(
            strict.decision_for("ls", &read_only(), true),
            Decision::Deny
        );
        assert_eq!(
            strict.decision_for("ls", &read_only(), false),
            Decision::Allow
        );

        let believing = AnnotationGate::new().believe_untrusted_hints(true);
        assert_eq!(
            believing.decision_for("ls", &read_only(), true),
            Decision::Allow
        );
    }

    #[test]
    fn the_first_matching_rule_wins_before_the_read_only_step() {
        let gate = AnnotationGate::new()
            .deny(Match::tool("cat_secrets"))
            .allow(Match::tool("cat_secrets"))
            .allow(Match::all([Match::Idempotent, !Match::Untrusted]))
            .ask(Match::OpenWorld);
        assert_eq!(
            gate.decision_for("cat_secrets", &read_only(), false),
            Decision::Deny,
            "a rule comes before the read-only step, and the first rule wins"
        );
        let retry_safe = ToolAnnotations::new().idempotent(true);
        assert_eq!(
            gate.decision_for("put", &retry_safe, false),
            Decision::Allow
        );
        assert_eq!(gate.decision_for("put", &retry_safe, true), Decision::Ask);
        // Closed world, read-only: no rule matches, the read-only step does.
        let closed = read_only().open_world(false);
        assert_eq!(gate.decision_for("recall", &closed, false), Decision::Allow);
        // Open world and read-only: the open-world rule comes first.
        assert_eq!(
            gate.decision_for("search", &read_only(), false),
            Decision::Ask
        );
    }

    #[test]
    fn the_steps_after_the_rules_can_be_changed() {
        let gate = AnnotationGate::new()
            .read_only_tools(Decision::Ask)
            .otherwise(Decision::Deny);
        assert_eq!(gate.decision_for("ls", &read_only(), false), Decision::Ask);
        assert_eq!(
            gate.decision_for("rm", &ToolAnnotations::new(), false),
            Decision::Deny
        );
        let trusting = AnnotationGate::new().otherwise(Decision::Allow);
        assert_eq!(
            trusting.decision_for("rm", &ToolAnnotations::new(), false),
            Decision::Allow
        );
    }

    #[test]
    fn untrusted_and_name_rules_see_the_tool_not_its_claims() {
        let gate = AnnotationGate::new()
            .deny(Match::Untrusted)
            .allow(Match::tool("rm"));
        assert_eq!(gate.decision_for("ls", &read_only(), true), Decision::Deny);
        assert_eq!(
            gate.decision_for("rm", &ToolAnnotations::new(), false),
            Decision::Allow
        );
        assert_eq!(
            gate.decision_for("rm", &ToolAnnotations::new(), true),
            Decision::Deny
        );
    }

    #[test]
    fn the_reason_names_the_rule_or_says_so_itself() {
        let gate = AnnotationGate::new()
            .deny(Match::Destructive)
            .rule(Rule::ask(Match::OpenWorld).because("it talks to the internet"));
        assert_eq!(
            gate.ruling("rm", &ToolAnnotations::new(), false).why(),
            "destructive tools"
        );
        let fetch = ToolAnnotations::new().destructive(false);
        assert_eq!(
            gate.ruling("fetch", &fetch, false).why(),
            "it talks to the internet"
        );
        assert_eq!(
            gate.ruling("ls", &read_only().open_world(false), false)
                .why(),
            "read-only tools"
        );
    }

    #[test]
    fn the_ruling_names_the_step_that_decided() {
        let gate = AnnotationGate::new()
            .deny(Match::glob("rm*").expect("a glob"))
            .ask(Match::Destructive);
        let ruling = gate.ruling("rmdir", &read_only(), false);
        assert_eq!(ruling.decision(), Decision::Deny);
        assert_eq!(
            ruling.decided_by(),
            DecidedBy::Rule {
                number: 1,
                rule: &gate.rules()[0]
            }
        );
        assert_eq!(ruling.why(), "tool `rm*`");
        let ruling = gate.ruling("touch", &ToolAnnotations::new().destructive(false), false);
        assert_eq!(
            (ruling.decision(), ruling.decided_by()),
            (Decision::Ask, DecidedBy::Otherwise)
        );
        // An untrusted tool's read-only claim is set aside: the destructive
        // rule matches it, and the reason says why.
        let ruling = gate.ruling("ls", &read_only(), true);
        assert!(matches!(
            ruling.decided_by(),
            DecidedBy::Rule { number: 2, .. }
        ));
        assert_eq!(
            ruling.why(),
            "destructive tools; its own hints are not believed: its code is untrusted"
        );
        assert_eq!(
            gate.ruling("ls", &read_only(), false).decided_by(),
            DecidedBy::ReadOnlyTools
        );
        assert!(!gate.believes_untrusted_hints());
        assert!(
            gate.believe_untrusted_hints(true)
                .believes_untrusted_hints()
        );
    }

    #[test]
    fn a_closure_is_an_approver() {
        fn takes(_: impl Approver) {}
        takes(|request: ApprovalRequest| async move {
            if request.untrusted {
                Verdict::deny("untrusted")
            } else {
                Verdict::Allow
            }
        });
    }

    #[test]
    fn debug_says_whether_an_approver_is_set() {
        let gate = AnnotationGate::new();
        assert!(format!("{gate:?}").contains("approver: false"));
        let gate = gate.with_approver(|_: ApprovalRequest| async { Verdict::Allow });
        assert!(format!("{gate:?}").contains("approver: true"));
    }
}
