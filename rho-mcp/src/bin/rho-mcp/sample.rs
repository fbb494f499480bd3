//! The sample registry: one tool for each way a call can go, so an MCP
//! client (a person's, or the tests' real SDK clients) can see what rho
//! does with each.
//!
//! When `RHO_MCP_SAMPLE_LOG` names a file, the sample appends a line to it
//! when a `slow` call starts and when it is dropped (finished, cancelled or
//! killed), so a test can tell from outside that a call really stopped,
//! and each time `echo` runs (`echo ran: TEXT`), so a test can count the
//! runs of each call.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rho_mcp::ElicitationApprover;
use rho_registry::{Accounting, QuarantineRule, RegistryError, Source, SourceHandle, ToolRegistry};
use rho_tool_core::annotation_gate::Match;
use rho_tool_core::{
    AnnotationGate, ApprovalRequest, Image, Tool, ToolAnnotations, ToolContext, ToolOutput,
    Verdict, async_trait,
};
use serde_json::{Value, json};

/// The sample's gate: `wipe` needs a person (the runner's approver, see
/// [`approver`]). Every other call runs at once.
pub(crate) fn gate() -> AnnotationGate {
    AnnotationGate::new()
        .ask(Match::tool("wipe"))
        .otherwise(Verdict::Allow)
}

/// The sample's approver: the client's user, else a refusal.
pub(crate) fn approver() -> ElicitationApprover {
    ElicitationApprover::new(|request: ApprovalRequest| async move {
        Verdict::deny(format!(
            "`{}` needs a person's approval, and this client cannot ask one",
            request.tool
        ))
    })
}

/// The sample registry: `builtin` tools, and an untrusted `agent` source
/// whose `flaky` tool is quarantined after two crashes.
pub(crate) fn registry() -> Result<ToolRegistry, RegistryError> {
    let registry = ToolRegistry::new();
    let builtin = registry.add_source(Source::trusted("builtin"))?;
    let running = Arc::new(AtomicUsize::new(0));
    let dynamic = registry.add_source(Source::trusted("defined"))?;
    let kinds = [
        Kind::Echo,
        Kind::Image,
        Kind::Fail,
        Kind::Panic,
        Kind::Hang,
        Kind::Progress,
        Kind::Stats,
        Kind::BadStats,
        Kind::Slow,
        Kind::InFlight,
        Kind::Define,
        Kind::Wipe,
    ];
    builtin.add_all(kinds.map(|kind| {
        Arc::new(Sample {
            kind,
            running: running.clone(),
            defined: dynamic.clone(),
        }) as Arc<dyn Tool>
    }))?;
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting))?
        .add(Sample {
            kind: Kind::Flaky,
            running,
            defined: dynamic,
        })?;
    Ok(registry)
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Echo,
    Image,
    Fail,
    Panic,
    Hang,
    Progress,
    Stats,
    BadStats,
    Slow,
    InFlight,
    Define,
    Wipe,
    Flaky,
    Defined,
}

struct Sample {
    kind: Kind,
    /// `slow` calls running now.
    running: Arc<AtomicUsize>,
    /// Where `define` adds tools.
    defined: SourceHandle,
}

/// A 1x1 PNG.
const PIXEL: [u8; 67] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

fn text_schema() -> Value {
    json!({ "type": "object", "required": ["text"],
            "properties": { "text": { "type": "string" } }, "additionalProperties": false })
}

fn stats_schema() -> Value {
    json!({ "type": "object", "required": ["words", "longest"],
            "properties": { "words": { "type": "integer" }, "longest": { "type": "string" } } })
}

