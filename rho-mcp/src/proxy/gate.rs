//! The proxy's gate: the policy's verdict on each call, with `ask` put to
//! the person at the client through MCP elicitation.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use rho_tool_core::{ApprovalRequest, Approver, Gate, Tool, ToolCall, Verdict};

use super::decisions::{Decision, Decisions};
use super::policy::{Action, Policy};
use crate::ElicitationApprover;

/// A [`Gate`] that decides each call by a [`Policy`]; the calls it says
/// to ask about are put to the user of the client that made them
/// (elicitation).
///
/// A client that cannot be asked (it did not declare elicitation, or
/// asking failed) gets a denial that says so: nobody approved the call,
/// so it does not run. Give [`elicitation`](PolicyGate::elicitation) to
/// the [`McpServer`](crate::McpServer) (`with_elicitation`) so that it
/// knows which client each call came from.
#[derive(Clone)]
pub struct PolicyGate {
    policy: Arc<Policy>,
    asks: ElicitationApprover,
    decisions: Decisions,
}

impl PolicyGate {
    /// A gate deciding by `policy`.
    pub fn new(policy: Policy) -> Self {
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
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub(crate) fn decisions(&self) -> Decisions {
        self.decisions.clone()
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
        let ruling = self.policy.decide(name, &annotations);
        let because = ruling.because();
        let reason = ruling.rule.and_then(|rule| rule.reason());
        let mut decision = Decision {
            rule: ruling.rule.map(|rule| rule.number()),
            action: ruling.action,
            asked: false,
            approved: None,
            denial: None,
        };
        let verdict = match ruling.action {
            Action::Allow => Verdict::Allow,
            Action::Deny => Verdict::deny(match reason {
                Some(reason) => {
                    format!("the proxy's policy denies calls of `{name}` ({because}): {reason}")
                }
                None => format!("the proxy's policy denies calls of `{name}` ({because})"),
            }),
            Action::Ask => {
                decision.asked = true;
                self.decisions.record(&call.id, decision.clone());
                let mut request =
                    ApprovalRequest::new(call.id.clone(), name, call.arguments.clone());
                request.annotations = annotations;
                request.untrusted = tool.is_untrusted();
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
        match ruling.action {
            Action::Ask => self.decisions.update(&call.id, |decision| {
                decision.approved = Some(approved);
                decision.denial = denial;
            }),
            _ => {
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
