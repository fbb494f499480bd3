//! tracing: one span per call, after the OpenTelemetry GenAI conventions.

use rho_tool_core::Outcome;
use tracing::Span;
use tracing::field::Empty;

/// The span of one call: `execute_tool {tool}` (through `otel.name`), with
/// `gen_ai.operation.name`, `gen_ai.tool.name` and `gen_ai.tool.call.id`;
/// `error.type` is recorded when the call does not succeed. It opens when
/// the call starts and closes when it ends; the turn enters it while it
/// polls the call.
pub(crate) fn call_span(tool: &str, call_id: &str) -> Span {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        error.type = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("execute_tool {tool}"));
    }
    span
}

/// Records how the call ended on its span.
pub(crate) fn record_end(span: &Span, outcome: Outcome) {
    if outcome != Outcome::Succeeded {
        span.record("error.type", outcome.as_str());
    }
}
