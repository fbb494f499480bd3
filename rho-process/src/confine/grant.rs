//! Asking for more: a denied call retried with more access, approved
//! through the gate.
//!
//! A confined tool that takes grants ([`ShellTool::with_grants`](crate::ShellTool::with_grants))
//! accepts a `grant` beside its arguments: the paths and network the call
//! needs beyond its confinement. Only the host's gate can approve one: a
//! [`GrantGate`] around the host's gate puts every call that carries a
//! grant to the [`Approver`], naming exactly what more is asked, and
//! records the approval for that call; the tool widens its confinement
//! only by a grant recorded for its own call. A grant without the gate's
//! approval is refused by the tool. The gate runs before the call's clock
//! starts, so the time a person spends deciding is not charged to the
//! command.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use rho_tool_core::{ApprovalRequest, Approver, Gate, Tool, ToolCall, Verdict, async_trait};

use super::Grant;

/// The argument a call's grant is given in.
pub const GRANT_ARGUMENT: &str = "grant";

/// The most approvals kept waiting for their call to start (a call
/// approved but aborted before its tool ran leaves its record behind;
/// the oldest go first).
const MAX_WAITING: usize = 1024;

impl Grant {
    /// What it asks for, in words: "write /a, /b; read /c; the network
    /// (full)".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let paths = |paths: &[std::path::PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.write.is_empty() {
            parts.push(format!("write {}", paths(&self.write)));
        }
        if !self.read.is_empty() {
            parts.push(format!("read {}", paths(&self.read)));
        }
        if let Some(network) = self.network {
            parts.push(format!("the network ({})", network.as_str()));
        }
        if !self.hosts.is_empty() {
            let hosts: Vec<String> = self.hosts.iter().map(ToString::to_string).collect();
            parts.push(format!("the hosts {}", hosts.join(", ")));
        }
        if parts.is_empty() {
            "nothing".to_owned()
        } else {
            parts.join("; ")
        }
    }
}

/// Approvals of grants, shared by a [`GrantGate`] (which records them)
/// and the tools that take grants (which use each once).
#[derive(Clone)]
pub struct Grants {
    approver: Arc<dyn Approver>,
    approved: Arc<Mutex<Vec<Approved>>>,
}

