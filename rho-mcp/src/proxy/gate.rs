//! The proxy's gate: the policy's [`AnnotationGate`] decides each call,
//! `ask` is put to the person at the client through MCP elicitation, and
//! what was decided is kept for the audit log.
//!
//! The rules, their order and the hints' belief are the core gate's; what
//! is the proxy's own is how its texts name a rule (by its number and in
//! the policy file's words, so that a person finds it in the file) and
//! the record of each call's decision.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use rho_tool_core::{
    AnnotationGate, ApprovalRequest, Approver, DecidedBy, Decision, Gate, Match, Ruling, Tool,
    ToolCall, Verdict,
};

use super::decisions::{CallDecision, Decisions};
use crate::ElicitationApprover;

/// A [`Gate`] that decides each call by the policy's [`AnnotationGate`]
/// ([`ruling`](AnnotationGate::ruling)); the calls it says to ask about
/// are put to the user of the client that made them (elicitation).
///
/// A client that cannot be asked (it did not declare elicitation, or
/// asking failed) gets a denial that says so: nobody approved the call,
/// so it does not run. Give [`elicitation`](PolicyGate::elicitation) to
/// the [`McpServer`](crate::McpServer) (`with_elicitation`) so that it
/// knows which client each call came from.
#[derive(Clone)]
pub struct PolicyGate {
    policy: Arc<AnnotationGate>,
    asks: ElicitationApprover,
    decisions: Decisions,
}

impl PolicyGate {
    /// A gate deciding by `policy`'s rules and steps. Its approver, if it
    /// has one, is not asked: the person at the client is.
    pub fn new(policy: AnnotationGate) -> Self {
        let decisions = Decisions::default();
        let fallback = CannotAsk {
            decisions: decisions.clone(),
        };
        Self {
            policy: Arc::new(policy),
            asks: ElicitationApprover::new(fallback),
            decisions,
        }
    }

    /// The approver that asks the clients: give it to the server.
    pub fn elicitation(&self) -> ElicitationApprover {
        self.asks.clone()
    }

    /// The policy it decides by.
    pub fn policy(&self) -> &AnnotationGate {
        &self.policy
    }

    pub(crate) fn decisions(&self) -> Decisions {
        self.decisions.clone()
    }
}

/// Which rule decided, in the policy file's words: `rule 2 (tool
/// "delete_*")`, `rule 3 (annotation destructive)`, or `the default`.
pub(crate) fn because(ruling: &Ruling<'_>) -> String {
    match ruling.decided_by() {
        DecidedBy::Rule { number, rule } => format!("rule {number} ({})", words(rule.when())),
        // Neither the read-only step nor `otherwise` is written in a
        // policy file: both are its `default`.
        _ => "the default".to_owned(),
    }
}

/// A rule's test as the policy file writes it; a test no file can write
/// (a program's own gate) in the gate's words.
fn words(test: &Match) -> String {
    let quoted = |patterns: &[String]| {
        let quoted: Vec<String> = patterns
            .iter()
            .map(|pattern| format!("{pattern:?}"))
            .collect();
        format!("tool {}", quoted.join(" or "))
    };
    match test {
        Match::Glob(glob) => quoted(glob.patterns()),
        Match::Tool(name) => quoted(std::slice::from_ref(name)),
        Match::ReadOnly => "annotation read_only".to_owned(),
        Match::Destructive => "annotation destructive".to_owned(),
        Match::Idempotent => "annotation idempotent".to_owned(),
        Match::OpenWorld => "annotation open_world".to_owned(),
        Match::All(tests) if !tests.is_empty() => {
            let words: Vec<String> = tests.iter().map(words).collect();
            words.join(" and ")
        }
        other => other.to_string(),
    }
}

/// Denies, in words that say why: the client cannot be asked.
struct CannotAsk {
    decisions: Decisions,
}

