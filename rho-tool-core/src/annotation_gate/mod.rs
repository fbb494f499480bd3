//! A ready gate that decides by a tool's annotations, and asks the
//! runner's [`Approver`](crate::Approver) (a person, usually) when its rules
//! say so: [`AnnotationGate`] (also at the crate's root) and its rule
//! language ([`Rule`], [`Match`], [`ToolGlob`], [`GateConfig`], [`Ruling`],
//! [`DecidedBy`]), which lives here, one module down, as it does in
//! `rho::gate`.
//!
//! One concept a module: `rules` which calls a rule applies to and what it
//! decides, `config` the gate written as data; here the gate itself and
//! what it decided about a call ([`Ruling`]).

mod config;
mod rules;

use async_trait::async_trait;

pub use config::GateConfig;
use rules::Facts;
pub use rules::{GlobError, Match, Rule, ToolGlob};

use crate::annotations::ToolAnnotations;
use crate::call::ToolCall;
use crate::gate::{Gate, Verdict};
use crate::tool::Tool;

/// A ready [`Gate`] that decides by each tool's name, trust and
/// [`ToolAnnotations`]: allow, deny, or ask the runner's
/// [`Approver`](crate::Approver).
///
/// A call gets the first of these that applies:
///
/// 1. the first of the gate's [rules](AnnotationGate::rule) whose test
///    matches, in the order they were added;
/// 2. for a read-only tool, [`read_only_tools`](AnnotationGate::read_only_tools)
///    (default: [`Verdict::Allow`]);
/// 3. [`otherwise`](AnnotationGate::otherwise) (default: ask).
///
/// The gate itself never waits: a [`Verdict::Ask`] goes to the approver
/// the runner was given ([`Runner::with_approver`](crate::Runner::with_approver)),
/// and without one the call is denied, with a text that says so. So
/// `AnnotationGate::new()` lets read-only tools run and asks about the
/// rest. [`ruling`](AnnotationGate::ruling) tells which step decides a
/// call.
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
/// only once the gate (and the approver it asks) allows, so an approver can
/// take minutes. The gate reads the tool's name, trust and annotations
/// there, per call; a panic of those ends the call as crashed.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use rho::gate::{Match, Rule};
/// use rho::{
///     AnnotationGate, ApprovalRequest, Outcome, Runner, Tool, ToolAnnotations, ToolCall,
///     ToolContext, ToolOutput, Verdict, async_trait,
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
///     .rule(Rule::deny(Match::tool("format_disk")).because("never on this machine"));
///
/// let runtime = tokio::runtime::Builder::new_multi_thread().enable_time().build().unwrap();
/// runtime.block_on(async {
///     let runner = Runner::new(rho::tokio::TokioExecutor::current().unwrap())
///         .with_gate(gate)
///         .with_approver(move |request: ApprovalRequest| {
///             counter.fetch_add(1, Ordering::SeqCst);
///             async move {
///                 // A real host would ask a person here, for as long as it takes.
///                 if request.tool == "write_file" { Verdict::Allow } else { Verdict::deny("no") }
///             }
///         });
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnotationGate {
    rules: Vec<Rule>,
    read_only_tools: Verdict,
    otherwise: Verdict,
    believe_untrusted_hints: bool,
}

impl Default for AnnotationGate {
    fn default() -> Self {
        Self::new()
    }
}

impl AnnotationGate {
    /// A gate with no rules that allows read-only tools and asks about the
    /// rest; untrusted tools' hints are not believed.
    pub fn new() -> Self {
        Self {
            rules: Vec::new(),
            read_only_tools: Verdict::Allow,
            otherwise: Verdict::ask(""),
            believe_untrusted_hints: false,
        }
    }

    /// Adds `rule` after the rules already added: the first rule that
    /// matches a call decides it.
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Adds a rule that allows the calls `when` matches.
    #[must_use]
    pub fn allow(self, when: Match) -> Self {
        self.rule(Rule::allow(when))
    }

    /// Adds a rule that asks the approver about the calls `when` matches.
    #[must_use]
    pub fn ask(self, when: Match) -> Self {
        self.rule(Rule::ask(when))
    }

    /// Adds a rule that denies the calls `when` matches.
    #[must_use]
    pub fn deny(self, when: Match) -> Self {
        self.rule(Rule::deny(when))
    }

