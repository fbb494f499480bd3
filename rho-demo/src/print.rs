//! How the demo shows a session: readable lines, or one JSON object a line.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rho::{Content, SessionEntry, TurnEvent};
use serde_json::json;

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

    /// One event of a call, as it happened.
    pub(crate) fn print(&mut self, event: &TurnEvent) {
        let at = self.started.elapsed();
        if self.json {
            let mut line = serde_json::to_value(event).unwrap_or_else(
                |error| json!({ "type": "unprintable", "error": error.to_string() }),
            );
            if let Some(fields) = line.as_object_mut() {
                fields.insert("at_ms".to_owned(), json!(at.as_secs_f64() * 1000.0));
            }
            println!("{line}");
        } else if let Some(text) = Self::text_line(event) {
            println!("{:>7.3}s  {text}", at.as_secs_f64());
        }
    }

    fn text_line(event: &TurnEvent) -> Option<String> {
        // A call a program made is shown under it, indented.
        let indent = if event.parent_call_id().is_some() {
            "  "
        } else {
            ""
        };
        let head = |what: &str| {
            format!(
                "{indent}{what:<9} {:<9} {:<12}",
                event.call_id(),
                event.tool()
            )
        };
        let line = match event {
            TurnEvent::ToolExecutionStart(start) => {
                format!("{} {}", head("start"), start.arguments)
            }
            TurnEvent::ToolExecutionAwaitingApproval(_) => {
                format!("{} waiting for a person to approve", head("approval"))
            }
            TurnEvent::ToolExecutionQueued(queued) => {
                format!(
                    "{} waiting for {}",
                    head("queued"),
                    queued.record().waiting_for
                )
            }
            TurnEvent::ToolExecutionRunning(running) if running.record().queued.is_zero() => {
                format!(
                    "{} clock starts now (waited {} ms for approval)",
                    head("running"),
                    millis(running.record().waited)
                )
            }
            TurnEvent::ToolExecutionRunning(running) => format!(
                "{} clock starts now (waited {} ms for approval, {} ms for its place)",
                head("running"),
                millis(running.record().waited),
                millis(running.record().queued)
            ),
            TurnEvent::ToolExecutionUpdate(update) => {
                format!("{} {}", head("update"), update.record().partial)
            }
            TurnEvent::ToolExecutionEnd(end) => {
                let end = end.record();
                let ran = end.ran.map_or_else(
                    || "never ran".to_owned(),
                    |ran| format!("ran {} ms", millis(ran)),
                );
                let mut line = format!(
                    "{} {:<10} waited {} ms, {ran}\n{:>22}{}",
                    head("end"),
                    end.outcome.as_str(),
                    millis(end.waited),
                    "-> ",
                    describe_content(end.result.content()),
                );
                if let Some(details) = &end.result.details {
                    line.push_str(&format!("\n{:>22}details {details}", ""));
                }
                line
            }
        };
        Some(line)
    }

    /// A line that opens a part of the session.
    pub(crate) fn heading(&self, title: &str) {
        if self.json {
            println!("{}", json!({ "type": "heading", "title": title }));
        } else {
            println!("\n== {title}");
        }
    }

    /// How the turn's calls ended, and what the session keeps of details
    /// (subscribers saw them whole in the end lines above).
    pub(crate) fn summary(&self, entries: &[SessionEntry]) {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for entry in entries {
            *counts.entry(entry.outcome.as_str()).or_default() += 1;
        }
        let took = self.started.elapsed();
        if self.json {
            println!(
                "{}",
                json!({ "type": "turn_end", "runtime": self.runtime, "calls": entries.len(),
                        "outcomes": counts, "at_ms": took.as_secs_f64() * 1000.0,
                        "session": entries })
            );
            return;
        }
        for entry in entries {
            if let Some(details) = &entry.result.details {
                println!(
                    "{:>11}session keeps for {}: details {details}",
                    "", entry.call_id
                );
            }
        }
        let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let calls = match entries.len() {
            1 => "1 call".to_owned(),
            n => format!("{n} calls"),
        };
        println!(
            "{calls} on {} by {:.2}s: {}; the loop was never blocked.",
            self.runtime,
            took.as_secs_f64(),
            parts.join(", ")
        );
    }

    /// What code mode saved the model: it read the program's answer, where
    /// making the same calls one by one it would have read every result.
    pub(crate) fn code_mode_reading(&self, entry: &SessionEntry) {
        let calls = entry.nested.len();
        let one_by_one: usize = entry.nested.iter().map(|nested| nested.text().len()).sum();
        let read = entry.text().len();
        if self.json {
            println!(
                "{}",
                json!({ "type": "code_mode", "calls": calls, "read_bytes": read,
                        "one_by_one_bytes": one_by_one })
            );
            return;
        }
        println!(
            "code mode: the model read {read} bytes, in one call; making the same {calls} calls \
             one by one it would have read {one_by_one} bytes, over {calls} more turns."
        );
    }

    /// The health of the agent's tools, as the source's accounting has it.
    pub(crate) fn health(&self, table: &str) {
        if self.json {
            println!("{}", json!({ "type": "health", "table": table }));
        } else {
            println!("\n== health of the agent-written tools\n{table}");
        }
    }
}

fn describe_content(content: &[Content]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|part| match part {
            Content::Text(text) => format!("{text:?}"),
            Content::Image(image) => {
                format!("[{} image, {} bytes]", image.mime_type, image.data.len())
            }
            // The demo's tools answer with text and images only; any other
            // part is named by its kind.
            other => format!("[{}]", other.kind()),
        })
        .collect();
    parts.join(" + ")
}
