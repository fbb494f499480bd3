//! How the demo shows events: readable lines, or one JSON object a line.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rho_tool_core::{CallEnd, CallEvent, Content, Running};
use serde_json::json;

/// What the demo prints.
#[derive(Debug)]
pub(crate) enum DemoEvent {
    /// The loop started a call (before its gate).
    Start {
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
    },
    /// The gate asked a person and is waiting.
    AwaitingApproval { call_id: String, tool: String },
    /// The gate allowed; the clock started.
    Running(Running),
    /// The call ended.
    End(CallEnd),
}

impl From<CallEvent> for DemoEvent {
    fn from(event: CallEvent) -> Self {
        match event {
            CallEvent::Running(running) => DemoEvent::Running(running),
            CallEvent::Ended(end) => DemoEvent::End(end),
        }
    }
}

pub(crate) struct Printer {
    json: bool,
    runtime: String,
    started: Instant,
}

fn millis(duration: Duration) -> u128 {
    duration.as_millis()
}

impl Printer {
    pub(crate) fn new(json: bool, runtime: &str, started: Instant) -> Self {
        Self {
            json,
            runtime: runtime.to_owned(),
            started,
        }
    }

    pub(crate) fn print(&mut self, event: &DemoEvent) {
        let at = self.started.elapsed();
        if self.json {
            println!("{}", Self::json_line(at, event));
        } else {
            println!("{:>7.3}s  {}", at.as_secs_f64(), Self::text_line(event));
        }
    }

    fn text_line(event: &DemoEvent) -> String {
        match event {
            DemoEvent::Start {
                call_id,
                tool,
                arguments,
            } => format!("start     {call_id:<7} {tool:<12} {arguments}"),
            DemoEvent::AwaitingApproval { call_id, tool } => {
                format!("approval  {call_id:<7} {tool:<12} waiting for a person to approve")
            }
            DemoEvent::Running(running) => format!(
                "running   {:<7} {:<12} clock starts now (waited {} ms for approval)",
                running.call_id,
                running.tool,
                millis(running.waited)
            ),
            DemoEvent::End(end) => {
                let ran = end.ran.map_or_else(
                    || "never ran".to_owned(),
                    |ran| format!("ran {} ms", millis(ran)),
                );
                let mut line = format!(
                    "end       {:<7} {:<12} {:<10} waited {} ms, {ran}\n{:>20}{}",
                    end.call_id,
                    end.tool,
                    end.outcome.as_str(),
                    millis(end.waited),
                    "-> ",
                    describe_content(&end.result.content),
                );
                if let Some(details) = &end.result.details {
                    line.push_str(&format!("\n{:>20}details {}", "", details.to_json()));
                }
                line
            }
        }
    }

    fn json_line(at: Duration, event: &DemoEvent) -> serde_json::Value {
        let at_ms = at.as_secs_f64() * 1000.0;
        match event {
            DemoEvent::Start {
                call_id,
                tool,
                arguments,
            } => json!({
                "event": "tool_execution_start", "at_ms": at_ms,
                "call_id": call_id, "tool": tool, "arguments": arguments,
            }),
            DemoEvent::AwaitingApproval { call_id, tool } => json!({
                "event": "tool_approval_wait", "at_ms": at_ms, "call_id": call_id, "tool": tool,
            }),
            DemoEvent::Running(running) => json!({
                "event": "tool_execution_running", "at_ms": at_ms, "call_id": running.call_id,
                "tool": running.tool,
                "task": running.task.as_u64(), "waited_ms": millis(running.waited),
            }),
            DemoEvent::End(end) => json!({
                "event": "tool_execution_end", "at_ms": at_ms, "call_id": end.call_id,
                "tool": end.tool, "outcome": end.outcome.as_str(),
                "waited_ms": millis(end.waited), "ran_ms": end.ran.map(millis),
                "result": end.result,
            }),
        }
    }

    pub(crate) fn summary(&self, ends: &[CallEnd]) {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for end in ends {
            *counts.entry(end.outcome.as_str()).or_default() += 1;
        }
        let took = self.started.elapsed();
        if self.json {
            println!(
                "{}",
                json!({ "event": "turn_end", "runtime": self.runtime, "calls": ends.len(),
                        "outcomes": counts, "took_ms": took.as_secs_f64() * 1000.0 })
            );
        } else {
            let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
            println!(
                "\n{} calls on {} in {:.2}s: {}; the loop was never blocked.",
                ends.len(),
                self.runtime,
                took.as_secs_f64(),
                parts.join(", ")
            );
        }
    }
}

fn describe_content(content: &[Content]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|part| match part {
            Content::Text { text } => format!("{text:?}"),
            Content::Image { mime_type, data } => {
                format!("[{mime_type} image, {} bytes]", data.len())
            }
        })
        .collect();
    parts.join(" + ")
}