    /// What read-only tools that no rule matched get. Default:
    /// [`Verdict::Allow`]. A reason in an ask or a denial is what the
    /// texts give as why; an empty one lets the gate say it.
    #[must_use]
    pub fn read_only_tools(mut self, verdict: Verdict) -> Self {
        self.read_only_tools = verdict;
        self
    }

    /// What every other call gets. Default: an ask. A reason in an ask or a
    /// denial is what the texts give as why; an empty one lets the gate say
    /// it ("no rule allows it").
    #[must_use]
    pub fn otherwise(mut self, verdict: Verdict) -> Self {
        self.otherwise = verdict;
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

    /// What the gate answers about a tool named `tool` with `annotations`,
    /// untrusted or not: for a host that shows which tools will need
    /// approval. The same verdict, reason and all, as a call of the tool
    /// gets from [`Gate::check`].
    pub fn verdict_for(
        &self,
        tool: &str,
        annotations: &ToolAnnotations,
        untrusted: bool,
    ) -> Verdict {
        self.ruling(tool, annotations, untrusted).verdict()
    }

    /// What the gate decides about a tool named `tool` with `annotations`,
    /// untrusted or not, and which of its steps decided it: for a host that
    /// records which rule let a call through or stopped it (an audit log),
    /// or words its own texts.
    ///
    /// ```
    /// use rho::gate::{DecidedBy, Match};
    /// use rho::{AnnotationGate, ToolAnnotations, Verdict};
    ///
    /// let gate = AnnotationGate::new()
    ///     .deny(Match::tool("format_disk"))
    ///     .ask(Match::Destructive);
    /// let ruling = gate.ruling("rm", &ToolAnnotations::new(), false);
    /// assert_eq!(ruling.verdict(), Verdict::ask("destructive tools"));
    /// let DecidedBy::Rule { number, rule } = ruling.decided_by() else { unreachable!() };
    /// assert_eq!((number, rule.when()), (2, &Match::Destructive));
    ///
    /// let ls = gate.ruling("ls", &ToolAnnotations::new().read_only(), false);
    /// assert_eq!((ls.verdict(), ls.decided_by()), (Verdict::Allow, DecidedBy::ReadOnlyTools));
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
        let (decided, by) = if let Some((index, rule)) = found {
            let number = index + 1;
            (rule.verdict(), DecidedBy::Rule { number, rule })
        } else if facts.hints.is_read_only() {
            (&self.read_only_tools, DecidedBy::ReadOnlyTools)
        } else {
            (&self.otherwise, DecidedBy::Otherwise)
        };
        Ruling {
            decided,
            by,
            claims_set_aside: disbelieved && annotations.has_hints(),
        }
    }
}

/// What an [`AnnotationGate`] decides about one call, and which of its
/// steps decided it ([`AnnotationGate::ruling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ruling<'a> {
    /// The step's verdict as written (its reason possibly empty).
    decided: &'a Verdict,
    by: DecidedBy<'a>,
    /// Whether the tool stated hints that the gate read as absent (it is
    /// untrusted, and the gate does not believe such hints): the texts say
    /// so, since the approver and the model see the claims.
    claims_set_aside: bool,
}

impl<'a> Ruling<'a> {
    /// What the call gets, with the gate's reason: an ask's reason is why
    /// approval is needed (the rule's reason or its test, "read-only
    /// tools", or "no rule allows it"); a denial's says the policy denies
    /// it, and why.
    pub fn verdict(&self) -> Verdict {
        match self.decided {
            allows @ (Verdict::Allow | Verdict::Remember(_)) => allows.clone(),
            Verdict::Ask { .. } => Verdict::ask(self.why()),
            Verdict::Deny { .. } => {
                Verdict::deny(format!("the approval policy denies it: {}", self.why()))
            }
        }
    }

