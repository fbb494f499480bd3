//! The official model-API SDKs as the tests' judges and makers: the pinned
//! Python packages `openai`, `anthropic` and `google-genai`, installed by
//! `tests/peers/install-python.sh` into the target directory.
#![allow(dead_code)] // each test binary uses its part

pub(crate) mod shapes;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use rho::registry::ToolInfo;
use rho::{Source, Tool, ToolContext, ToolOutput, ToolRegistry, async_trait};
use serde_json::{Value, json};
use std::sync::Arc;

/// The target directory, where the peers are installed.
fn target_dir() -> PathBuf {
    // `CARGO_TARGET_TMPDIR` is `<target>/tmp`.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the tmp dir is inside the target dir")
        .to_path_buf()
}

/// This crate's directory of peer scripts.
fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("peers")
}

/// The Python of a venv with the pinned SDKs, installed the first time it
/// is asked for.
///
/// # Panics
///
/// Loudly, with the installer's words, when python3 or the install is not
/// available: a test judged by the SDKs never passes without them.
pub(crate) fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = target_dir().join("peers").join("model-python");
        let script = peers_dir().join("install-python.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg(&venv)
            .output()
            .unwrap_or_else(|error| panic!("\n\n*** cannot run {}: {error} ***\n", script.display()));
        if !output.status.success() {
            panic!(
                "\n\n*** these tests are judged by the official model-API SDKs (Python: openai, \
                 anthropic, google-genai), and they could not be installed ***\n{} said ({}):\n{}{}\n\
                 Install python3 (3.10 or later, with venv) and allow access to the Python package \
                 index, or run the script by hand.\n",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        }
        venv.join("bin").join("python")
    })
}

/// Runs peer script `script` with `input` on its stdin; the JSON it printed.
fn run(script: &str, input: &Value) -> Value {
    let mut child = Command::new(python())
        .arg(peers_dir().join(script))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{script} does not start: {error}"));
    let body = serde_json::to_vec(input).expect("json");
    let mut stdin = child.stdin.take().expect("a pipe");
    // Written from a thread: the script may answer before it read it all.
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let output = child.wait_with_output().expect("the script ends");
    writer
        .join()
        .expect("the writer")
        .expect("the script reads its input");
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{script} printed no JSON ({error}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Each value judged by the SDK type its kind names (`judge.py`): `Ok`,
/// or the SDK's reason.
pub(crate) fn judge(values: &[(&str, Value)]) -> Vec<Result<(), String>> {
    let input: Vec<Value> = values
        .iter()
        .map(|(kind, value)| json!({ "kind": kind, "value": value }))
        .collect();
    let verdicts = run("judge.py", &Value::Array(input));
    let verdicts = verdicts.as_array().expect("a list of verdicts");
    assert_eq!(verdicts.len(), values.len());
    verdicts
        .iter()
        .map(|verdict| match verdict["ok"].as_bool() {
            Some(true) => Ok(()),
            _ => Err(verdict["error"].as_str().unwrap_or("no reason").to_owned()),
        })
        .collect()
}

/// Asserts the SDKs accept every value, naming each one they refuse.
pub(crate) fn assert_accepted(values: &[(&str, Value)]) {
    let refused: Vec<String> = judge(values)
        .into_iter()
        .zip(values)
        .filter_map(|(verdict, (kind, value))| {
            verdict
                .err()
                .map(|error| format!("{kind}: {error}\n  {value}"))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "the SDKs refuse {} of {} values:\n{}",
        refused.len(),
        values.len(),
        refused.join("\n")
    );
}

/// Responses (or streams) built by the SDKs' own response models
/// (`made.py`), one per request, in order; `{"refused": why}` where the SDK
/// refused to build one.
pub(crate) fn made(requests: &[Value]) -> Vec<Value> {
    let made = run("made.py", &Value::Array(requests.to_vec()));
    made.as_array().expect("a list").clone()
}

/// A tool named `t` whose arguments' schema is its `0`.
pub(crate) struct WithSchema(Value);

#[async_trait]
impl Tool for WithSchema {
    fn name(&self) -> &str {
        "t"
    }
    fn description(&self) -> &str {
        "a tool"
    }
    fn parameters(&self) -> Value {
        self.0.clone()
    }
    async fn run(&self, _args: Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text("ran")
    }
}

/// The tool of schema `parameters` as a registry lists it.
pub(crate) fn info(parameters: Value) -> ToolInfo {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("s"))
        .expect("a source")
        .add(Arc::new(WithSchema(parameters)))
        .expect("a tool");
    registry.tools().remove(0)
}
