//! Approval over MCP: the client's user is asked, through MCP elicitation,
//! before a call the host's gate wants a person to approve.
//!
//! [`ElicitationApprover`] is an [`Approver`]: give it to the host's
//! [`AnnotationGate`](rho_tool_core::AnnotationGate) (whose rules say which
//! calls need a person, by the tools' annotations and names) and to the
//! [`McpServer`](crate::McpServer) (which tells it which client each call
//! came from). A call that needs approval is then put to the person at the
//! client that made it, when that client can be asked (it declared the
//! elicitation capability, on a protocol version that still lets a server
//! ask); otherwise, or when asking fails, the host's own approver decides.
//!
//! As with any gate, the call's clock does not run while the person
//! thinks, and other calls go on meanwhile.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rho_tool_core::{ApprovalRequest, Approver, Verdict};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::json;

use super::client::McpClient;
use super::input::{Answer, Questions};

/// The key of the gate's question among a client's input requests.
const APPROVAL: &str = "approval";

/// Asks the client's user to approve a call, through MCP elicitation;
/// falls back to the host's approver when the client cannot be asked.
///
/// Cheap to clone; clones share the calls in flight.
///
/// ```
/// use std::sync::Arc;
/// use rho::mcp::{ElicitationApprover, McpServer};
/// use rho::gate::Match;
/// use rho::{AnnotationGate, Runner, ToolRegistry, Verdict};
///
/// # fn demo<E: rho::Executor>(executor: E) {
/// // No person to ask at the client: the host says no.
/// let asks = ElicitationApprover::new(|_request| async { Verdict::deny("nobody to ask") });
/// // Read-only tools run at once; destructive ones need a person.
/// let gate = AnnotationGate::new().ask(Match::Destructive);
/// let runner = Runner::new(executor)
///     .with_gate(gate)
///     .with_approver(asks.clone());
/// let server = McpServer::new(runner, ToolRegistry::new()).with_elicitation(asks);
/// # let _ = server;
/// # }
/// ```
#[derive(Clone)]
pub struct ElicitationApprover {
    /// The client of each call in flight, by the call's id.
    clients: Arc<Mutex<HashMap<String, McpClient>>>,
    fallback: Arc<dyn Approver>,
}

impl ElicitationApprover {
    /// Asks the clients that can be asked; `fallback` decides the rest.
    pub fn new(fallback: impl Approver + 'static) -> Self {
        Self {
            clients: Arc::default(),
            fallback: Arc::new(fallback),
        }
    }

    /// Records that call `call_id` came from `client`, until the returned
    /// guard is dropped.
    pub(crate) fn enter(&self, call_id: &str, client: McpClient) -> InFlight {
        self.lock().insert(call_id.to_owned(), client);
        InFlight {
            clients: self.clients.clone(),
            call_id: call_id.to_owned(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, McpClient>> {
        // Only map operations run under the lock.
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client of `call_id`, if it can be asked.
    fn askable(&self, call_id: &str) -> Option<McpClient> {
        let client = self.lock().get(call_id).cloned()?;
        let offered = client.capabilities()?.elicitation.is_some();
        offered.then_some(client)
    }
}

/// A call's entry in [`ElicitationApprover`]'s directory; removed on drop.
pub(crate) struct InFlight {
    clients: Arc<Mutex<HashMap<String, McpClient>>>,
    call_id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.call_id);
    }
}

#[async_trait]
impl Approver for ElicitationApprover {
    async fn approve(&self, request: ApprovalRequest) -> Verdict {
        let Some(client) = self.askable(&request.call_id) else {
            return self.fallback.approve(request).await;
        };
        let Some(params) = question(&request) else {
            return self.fallback.approve(request).await;
        };
        let asked = client
            .ask(Questions::new().elicit(APPROVAL, params))
            .await
            .map(|mut answers| answers.take(APPROVAL));
        match asked {
            Ok(Some(Answer::Elicit(answer))) => match answer.action {
                ElicitationAction::Accept
                    if answer
                        .content
                        .as_ref()
                        .and_then(|content| content.get("approve"))
                        .and_then(serde_json::Value::as_bool)
                        == Some(true) =>
                {
                    Verdict::Allow
                }
                ElicitationAction::Accept => Verdict::deny(format!(
                    "the user did not approve the call of `{}`",
                    request.tool
                )),
                ElicitationAction::Decline => {
                    Verdict::deny(format!("the user declined the call of `{}`", request.tool))
                }
                _ => Verdict::deny(format!("the user cancelled the call of `{}`", request.tool)),
            },
            // The client could not ask (no one at it, an error): the host
            // decides.
            Ok(_) | Err(_) => self.fallback.approve(request).await,
        }
    }
}

/// The elicitation that asks about `request`: its tool, why it is asked,
/// its arguments, and one yes-or-no field.
fn question(request: &ApprovalRequest) -> Option<ElicitRequestParams> {
    let mut arguments = request.arguments.to_string();
    if arguments.len() > 1000 {
        let mut end = 1000;
        while !arguments.is_char_boundary(end) {
            end -= 1;
        }
        arguments.truncate(end);
        arguments.push('…');
    }
    let trust = if request.untrusted {
        " (its code was not written by the host)"
    } else {
        ""
    };
    let message = format!(
        "Run the tool `{}`{trust}? Asked because: {}. Arguments: {arguments}",
        request.tool, request.reason
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": format!("Let `{}` run", request.tool),
                    "default": false,
                },
            },
            "required": ["approve"],
        },
    }))
    .ok()
}

impl fmt::Debug for ElicitationApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElicitationApprover")
            .field("calls_in_flight", &self.lock().len())
            .finish_non_exhaustive()
    }
}
