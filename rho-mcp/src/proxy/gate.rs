//! The proxy's gate: the policy's [`AnnotationGate`] decides each call in
//! the policy file's words, and its approver puts an `ask` to the person
//! at the client through MCP elicitation; what was decided is kept for the
//! audit log.
//!
//! The rules, their order, the hints' belief and the asking itself are the
//! core's (an ask goes to the runner's approver); what is the proxy's own
//! is how its texts name a rule (by its number and in the policy file's
//! words, so that a person finds it in the file) and the record of each
//! call's decision.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use rho_tool_core::annotation_gate::{DecidedBy, Match, Ruling};
use rho_tool_core::{
    Allowances, AnnotationGate, ApprovalRequest, Approver, Gate, Tool, ToolCall, Verdict,
};

use super::decisions::{CallDecision, Decisions};
use crate::ElicitationApprover;

/// The proxy's gate: decides each call by the policy, an
/// [`AnnotationGate`], with texts that name the deciding rule by its number
/// in the policy file; its [`approver`](PolicyGate::approver) asks the
/// person at the client.
///
/// An `ask` goes, through the runner, to that approver: the client's user
/// is asked through MCP elicitation; a client that cannot ask (no
/// elicitation, or asking failed) gets a denial that says so.
#[derive(Clone)]
pub struct PolicyGate {
    policy: Arc<AnnotationGate>,
    asks: ElicitationApprover,
    decisions: Decisions,
    allowances: Allowances,
}

impl PolicyGate {
    /// A gate deciding by `policy`.
    pub fn new(policy: AnnotationGate) -> Self {
        let decisions = Decisions::default();
        let fallback = CannotAsk {
            decisions: decisions.clone(),
        };
        Self {
            policy: Arc::new(policy),
            asks: ElicitationApprover::new(fallback),
            decisions,
            allowances: Allowances::new(),
        }
    }

    /// Answers the policy's `ask` about a call one of `allowances` covers
    /// (the policy file's `[allowances]`): the call runs without asking
    /// anyone, and the audit log names the allowance. The tool's hints
    /// are read as the policy reads them (`believe_hints`).
    pub fn with_allowances(mut self, allowances: Allowances) -> Self {
        self.allowances = allowances;
        self
    }

    /// The allowances it answers asks with.
    pub fn allowances(&self) -> &Allowances {
        &self.allowances
    }

    /// The elicitation side of the approver: give it to the
    /// [`McpServer`](crate::McpServer) serving the calls
    /// ([`with_elicitation`](crate::McpServer::with_elicitation)), so it
    /// knows which client to ask about which call.
    pub fn elicitation(&self) -> ElicitationApprover {
        self.asks.clone()
    }

    /// The approver to give the runner
    /// ([`Runner::with_approver`](rho_tool_core::Runner::with_approver)):
    /// asks through [`elicitation`](PolicyGate::elicitation) and records
    /// the answer for the audit log.
    pub fn approver(&self) -> Arc<dyn Approver> {
        Arc::new(Recorded {
            asks: self.asks.clone(),
            decisions: self.decisions.clone(),
        })
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

/// The approver's last resort, when the client cannot be asked.
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

/// The proxy's approver: the client's user, through elicitation; the
/// answer is recorded for the audit log, and a denial says which rule
/// asked.
struct Recorded {
    asks: ElicitationApprover,
    decisions: Decisions,
}

#[async_trait]
impl Approver for Recorded {
    async fn approve(&self, request: ApprovalRequest) -> Verdict {
        let call_id = request.call_id.clone();
        // The gate's ask reason is "the proxy's policy asks about it: ...":
        // a denial ends with it, so the model learns which rule asked.
        let asked = request.reason.clone();
        let verdict = match self.asks.approve(request).await {
            allows @ (Verdict::Allow | Verdict::Remember(_)) => allows,
            Verdict::Deny { reason } | Verdict::Ask { reason } => {
                Verdict::deny(format!("{reason} ({asked})"))
            }
        };
        self.decisions.update(&call_id, |decision| {
            decision.approved = Some(verdict.allows());
            // As the runner words it for the model.
            decision.denial = verdict
                .reason()
                .map(|reason| format!("not approved: {reason}"));
        });
        verdict
    }
}

#[async_trait]
impl Gate for PolicyGate {
    async fn check(&self, call: &ToolCall, tool: &dyn Tool) -> Verdict {
        let name = tool.name();
        let (annotations, untrusted) = (tool.annotations(), tool.is_untrusted());
        let ruling = self.policy.ruling(name, &annotations, untrusted);
        let because = because(&ruling);
        let (rule, reason) = match ruling.decided_by() {
            DecidedBy::Rule { number, rule } => (Some(number), rule.reason()),
            _ => (None, None),
        };
        let why = |what: &str| match reason {
            Some(reason) => format!("{what} ({because}): {reason}"),
            None => format!("{what} ({because})"),
        };
        let verdict = match ruling.decided() {
            allows @ (Verdict::Allow | Verdict::Remember(_)) => allows.clone(),
            Verdict::Deny { .. } => {
                Verdict::deny(why(&format!("the proxy's policy denies calls of `{name}`")))
            }
            Verdict::Ask { .. } => Verdict::ask(match reason {
                Some(reason) => format!("the proxy's policy asks about it: {because}: {reason}"),
                None => format!("the proxy's policy asks about it: {because}"),
            }),
        };
        let action = verdict.as_str();
        // An ask answered in advance: asked of nobody.
        let allowance = match &verdict {
            Verdict::Ask { .. } => {
                let believe = !untrusted || self.policy.believes_untrusted_hints();
                let believed = annotations.believed(believe);
                self.allowances.covering(name, &call.arguments, &believed)
            }
            _ => None,
        };
        let verdict = if allowance.is_some() {
            Verdict::Allow
        } else {
            verdict
        };
        let asked = matches!(verdict, Verdict::Ask { .. });
        self.decisions.record(
            &call.id,
            CallDecision {
                rule,
                action,
                asked,
                // An ask's answer is the approver's to record.
                approved: (!asked).then_some(verdict.allows()),
                allowance: allowance.map(rho_tool_core::AllowanceId::get),
                denial: match &verdict {
                    Verdict::Deny { reason } => Some(reason.clone()),
                    _ => None,
                },
            },
        );
        verdict
    }
}

impl fmt::Debug for PolicyGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyGate")
            .field("policy", &self.policy)
            .field("decisions", &self.decisions)
            .field("allowances", &self.allowances)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use rho_tool_core::ToolAnnotations;
    use rho_tool_core::annotation_gate::{Rule, ToolGlob};

    use super::*;

    #[test]
    fn a_rule_is_named_in_the_files_words() {
        let files = ToolGlob::new(["read_*", "list_*"]).expect("globs");
        let gate = AnnotationGate::new()
            .rule(Rule::allow(Match::Glob(files)))
            .deny(Match::all([Match::tool("rm"), Match::OpenWorld]))
            .ask(Match::Untrusted)
            .otherwise(Verdict::deny(""));
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
