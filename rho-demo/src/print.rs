//! How the demo shows events: readable lines, or one JSON object a line.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rho_tool_core::{CallEnd, CallEvent, Content, Running, Update};
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
    /// The gate did not answer at once: a person is being asked.
    AwaitingApproval { call_id: String },
    /// The gate allowed; the clock started.
    Running(Running),
    /// A partial result of a running tool.
    Update(Update),
    /// The call ended.
    End(CallEnd),
    /// Something this demo does not show.
    Other,
}

impl From<CallEvent> for DemoEvent {
    fn from(event: CallEvent) -> Self {
        match event {
            CallEvent::AwaitingGate(call_id) => DemoEvent::AwaitingApproval { call_id },
            CallEvent::Running(running) => DemoEvent::Running(running),
            CallEvent::Update(update) => DemoEvent::Update(update),
            CallEvent::Ended(end) => DemoEvent::End(end),
            // CallEvent is non-exhaustive: later kinds of progress are not
            // shown by this demo.
            _ => DemoEvent::Other,
        }
    }
}

pub(crate) struct Printer {
    json: bool,
    /// Each call's tool, for the events that carry only the call's id.
    tools: BTreeMap<String, String>,
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
            tools: BTreeMap::new(),
            runtime: runtime.to_owned(),
            started,
        }
    }

    pub(crate) fn print(&mut self, event: &DemoEvent) {
        let at = self.started.elapsed();
        if let DemoEvent::Start { call_id, tool, .. } = event {
            self.tools.insert(call_id.clone(), tool.clone());
        }
        if self.json {
            println!("{}", Self::json_line(at, event));
        } else {
            println!("{:>7.3}s  {}", at.as_secs_f64(), self.text_line(event));
        }
    }

    fn tool_of(&self, call_id: &str) -> &str {
        self.tools.get(call_id).map_or("?", String::as_str)
    }

    fn text_line(&self, event: &DemoEvent) -> String {
        match event {
            DemoEvent::Start {
                call_id,
                tool,
                arguments,
            } => format!("start     {call_id:<7} {tool:<12} {arguments}"),
            DemoEvent::AwaitingApproval { call_id } => {
                format!(
                    "approval  {call_id:<7} {:<12} waiting for a person to approve",
                    self.tool_of(call_id)
                )
            }
            DemoEvent::Update(update) => format!(
                "update    {:<7} {:<12} {}",
                update.call_id,
                self.tool_of(&update.call_id),
                update.partial
            ),
            DemoEvent::Other => String::new(),
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
            DemoEvent::AwaitingApproval { call_id } => json!({
                "event": "tool_approval_wait", "at_ms": at_ms, "call_id": call_id,
            }),
            DemoEvent::Update(update) => json!({
                "event": "tool_execution_update", "at_ms": at_ms, "call_id": update.call_id,
                "partial": update.partial, "dropped_before": update.dropped_before,
            }),
            DemoEvent::Other => json!({ "event": "other", "at_ms": at_ms }),
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

    /// A line that opens a part of the session.
    pub(crate) fn heading(&self, title: &str) {
        if self.json {
            println!("{}", json!({ "event": "heading", "title": title }));
        } else {
            println!("\n== {title}");
        }
    }

    /// The health of the agent's tools, as the source's accounting has it.
    pub(crate) fn health(&self, table: &str) {
        if self.json {
            println!("{}", json!({ "event": "health", "table": table }));
        } else {
            println!("\n== health of the agent-written tools\n{table}");
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
                "{} on {} by {:.2}s: {}; the loop was never blocked.",
                match ends.len() {
                    1 => "1 call".to_owned(),
                    n => format!("{n} calls"),
                },
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