#[async_trait]
impl Approver for CannotAsk {
    async fn approve(&self, request: ApprovalRequest) -> Verdict {
        self.decisions
            .update(&request.call_id, |decision| decision.asked = false);
        Verdict::deny(format!(
            "this MCP client cannot ask its user (it does not support elicitation, or asking \
             failed), so nobody approved the call of `{}`",
            request.tool
        ))
    }
}

#[async_trait]
impl Gate for PolicyGate {
    async fn check(&self, call: &ToolCall, tool: &dyn Tool) -> Verdict {
        let name = tool.name();
        let annotations = tool.annotations();
        let untrusted = tool.is_untrusted();
        let ruling = self.policy.ruling(name, &annotations, untrusted);
        let because = because(&ruling);
        let (rule, reason) = match ruling.decided_by() {
            DecidedBy::Rule { number, rule } => (Some(number), rule.reason()),
            _ => (None, None),
        };
        let mut decision = CallDecision {
            rule,
            action: ruling.decision(),
            asked: false,
            approved: None,
            denial: None,
        };
        let verdict = match ruling.decision() {
            Decision::Allow => Verdict::Allow,
            Decision::Deny => Verdict::deny(match reason {
                Some(reason) => {
                    format!("the proxy's policy denies calls of `{name}` ({because}): {reason}")
                }
                None => format!("the proxy's policy denies calls of `{name}` ({because})"),
            }),
            Decision::Ask => {
                // Recorded before asking: a call the client abandons while
                // its user thinks is still logged as asked.
                decision.asked = true;
                self.decisions.record(&call.id, decision.clone());
                let mut request =
                    ApprovalRequest::new(call.id.clone(), name, call.arguments.clone());
                request.annotations = annotations;
                request.untrusted = untrusted;
                request.reason = match reason {
                    Some(reason) => format!("the proxy's policy asks ({because}): {reason}"),
                    None => format!("the proxy's policy asks ({because})"),
                };
                match self.asks.approve(request).await {
                    Verdict::Allow => Verdict::Allow,
                    Verdict::Deny { reason } => Verdict::deny(format!(
                        "not approved: {reason} (the proxy's policy asks about it: {because})"
                    )),
                }
            }
        };
        let (approved, denial) = match &verdict {
            Verdict::Allow => (true, None),
            Verdict::Deny { reason } => (false, Some(reason.clone())),
        };
        match ruling.decision() {
            Decision::Ask => self.decisions.update(&call.id, |decision| {
                decision.approved = Some(approved);
                decision.denial = denial;
            }),
            Decision::Allow | Decision::Deny => {
                decision.approved = Some(approved);
                decision.denial = denial;
                self.decisions.record(&call.id, decision);
            }
        }
        verdict
    }
}

impl fmt::Debug for PolicyGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyGate")
            .field("policy", &self.policy)
            .field("decisions", &self.decisions)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use rho_tool_core::{Rule, ToolAnnotations, ToolGlob};

    use super::*;

    #[test]
    fn a_rule_is_named_in_the_files_words() {
        let files = ToolGlob::new(["read_*", "list_*"]).expect("globs");
        let gate = AnnotationGate::new()
            .rule(Rule::allow(Match::Glob(files)))
            .deny(Match::all([Match::tool("rm"), Match::OpenWorld]))
            .ask(Match::Untrusted)
            .otherwise(Decision::Deny);
        let none = ToolAnnotations::new();
        let cases = [
            ("list_dir", r#"rule 1 (tool "read_*" or "list_*")"#),
            ("rm", r#"rule 2 (tool "rm" and annotation open_world)"#),
        ];
        for (tool, expected) in cases {
            assert_eq!(because(&gate.ruling(tool, &none, false)), expected);
        }
        // A test no file writes keeps the gate's words.
        assert_eq!(
            because(&gate.ruling("x", &none, true)),
            "rule 3 (untrusted tools)"
        );
        assert_eq!(because(&gate.ruling("x", &none, false)), "the default");
    }
}