    /// The verdict as the deciding step states it, its reason as written
    /// (empty when the step gave none): for a host that words its own
    /// texts.
    pub fn decided(&self) -> &'a Verdict {
        self.decided
    }

    /// Which step decided: a rule (and its number), or one of the two
    /// steps after the rules.
    pub fn decided_by(&self) -> DecidedBy<'a> {
        self.by
    }

    /// Why, in the words the gate's texts use: the step's own reason, or
    /// the rule's test, "read-only tools", or "no rule allows it".
    fn why(&self) -> String {
        let stated = self.decided.reason().filter(|reason| !reason.is_empty());
        let mut why = match (stated, self.by) {
            (Some(reason), _) => reason.to_owned(),
            (None, DecidedBy::Rule { rule, .. }) => rule.when().to_string(),
            (None, DecidedBy::ReadOnlyTools) => Match::ReadOnly.to_string(),
            (None, DecidedBy::Otherwise) => "no rule allows it".to_owned(),
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
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        self.verdict_for(tool.name(), &tool.annotations(), tool.is_untrusted())
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
            gate.verdict_for("ls", &read_only(), false).as_str(),
            "allow"
        );
        assert_eq!(
            gate.verdict_for("rm", &ToolAnnotations::new(), false)
                .as_str(),
            "ask"
        );
        let additive = ToolAnnotations::new().destructive(false).idempotent(true);
        assert_eq!(gate.verdict_for("touch", &additive, false).as_str(), "ask");
    }

    #[test]
    fn an_untrusted_tools_read_only_claim_is_not_believed_unless_asked_to() {
        let gate = AnnotationGate::new();
        assert_eq!(gate.verdict_for("ls", &read_only(), true).as_str(), "ask");
        let ruling = gate.ruling("ls", &read_only(), true);
        assert_eq!(
            ruling.why(),
            "no rule allows it; its own hints are not believed: its code is untrusted"
        );
        // Not believed means read as absent: destructive, open world.
        let strict = AnnotationGate::new().deny(Match::Destructive);
        assert_eq!(
            strict.verdict_for("ls", &read_only(), true).as_str(),
            "deny"
        );
        assert_eq!(
            strict.verdict_for("ls", &read_only(), false).as_str(),
            "allow"
        );

        let believing = AnnotationGate::new().believe_untrusted_hints(true);
        assert_eq!(
            believing.verdict_for("ls", &read_only(), true).as_str(),
            "allow"
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
            gate.verdict_for("cat_secrets", &read_only(), false)
                .as_str(),
            "deny",
            "a rule comes before the read-only step, and the first rule wins"
        );
        let retry_safe = ToolAnnotations::new().idempotent(true);
        assert_eq!(
            gate.verdict_for("put", &retry_safe, false).as_str(),
            "allow"
        );
        assert_eq!(gate.verdict_for("put", &retry_safe, true).as_str(), "ask");
        // Closed world, read-only: no rule matches, the read-only step does.
        let closed = read_only().open_world(false);
        assert_eq!(gate.verdict_for("recall", &closed, false).as_str(), "allow");
        // Open world and read-only: the open-world rule comes first.
        assert_eq!(
            gate.verdict_for("search", &read_only(), false).as_str(),
            "ask"
        );
    }

    #[test]
    fn the_steps_after_the_rules_can_be_changed() {
        let gate = AnnotationGate::new()
            .read_only_tools(Verdict::ask(""))
            .otherwise(Verdict::deny("not on this machine"));
        assert_eq!(gate.verdict_for("ls", &read_only(), false).as_str(), "ask");
        assert_eq!(
            gate.verdict_for("rm", &ToolAnnotations::new(), false),
            Verdict::deny("the approval policy denies it: not on this machine"),
            "the step's own reason is the why"
        );
        let trusting = AnnotationGate::new().otherwise(Verdict::Allow);
        assert_eq!(
            trusting
                .verdict_for("rm", &ToolAnnotations::new(), false)
                .as_str(),
            "allow"
        );
    }

    #[test]
    fn untrusted_and_name_rules_see_the_tool_not_its_claims() {
        let gate = AnnotationGate::new()
            .deny(Match::Untrusted)
            .allow(Match::tool("rm"));
        assert_eq!(gate.verdict_for("ls", &read_only(), true).as_str(), "deny");
        assert_eq!(
            gate.verdict_for("rm", &ToolAnnotations::new(), false)
                .as_str(),
            "allow"
        );
        assert_eq!(
            gate.verdict_for("rm", &ToolAnnotations::new(), true)
                .as_str(),
            "deny"
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
        assert_eq!(ruling.verdict().as_str(), "deny");
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
            (ruling.verdict().as_str(), ruling.decided_by()),
            ("ask", DecidedBy::Otherwise)
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
}
