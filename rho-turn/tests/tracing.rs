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
