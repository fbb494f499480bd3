//! The demo's tools: one of each kind of behaviour a host meets.

use std::time::Duration;

use rho::{Image, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde::Serialize;

/// Reads a (pretend) file at once.
pub(crate) struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Reads a file of the project."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "path": { "type": "string" } },
            "required": ["path"],
            "additionalProperties": false,
        })
    }
    async fn run(&self, args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        let path = args["path"].as_str().unwrap_or("?");
        cx.sleep(Duration::from_millis(40)).await;
        ToolOutput::text(format!(
            "{path}: 12 lines, fn main() {{ println!(\"hi\") }}"
        ))
    }
}

/// Deploys; destructive, so a person approves it (see the demo's gate),
/// then it is quick.
/// Its timeout is shorter than the approval takes, which is fine: the clock
/// starts when the gate allows.
pub(crate) struct Deploy;

#[async_trait]
impl Tool for Deploy {
    fn name(&self) -> &str {
        "deploy"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().title("Deploy").destructive(true)
    }
    fn description(&self) -> &str {
        "Deploys the current build to staging."
    }
    fn timeout(&self) -> Duration {
        Duration::from_millis(500)
    }
    async fn run(&self, _args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(150)).await;
        ToolOutput::text("deployed build 4711 to staging")
    }
}

/// A build that hangs far past its timeout.
pub(crate) struct SlowBuild;

#[async_trait]
impl Tool for SlowBuild {
    fn name(&self) -> &str {
        "cargo_build"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().destructive(false).idempotent(true)
    }
    fn description(&self) -> &str {
        "Builds the project."
    }
    fn timeout(&self) -> Duration {
        Duration::from_millis(800)
    }
    async fn run(&self, _args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        for (done, crate_name) in ["serde", "tokio", "rho-tool-core"].iter().enumerate() {
            cx.sleep(Duration::from_millis(150)).await;
            // Progress for the host's screen, while the tool runs.
            let _ = cx
                .update(&serde_json::json!({ "compiled": crate_name, "done": done + 1, "of": 40 }));
        }
        cx.sleep(Duration::from_secs(3600)).await;
        ToolOutput::text("unreachable: the loop kills this call at 800ms")
    }
}

/// A payload type that is not text: rho reports the panic without reading,
/// printing or dropping it in the loop.
pub(crate) struct InternalState {
    _cache: Vec<u8>,
}

/// A tool that panics with a custom payload.
pub(crate) struct Flaky;

#[async_trait]
impl Tool for Flaky {
    fn name(&self) -> &str {
        "flaky_lint"
    }
    fn annotations(&self) -> ToolAnnotations {
        // A claim of code the host did not write: the gate does not believe it.
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Lints; crashes on odd inputs."
    }
    async fn run(&self, _args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(100)).await;
        std::panic::panic_any(InternalState {
            _cache: vec![0; 64],
        })
    }
}

/// A 1x1 PNG, the smallest real image.
const PIXEL_PNG: [u8; 67] = [
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// Answers with an image.
pub(crate) struct Screenshot;

#[async_trait]
impl Tool for Screenshot {
    fn name(&self) -> &str {
        "screenshot"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Takes a screenshot of the app."
    }
    async fn run(&self, _args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(200)).await;
        ToolOutput::image(
            Image::new("image/png", PIXEL_PNG.to_vec()),
            "the app's main window",
        )
    }
}

/// Answers with details for the host's screen.
pub(crate) struct Grep;

#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Searches the project."
    }
    async fn run(&self, args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(120)).await;
        let pattern = args["pattern"].as_str().unwrap_or_default().to_owned();
        ToolOutput::text("3 matches in 2 files").with_details(serde_json::json!({
            "pattern": pattern,
            "matches": [
                { "file": "src/main.rs", "line": 3 },
                { "file": "src/lib.rs", "line": 10 },
                { "file": "src/lib.rs", "line": 42 },
            ],
        }))
    }
}

/// What the agent-written tool hands back: a struct of its own, with values
/// JSON cannot hold as they are.
#[derive(Serialize)]
pub(crate) struct ScriptReport {
    name: &'static str,
    checked: u128,
    ratio: f64,
    tags: Vec<&'static str>,
}

/// A tool the agent wrote itself: rho makes its answer plain data inside
/// the task.
pub(crate) struct AgentScript;

#[async_trait]
impl Tool for AgentScript {
    fn name(&self) -> &str {
        "count_todos"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Counts TODO comments (written by the agent)."
    }
    fn is_untrusted(&self) -> bool {
        true
    }
    async fn run(&self, _args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(80)).await;
        ToolOutput::text("7 TODOs").with_details(ScriptReport {
            name: "count_todos",
            checked: u128::MAX,
            ratio: f64::NAN,
            tags: vec!["agent-written"],
        })
    }
}

/// A dangerous tool the gate refuses.
pub(crate) struct RemoveAll;

#[async_trait]
impl Tool for RemoveAll {
    fn name(&self) -> &str {
        "rm_rf"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().destructive(true)
    }
    fn description(&self) -> &str {
        "Deletes a directory tree."
    }
    async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::error("never runs: the gate denies it")
    }
}

/// Saves a note for the team; it writes, so a person approves it first.
pub(crate) struct SaveNote;

#[async_trait]
impl Tool for SaveNote {
    fn name(&self) -> &str {
        "save_note"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new()
            .title("Save a note")
            .destructive(false)
    }
    fn description(&self) -> &str {
        "Saves a note for the team."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"],
            "additionalProperties": false,
        })
    }
    async fn run(&self, args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(20)).await;
        let text = args["text"].as_str().unwrap_or_default();
        ToolOutput::text(format!("saved a note of {} bytes", text.len()))
    }
}