#[async_trait]
impl Tool for Sample {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Echo => "echo",
            Kind::Image => "pixel",
            Kind::Fail => "fail",
            Kind::Panic => "panic",
            Kind::Hang => "hang",
            Kind::Progress => "count_up",
            Kind::Stats => "word_stats",
            Kind::BadStats => "bad_stats",
            Kind::Slow => "slow",
            Kind::InFlight => "slow_in_flight",
            Kind::Define => "define",
            Kind::Wipe => "wipe",
            Kind::Flaky => "flaky",
            Kind::Defined => "defined",
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Echo => "Answers with `text`.",
            Kind::Image => "Answers with a one-pixel PNG.",
            Kind::Fail => "Answers with an error of its own.",
            Kind::Panic => "Panics.",
            Kind::Hang => "Never answers; its timeout is 300 ms.",
            Kind::Progress => "Counts from 1 to `to`, reporting each step, then answers.",
            Kind::Stats => "Counts the words of `text` (structured answer).",
            Kind::BadStats => "Claims an output schema its answers do not fit.",
            Kind::Slow => "Answers after `ms` milliseconds.",
            Kind::InFlight => "How many `slow` calls are running now.",
            Kind::Define => "Adds the tool `defined` to the registry.",
            Kind::Wipe => "Pretends to wipe something: runs only when a person approves.",
            Kind::Flaky => "An agent-written tool that always panics.",
            Kind::Defined => "Added at run time by `define`.",
        }
    }

    fn parameters(&self) -> Value {
        match self.kind {
            Kind::Echo | Kind::Stats | Kind::BadStats => text_schema(),
            Kind::Progress => json!({ "type": "object", "required": ["to"],
                "properties": { "to": { "type": "integer", "minimum": 1, "maximum": 100 } } }),
            Kind::Slow => json!({ "type": "object", "required": ["ms"],
                "properties": { "ms": { "type": "integer", "minimum": 0 } } }),
            _ => json!({ "type": "object" }),
        }
    }

    fn timeout(&self) -> Duration {
        match self.kind {
            Kind::Hang => Duration::from_millis(300),
            _ => Duration::from_secs(60),
        }
    }

    fn annotations(&self) -> ToolAnnotations {
        match self.kind {
            Kind::Echo | Kind::Stats | Kind::InFlight => {
                ToolAnnotations::new().title(self.name()).read_only()
            }
            Kind::Define => ToolAnnotations::new().destructive(false),
            Kind::Wipe => ToolAnnotations::new().destructive(true),
            _ => ToolAnnotations::new(),
        }
    }

    fn output_schema(&self) -> Option<Value> {
        match self.kind {
            Kind::Stats | Kind::BadStats => Some(stats_schema()),
            _ => None,
        }
    }

    async fn run(&self, args: Value, cx: ToolContext) -> ToolOutput {
        let text = args["text"].as_str().unwrap_or_default().to_owned();
        match self.kind {
            Kind::Echo => {
                log(&format!("echo ran: {text}"));
                ToolOutput::text(text)
            }
            Kind::Image => ToolOutput::image(Image::new("image/png", PIXEL), "a pixel"),
            Kind::Fail => ToolOutput::error("the tool says no"),
            Kind::Panic | Kind::Flaky => panic!("the sample tool panicked on purpose"),
            Kind::Hang => loop {
                cx.sleep(Duration::from_secs(3600)).await;
            },
            Kind::Progress => {
                let to = args["to"].as_u64().unwrap_or(1);
                for step in 1..=to {
                    let _ = cx.update(&json!({ "progress": step, "total": to,
                                               "message": format!("step {step} of {to}") }));
                    cx.sleep(Duration::from_millis(20)).await;
                }
                ToolOutput::text(format!("counted to {to}"))
            }
            Kind::Stats => {
                let words: Vec<&str> = text.split_whitespace().collect();
                let longest = words.iter().copied().max_by_key(|w| w.len()).unwrap_or("");
                ToolOutput::text(format!("{} words", words.len()))
                    .with_details(json!({ "words": words.len(), "longest": longest }))
            }
            Kind::BadStats => ToolOutput::text("oops").with_details(json!({ "words": "many" })),
            Kind::Slow => {
                let _running = Running::start(&self.running, cx.call_id());
                let ms = args["ms"].as_u64().unwrap_or(0);
                cx.sleep(Duration::from_millis(ms)).await;
                ToolOutput::text(format!("slept {ms} ms"))
            }
            Kind::InFlight => ToolOutput::text(self.running.load(Ordering::SeqCst).to_string()),
            Kind::Define => {
                let tool = Arc::new(Sample {
                    kind: Kind::Defined,
                    running: self.running.clone(),
                    defined: self.defined.clone(),
                });
                match self.defined.replace(tool) {
                    Ok(_) => ToolOutput::text("defined `defined`"),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            Kind::Defined => ToolOutput::text("I was defined at run time"),
            Kind::Wipe => ToolOutput::text("wiped (not really)"),
        }
    }
}

/// A `slow` call running: counted while alive, and logged when it starts
/// and when it is dropped (however the call ended).
struct Running {
    count: Arc<AtomicUsize>,
    call_id: String,
    since: Instant,
}

impl Running {
    fn start(count: &Arc<AtomicUsize>, call_id: &str) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        log(&format!("slow {call_id} started"));
        Self {
            count: count.clone(),
            call_id: call_id.to_owned(),
            since: Instant::now(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        log(&format!(
            "slow {} dropped after {} ms",
            self.call_id,
            self.since.elapsed().as_millis()
        ));
    }
}

/// Appends `line` to the file `RHO_MCP_SAMPLE_LOG` names, if any.
pub(crate) fn log(line: &str) {
    let Some(path) = std::env::var_os("RHO_MCP_SAMPLE_LOG") else {
        return;
    };
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
        // One write a line: lines of threads logging at once never mix.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}
