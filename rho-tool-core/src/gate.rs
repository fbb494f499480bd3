//! The check before a tool runs: the [`Gate`], its [`Verdict`], and the
//! [`Approver`] a gate's question goes to.

use std::future::Future;

use async_trait::async_trait;

use crate::allowance::Allowance;
use crate::annotations::ToolAnnotations;
use crate::call::ToolCall;
use crate::tool::Tool;

/// What a gate decided about a call: allow it, ask someone, or deny it.
///
/// The one allow/ask/deny type of rho: a [`Gate`] returns it, an
/// [`Approver`](crate::Approver) answers with it (and may ask that its
/// allow be remembered, [`Verdict::Remember`]), and the rules of an
/// [`AnnotationGate`](crate::AnnotationGate) (and so the MCP proxy's
/// policy) are written in it.
///
/// [`Ask`](Verdict::Ask) hands the call to the runner's approver
/// ([`Runner::with_approver`](crate::Runner::with_approver)), still inside
/// the call's task and before any clock runs; the approver's answer
/// decides. A call one of the runner's remembered
/// [`Allowances`](crate::Allowances) covers is allowed without asking.
/// Without an approver, a call that needs one is denied with a
/// text that says so. Written `"allow"`, `"ask"` or `"deny"` where a
/// configuration names one ([`as_str`](Verdict::as_str)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Run the tool.
    Allow,
    /// Ask the runner's approver; `reason` tells it why it is asked.
    Ask {
        /// Why approval is needed, in words for the person asked.
        reason: String,
    },
    /// Do not run the tool; the model gets an error result with `reason`.
    Deny {
        /// Why, in words for the model.
        reason: String,
    },
    /// Run the tool, and allow the calls the [`Allowance`] covers from now
    /// on without asking: "allow for the rest of this session". The
    /// runner keeps it in its [`Allowances`](crate::Allowances) when it
    /// could cover a call of the tool asked about (it names that tool, and
    /// the store lets it cover the tool if the tool is destructive); the
    /// call itself is allowed either way. Written `"allow"`.
    Remember(Allowance),
}

impl Verdict {
    /// A denial with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }

    /// A question for the approver, with `reason`.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::Ask {
            reason: reason.into(),
        }
    }

    /// `"allow"`, `"ask"` or `"deny"`: the verdict's word in a
    /// configuration or a log.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow | Self::Remember(_) => "allow",
            Self::Ask { .. } => "ask",
            Self::Deny { .. } => "deny",
        }
    }

    /// Whether the call may run: an allow, remembered or not.
    pub fn allows(&self) -> bool {
        matches!(self, Self::Allow | Self::Remember(_))
    }

    /// The reason of an ask or a denial; `None` for an allow.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Allow | Self::Remember(_) => None,
            Self::Ask { reason } | Self::Deny { reason } => Some(reason),
        }
    }
}

impl std::fmt::Display for Verdict {
    /// The word, then the reason when there is one: `deny: not today`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason() {
            Some(reason) if !reason.is_empty() => write!(f, "{}: {reason}", self.as_str()),
            _ => f.write_str(self.as_str()),
        }
    }
}

/// A check of a call before its tool runs (`before_tool_call`).
///
/// The gate runs inside the call's task, so it may wait as long as it likes
/// (a person approving on a phone): the loop goes on with other calls, and
/// the tool's timeout clock starts only once the gate allows. A gate that
/// panics ends the call with an error result; it never takes the loop down.
/// A gate that cannot decide alone returns [`Verdict::Ask`]: the runner's
/// [`Approver`](crate::Approver) decides then, in the same task.
///
/// # Example
///
/// ```
/// use rho::{Gate, Tool, ToolCall, Verdict, async_trait};
///
/// /// Refuses every tool whose code the host did not write.
/// struct TrustedOnly;
///
/// #[async_trait]
/// impl Gate for TrustedOnly {
///     async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
///         if tool.is_untrusted() {
///             Verdict::deny("untrusted tools are disabled in this session")
///         } else {
///             Verdict::Allow
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait Gate: Send + Sync {
    /// Decides whether `call` of `tool` may run.
    async fn check(&self, call: &ToolCall, tool: &dyn Tool) -> Verdict;
}

/// The default gate: allows every call at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllowAll;

#[async_trait]
impl Gate for AllowAll {
    async fn check(&self, _call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        Verdict::Allow
    }
}

/// What a person (or a program) needs to decide about one call: the
/// runner hands it to its [`Approver`] when the gate answers
/// [`Verdict::Ask`].
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
    /// Why the gate asks, in words: the reason of its [`Verdict::Ask`]
    /// (an [`AnnotationGate`](crate::AnnotationGate) names the rule that
    /// matched, "destructive tools", or says that no rule allowed the call).
    pub reason: String,
}

impl ApprovalRequest {
    /// A request about call `call_id` of `tool` with `arguments`, with no
    /// annotations, trusted, and no reason; set the public fields for the
    /// rest. For testing an approver; the runner makes its own.
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

/// Decides a call the gate asked about ([`Verdict::Ask`]): usually by
/// asking a person. Set on the runner
/// ([`Runner::with_approver`](crate::Runner::with_approver)).
///
/// It runs inside the call's task, after the gate: it may wait as long as
/// it likes (no timeout clock runs yet, and the loop goes on with other
/// calls), and a panic in it ends the call as crashed, never the loop. A
/// denial's reason reaches the model, after "not approved: ". An approver
/// that answers [`Verdict::Ask`] has not decided: the call is denied, and
/// the text says so. One that answers [`Verdict::Remember`] allows the
/// call and the calls the allowance covers from then on: it is not asked
/// about those (see [`Allowance::prefix_of`] for "allow `git status` for
/// the session").
///
/// Implemented for every `Fn(ApprovalRequest) -> impl Future<Output =
/// Verdict>` that is `Send + Sync` with a `Send` future, so a closure
/// returning an `async move` block will do:
///
/// ```
/// use std::sync::Arc;
/// use rho::{ApprovalRequest, Approver, Verdict};
///
/// let approver: Arc<dyn Approver> = Arc::new(|request: ApprovalRequest| async move {
///     // Ask someone here; this one refuses anything that touches `/etc`.
///     if request.arguments.to_string().contains("/etc") {
///         Verdict::deny("nothing under /etc")
///     } else {
///         Verdict::Allow
///     }
/// });
/// # let _ = approver;
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_verdict_shows_its_word_and_reason() {
        assert_eq!(Verdict::Allow.to_string(), "allow");
        assert_eq!(Verdict::ask("").to_string(), "ask");
        assert_eq!(Verdict::deny("not today").to_string(), "deny: not today");
    }
}
