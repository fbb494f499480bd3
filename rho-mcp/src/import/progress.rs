//! Progress notifications routed to their calls as the transport reads
//! them, in the order the server sent them.
//!
//! rmcp hands each notification to a task of its own. On a runtime with
//! more than one worker those tasks run side by side, so a call's progress
//! could reach it out of order (step 3 before step 2), and progress the
//! server sent just before its answer could still be on its way when the
//! answer ended the call. So the connection's transport is wrapped:
//! progress for a call whose route is registered goes to that route right
//! there, in the one task that reads the server's messages, before any
//! later message is read.
//!
//! A call registers its route right after rmcp queued its request, so a
//! server quick enough can report progress before. That goes to rmcp's
//! handler, which gives the call one more chance, and is counted: a
//! call's answer waits (a few turns of the runtime) only while such
//! progress is passed on and not yet handled.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, ProgressNotificationParam, ProgressToken,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// Where each call in flight wants its progress, by progress token.
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, mpsc::Sender<Value>>>>;

/// Sends `params` to its call's route, if it has one; `false` when it
/// has none.
pub(crate) fn route(routes: &ProgressRoutes, params: &ProgressNotificationParam) -> bool {
    let route = routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&params.progress_token)
        .cloned();
    match route {
        Some(route) => {
            // A call that is not reading its progress loses some: progress
            // is a stream of snapshots, the next one says more.
            let _ = route.try_send(progress_value(params));
            true
        }
        None => false,
    }
}

/// Progress passed on to rmcp's handler, counted as passed and as
/// handled.
#[derive(Debug, Default)]
pub(crate) struct HandlerTally {
    passed: AtomicU64,
    handled: AtomicU64,
}

impl HandlerTally {
    /// The handler is done with one (routed or dropped).
    pub(crate) fn handled_one(&self) {
        self.handled.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the handler is done with all it was passed.
    pub(crate) fn settled(&self) -> bool {
        self.handled.load(Ordering::Acquire) >= self.passed.load(Ordering::Acquire)
    }
}

/// `inner`, routing progress as it reads it.
pub(crate) struct Routed<T> {
    inner: T,
    routes: ProgressRoutes,
    tally: Arc<HandlerTally>,
}

impl<T> Routed<T> {
    pub(crate) fn new(inner: T, routes: ProgressRoutes, tally: Arc<HandlerTally>) -> Self {
        Self {
            inner,
            routes,
            tally,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            if let JsonRpcMessage::Notification(notification) = &message
                && let ServerNotification::ProgressNotification(progress) =
                    &notification.notification
            {
                if route(&self.routes, &progress.params) {
                    continue;
                }
                self.tally.passed.fetch_add(1, Ordering::AcqRel);
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A progress notification as the call's partial result:
/// `{"progress": 2, "total": 5, "message": "..."}`.
fn progress_value(params: &ProgressNotificationParam) -> Value {
    let mut partial = Map::new();
    partial.insert("progress".to_owned(), number(params.progress));
    if let Some(total) = params.total {
        partial.insert("total".to_owned(), number(total));
    }
    if let Some(message) = &params.message {
        partial.insert("message".to_owned(), Value::String(message.clone()));
    }
    Value::Object(partial)
}

/// `value` as JSON: an integer when it is one, so `2.0` reads as `2`.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    #[test]
    fn settled_until_what_was_passed_is_handled() {
        let tally = HandlerTally::default();
        assert!(tally.settled());
        tally.passed.fetch_add(2, Ordering::AcqRel);
        assert!(!tally.settled());
        tally.handled_one();
        assert!(!tally.settled());
        tally.handled_one();
        assert!(tally.settled());
    }

    #[test]
    fn progress_goes_to_its_route_as_a_partial_result() {
        let routes = ProgressRoutes::default();
        let (to, mut from) = mpsc::channel(4);
        let token = ProgressToken(NumberOrString::Number(7));
        routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), to);
        let params = ProgressNotificationParam::new(token, 2.0)
            .with_total(5.0)
            .with_message("half");
        assert!(route(&routes, &params));
        assert_eq!(
            from.try_recv().ok(),
            Some(serde_json::json!({ "progress": 2, "total": 5, "message": "half" }))
        );
        let elsewhere =
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(8)), 1.0);
        assert!(!route(&routes, &elsewhere), "no route for that token");
    }
}