/// One approval: a call, its tool, the grant.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Approved {
    call_id: String,
    tool: String,
    grant: Grant,
}

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grants")
            .field("waiting", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl Grants {
    /// Grants decided by `approver` (usually the runner's own).
    pub fn new(approver: Arc<dyn Approver>) -> Self {
        Self {
            approver,
            approved: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// `inner` with grants put to the approver: see [`GrantGate`].
    pub fn gate<G: Gate>(&self, inner: G) -> GrantGate<G> {
        GrantGate {
            inner,
            grants: self.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Approved>> {
        // Nothing panics while holding the lock.
        self.approved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, approved: Approved) {
        let mut waiting = self.lock();
        if waiting.len() >= MAX_WAITING {
            waiting.remove(0);
        }
        waiting.push(approved);
    }

    /// Whether `grant` was approved for call `call_id` of `tool`; the
    /// approval is used up.
    pub(crate) fn take(&self, call_id: &str, tool: &str, grant: &Grant) -> bool {
        let mut waiting = self.lock();
        let found = waiting
            .iter()
            .position(|a| a.call_id == call_id && a.tool == tool && &a.grant == grant);
        found.map(|at| waiting.remove(at)).is_some()
    }
}

/// A gate that puts every call carrying a [`GRANT_ARGUMENT`] to the
/// approver, after its inner gate: denied if the inner gate denies;
/// otherwise the approver is asked, with a reason naming exactly the
/// paths and network asked for (and the inner gate's own reason, if it
/// asked too). Calls without a grant are the inner gate's alone.
#[derive(Debug)]
pub struct GrantGate<G> {
    inner: G,
    grants: Grants,
}

#[async_trait]
impl<G: Gate> Gate for GrantGate<G> {
    async fn check(&self, call: &ToolCall, tool: &dyn Tool) -> Verdict {
        let verdict = self.inner.check(call, tool).await;
        let Some(asked) = call.arguments.get(GRANT_ARGUMENT) else {
            return verdict;
        };
        let also = match &verdict {
            Verdict::Deny { .. } => return verdict,
            Verdict::Ask { reason } if !reason.is_empty() => format!(" (and: {reason})"),
            Verdict::Ask { .. } | Verdict::Allow | Verdict::Remember(_) => String::new(),
        };
        let grant: Grant = match serde_json::from_value(asked.clone()) {
            Ok(grant) => grant,
            Err(error) => {
                return Verdict::deny(format!("the `{GRANT_ARGUMENT}` is not valid: {error}"));
            }
        };
        let mut reason = format!(
            "`{}` asks for more than its confinement allows: {}",
            tool.name(),
            grant.describe()
        );
        let _ = write!(reason, "{also}");
        let mut request =
            ApprovalRequest::new(call.id.clone(), tool.name(), call.arguments.clone());
        request.annotations = tool.annotations();
        request.untrusted = tool.is_untrusted();
        request.reason = reason;
        match self.grants.approver.approve(request).await {
            answer @ (Verdict::Allow | Verdict::Remember(_)) => {
                self.grants.record(Approved {
                    call_id: call.id.clone(),
                    tool: tool.name().to_owned(),
                    grant,
                });
                // A grant is for this call only; what is remembered is the
                // runner's to keep (and no allowance by command covers a
                // call that asks for a grant), the approver's first.
                match (answer, verdict) {
                    (remember @ Verdict::Remember(_), _) | (_, remember @ Verdict::Remember(_)) => {
                        remember
                    }
                    _ => Verdict::Allow,
                }
            }
            Verdict::Deny { reason } => {
                Verdict::deny(format!("more access was not approved: {reason}"))
            }
            Verdict::Ask { .. } => {
                Verdict::deny("more access was not approved: the approver did not decide")
            }
        }
    }
}

/// The confinement of one call of `tool`: `base`, widened by the call's
/// grant if `grants`' gate approved exactly that grant for this call.
///
/// # Errors
///
/// A text for the model: the tool takes no grants, the grant is not
/// valid, or it was not approved for this call.
pub(crate) fn confinement_for(
    grants: Option<&Grants>,
    base: &super::Confinement,
    tool: &str,
    arguments: &serde_json::Value,
    call_id: &str,
) -> Result<super::Confinement, String> {
    let Some(asked) = arguments.get(GRANT_ARGUMENT) else {
        return Ok(base.clone());
    };
    let Some(grants) = grants else {
        return Err(format!(
            "tool `{tool}` takes no `{GRANT_ARGUMENT}`: its confinement is fixed"
        ));
    };
    let grant: Grant = serde_json::from_value(asked.clone())
        .map_err(|error| format!("tool `{tool}`: the `{GRANT_ARGUMENT}` is not valid: {error}"))?;
    if !grants.take(call_id, tool, &grant) {
        return Err(format!(
            "tool `{tool}` was not run: its `{GRANT_ARGUMENT}` ({}) was not approved by the host's gate for this call",
            grant.describe()
        ));
    }
    Ok(base.widened(&grant))
}

/// What a tool that takes grants adds to a denied call's result.
pub(crate) fn how_to_ask() -> String {
    format!(
        "If the command needs more than its confinement allows, call again with a `{GRANT_ARGUMENT}` naming exactly what: {{\"write\": [paths], \"read\": [paths], \"hosts\": [host names], \"network\": \"full\"}}; a person is asked first."
    )
}

/// The JSON Schema of a grant, for a tool's parameters.
pub(crate) fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "More access for this one call, if it was denied without it; a person approves it first.",
        "properties": {
            "read": { "type": "array", "items": { "type": "string" } },
            "write": { "type": "array", "items": { "type": "string" } },
            "hosts": {
                "type": "array",
                "items": { "type": "string" },
                "description": "Host names to reach, such as `pypi.org` or `*.npmjs.org:443`."
            },
            "network": { "enum": ["none", "loopback", "hosts", "full"] }
        },
        "additionalProperties": false,
    })
}
