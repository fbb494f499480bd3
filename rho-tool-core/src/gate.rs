//! The `Gate` trait: the check before a tool runs.

use async_trait::async_trait;

use crate::call::ToolCall;
use crate::tool::Tool;

/// What a gate decided about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run the tool.
    Allow,
    /// Do not run the tool; the model gets an error result with `reason`.
    Deny {
        /// Why, in words for the model.
        reason: String,
    },
}

impl Verdict {
    /// A denial with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }
}

/// A check of a call before its tool runs (`before_tool_call`).
///
/// The gate runs inside the call's task, so it may wait as long as it likes
/// (a person approving on a phone): the loop goes on with other calls, and
/// the tool's timeout clock starts only once the gate allows. A gate that
/// panics ends the call with an error result; it never takes the loop down.
///
/// # Example
///
/// ```
/// use async_trait::async_trait;
/// use rho_tool_core::{Gate, Tool, ToolCall, Verdict};
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
