//! Following a served call: from its start to its end, through the
//! questions its tool asks a client on 2026-07-28 or later, for one
//! request at a time (the request that started it, the retries that
//! resume it) or as a task.

use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{CallEnd, CallEvent, CallHandle, Executor};
use rmcp::model::{ClientCapabilities, InputResponses};
use serde_json::Value;
use tokio::time::Instant;

use super::client::McpClientError;
use super::elicit::InFlight;
use super::input::{AskedQuestions, Pending, Question};
use super::progress::Progress;

/// A call being followed, by the request that started it, by a retry
/// that resumed it, or by its task; parked between requests (see
/// `input`).
pub(crate) struct Following<E: Executor> {
    pub(crate) handle: CallHandle<E>,
    /// The questions its tool asks, on a client on 2026-07-28 or later.
    pub(crate) questions: Option<AskedQuestions>,
    /// A question waiting for the client's answers.
    pub(crate) pending: Option<Pending>,
    /// What the client declared with the request that started the call
    /// (2026-07-28 and later only).
    pub(crate) declared: Option<ClientCapabilities>,
    /// The tool and arguments of the request that started it, which a
    /// retry must repeat (2026-07-28 and later only).
    pub(crate) asked_as: Option<(String, Value)>,
    /// Set when the call may become a task: how long it runs answering
    /// nothing and asking nothing before it does.
    pub(crate) task_after: Option<Duration>,
    /// Whether the gate has let the call run.
    pub(crate) running: bool,
    pub(crate) output_schema: Option<Arc<Value>>,
    /// Kept for the observer only.
    pub(crate) observed_arguments: Option<Value>,
    /// The call's entry in the approver's directory, for as long as the
    /// call lives.
    pub(crate) _asks_this_client: Option<InFlight>,
}

/// What following a call for one request came to.
pub(crate) enum Step {
    /// The call ended (`None`: without an end, a guard only).
    Ended(Option<CallEnd>),
    /// The tool asks; the question is in `pending`.
    Asks,
    /// The tool asks what the client did not declare it can take; the
    /// question has failed.
    Missing(ClientCapabilities),
    /// The call has run its `task_after` answering and asking nothing: it
    /// goes on as a task.
    BecomesTask,
}

/// What came first while following a call.
enum Next {
    Event(Option<CallEvent>),
    Question(Option<Question>),
    TaskTime,
}

impl<E: Executor> Following<E> {
    /// Follows the call until it ends, asks what `responses` do not
    /// answer, or becomes a task, sending partial results to `progress`
    /// when the client asked for them; aborts the call when `stop` comes
    /// first.
    pub(crate) async fn follow(
        &mut self,
        responses: &mut InputResponses,
        declared: Option<&ClientCapabilities>,
        mut progress: Option<&mut Progress>,
        stop: impl Future<Output = ()>,
    ) -> Step {
        tokio::pin!(stop);
        // A call that runs already (resumed after a question) starts its
        // window again: it answered or asked something just now.
        let mut task_at = self
            .task_after
            .filter(|_| self.running)
            .map(|after| Instant::now() + after);
        loop {
            if let Some(mut pending) = self.pending.take() {
                if let Some(missing) = pending.missing_capabilities(declared) {
                    pending.fail(McpClientError::NotOffered {
                        what: "input",
                        why: "the client did not declare it can take it".to_owned(),
                    });
                    return Step::Missing(missing);
                }
                pending.take_answers(responses);
                match pending.finish() {
                    Ok(()) => continue,
                    Err(unanswered) => {
                        self.pending = Some(unanswered);
                        return Step::Asks;
                    }
                }
            }
            // Nothing reads partial results and nothing can be asked: await
            // the end alone, which keeps none of them.
            if progress.is_none() && self.questions.is_none() {
                tokio::select! {
                    end = &mut self.handle => return Step::Ended(Some(end)),
                    () = &mut stop => break,
                }
            }
            let questions = async {
                match self.questions.as_mut() {
                    Some(questions) => questions.recv().await,
                    None => std::future::pending().await,
                }
            };
            let task_time = async {
                match task_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let next = tokio::select! {
                // Events first: a call that ended, or began to run, is
                // told before a question it asked after.
                biased;
                event = self.handle.next_event() => Next::Event(event),
                question = questions => Next::Question(question),
                () = task_time => Next::TaskTime,
                () = &mut stop => break,
            };
            match next {
                Next::Event(Some(CallEvent::Ended(end))) => return Step::Ended(Some(end)),
                Next::Event(Some(CallEvent::Update(update))) => {
                    if let Some(progress) = progress.as_deref_mut() {
                        progress.report(&update);
                    }
                }
                Next::Event(Some(CallEvent::Running(_))) => {
                    self.running = true;
                    task_at = self.task_after.map(|after| Instant::now() + after);
                }
                // Waiting for approval or for a bound's place: still on the
                // server's side of the call, nothing to tell the client yet.
                Next::Event(Some(CallEvent::AwaitingApproval(_) | CallEvent::Queued(_))) => {}
                Next::Event(None) => return Step::Ended(None),
                Next::Question(Some(question)) => self.pending = Some(Pending::new(question)),
                // Every asker is gone (the tool dropped its client).
                Next::Question(None) => self.questions = None,
                Next::TaskTime => return Step::BecomesTask,
            }
        }
        Step::Ended(stop_call(&mut self.handle).await)
    }
}

/// Aborts the call and gives its end.
pub(crate) async fn stop_call<E: Executor>(handle: &mut CallHandle<E>) -> Option<CallEnd> {
    handle.abort();
    while let Some(event) = handle.next_event().await {
        if let CallEvent::Ended(end) = event {
            return Some(end);
        }
    }
    None
}
