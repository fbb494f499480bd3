//! One span per call, after the OpenTelemetry GenAI conventions.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rho_tool_core::{AllowAll, ToolContext, ToolOutput};
use serde_json::json;
use support::{Tools, call, echo, executor, runtime, tool};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata};

/// A span's name and fields.
type Recorded = (String, BTreeMap<String, String>);

/// Keeps every span's name and fields.
#[derive(Clone, Default)]
struct Spans {
    next: Arc<AtomicU64>,
    spans: Arc<Mutex<BTreeMap<u64, Recorded>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl tracing::Subscriber for Spans {
    fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = BTreeMap::new();
        span.record(&mut Fields(&mut fields));
        let name = span.metadata().name().to_owned();
        self.spans
            .lock()
            .expect("not poisoned")
            .insert(id, (name, fields));
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().expect("not poisoned");
        if let Some((_, fields)) = spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}
    fn event(&self, _event: &Event<'_>) {}
    fn enter(&self, _span: &Id) {}
    fn exit(&self, _span: &Id) {}
}

#[test]
fn each_call_has_an_execute_tool_span() {
    let runtime = runtime();
    let failing = tool("failing", |_args, _cx: ToolContext| async move {
        ToolOutput::error("no")
    });
    let tools = Tools::new().add(echo()).add(failing);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let spans = Spans::default();
    let entries = tracing::subscriber::with_default(spans.clone(), || {
        runtime.block_on(turns.turn([
            call("ok-1", "echo", json!({ "text": "hi" })),
            call("bad-2", "failing", json!({})),
        ]))
    });
    assert_eq!(entries.len(), 2);
    let spans = spans.spans.lock().expect("not poisoned");
    let calls: Vec<&BTreeMap<String, String>> = spans
        .values()
        .filter(|(name, _)| name == "execute_tool")
        .map(|(_, fields)| fields)
        .collect();
    assert_eq!(calls.len(), 2);
    let ok = calls
        .iter()
        .find(|f| f["gen_ai.tool.call.id"] == "ok-1")
        .expect("a span");
    assert_eq!(ok["otel.name"], "execute_tool echo");
    assert_eq!(ok["gen_ai.tool.name"], "echo");
    assert_eq!(ok["gen_ai.operation.name"], "execute_tool");
    assert!(!ok.contains_key("error.type"));
    let bad = calls
        .iter()
        .find(|f| f["gen_ai.tool.call.id"] == "bad-2")
        .expect("a span");
    assert_eq!(bad["gen_ai.tool.name"], "failing");
    assert_eq!(bad["error.type"], "failed");
}

/// A turn dropped mid-flight aborts its calls; a call whose tool had
/// already answered still ends with its own outcome, and its span says the
/// same as its end event, not "aborted".
#[test]
fn a_dropped_turn_records_each_calls_own_end_on_its_span() {
    let runtime = runtime();
    let hangs = tool("hangs", |_args, _cx: ToolContext| async move {
        std::future::pending::<()>().await;
        ToolOutput::text("never")
    });
    // Answers after a moment, so that the turn's first poll cannot see it
    // end: only the drop does.
    let soon = tool("soon", |_args, cx: ToolContext| async move {
        cx.sleep(std::time::Duration::from_millis(20)).await;
        ToolOutput::text("done")
    });
    let tools = Tools::new().add(soon).add(hangs);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let spans = Spans::default();
    tracing::subscriber::with_default(spans.clone(), || {
        let mut turn = Box::pin(turns.turn([
            call("ok-1", "soon", json!({})),
            call("hang-2", "hangs", json!({})),
        ]));
        // One poll starts the calls; then the first one's task answers.
        runtime.block_on(std::future::poll_fn(|cx| {
            let _ = turn.as_mut().poll(cx);
            std::task::Poll::Ready(())
        }));
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(turn);
    });
    let spans = spans.spans.lock().expect("not poisoned");
    let span_of = |id: &str| {
        spans
            .values()
            .find(|(name, fields)| name == "execute_tool" && fields["gen_ai.tool.call.id"] == id)
            .map(|(_, fields)| fields.clone())
            .expect("a span")
    };
    assert!(
        !span_of("ok-1").contains_key("error.type"),
        "{:?}",
        span_of("ok-1")
    );
    assert_eq!(span_of("hang-2")["error.type"], "aborted");
}
