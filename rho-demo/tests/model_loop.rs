//! `rho-demo model`, the whole loop of a host, against a stand-in model
//! server in each of the four dialects. The stand-in
//! (`rho-model/tests/peers/stand_in.py`) answers with calls, then checks
//! that the next request answers each of them once and in order, and judges
//! every request with the official SDK's own request type (Python
//! `openai`, `anthropic`, `google-genai`, pinned).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// The peers' folder of rho-model, where the stand-in and its SDKs live.
fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rho-model/tests/peers")
}

/// The Python of the venv with the pinned SDKs, installed if missing.
///
/// # Panics
///
/// Loudly, with the installer's words, when it cannot be installed.
fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .join("peers")
        .join("model-python");
    let script = peers().join("install-python.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(&venv)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
    assert!(
        output.status.success(),
        "\n\n*** the model loop's stand-in server needs the official model-API SDKs (Python: \
         openai, anthropic, google-genai), and they could not be installed ***\n{} said:\n{}{}\n\
         Install python3 (3.10 or later, with venv) and allow access to the Python package index.\n",
        script.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    venv.join("bin").join("python")
}

/// The stand-in server, killed when dropped.
struct StandIn {
    child: Child,
    port: u16,
}

impl StandIn {
    fn start(script: &Path) -> Self {
        let mut child = Command::new(python())
            .arg(peers().join("stand_in.py"))
            .arg("--script")
            .arg(script)
            .args(["--port", "0", "--key", "test-key"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the stand-in starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("a pipe"))
            .read_line(&mut line)
            .expect("the stand-in says where it listens");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the stand-in said {line:?}"));
        Self { child, port }
    }

    /// What the stand-in found of the requests it judged.
    fn report(&self) -> Value {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("the stand-in");
        write!(
            stream,
            "GET /rho/report HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
        )
        .expect("a request");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("a response");
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {response}"))
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_demos_model_loop_speaks_each_dialect_to_a_server_that_judges_every_request() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("model-loop");
    std::fs::create_dir_all(&dir).expect("a folder");
    let script = dir.join("script.json");
    // Calls of each kind: reads, an image, arguments the tool's schema
    // refuses, a tool that does not exist. (Arguments that are not JSON
    // cannot come whole from two of the APIs, which send objects; the
    // dialects' own tests cover them.)
    let calls = json!({
        "calls": [
            { "name": "read_file", "arguments": "{\"path\":\"src/main.rs\"}" },
            { "name": "grep", "arguments": "{\"pattern\":\"TODO\"}" },
            { "name": "screenshot", "arguments": "{}" },
            { "name": "save_note", "arguments": "{\"words\":\"one TODO\"}" },
            { "name": "no_such_tool", "arguments": "{}" },
        ],
        "text": "All done: one TODO, and the window looks fine.",
    });
    std::fs::write(&script, calls.to_string()).expect("the script");
    let stand_in = StandIn::start(&script);
    let base = format!("http://127.0.0.1:{}", stand_in.port);
    for (api, url) in [
        ("chat", format!("{base}/v1")),
        ("responses", format!("{base}/v1")),
        ("anthropic", base.clone()),
        ("gemini", base.clone()),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_rho-demo"))
            .args(["model", "--api", api, "--url", &url, "--model", "stand-in"])
            .env("RHO_MODEL_KEY", "test-key")
            .output()
            .expect("the demo runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{api}: {}\n{stdout}\n{stderr}",
            output.status
        );
        assert!(
            stdout.contains("model: All done: one TODO, and the window looks fine."),
            "{api}:\n{stdout}"
        );
        // The calls ran as rho calls: the arguments that do not fit and
        // the unknown tool reached the model as errors it can fix.
        assert!(
            stdout.contains("screenshot") && stdout.contains("(+1 image)"),
            "{api}:\n{stdout}"
        );
        assert!(
            stdout.contains("its arguments do not fit its schema"),
            "{api}:\n{stdout}"
        );
        assert!(stdout.contains("no_such_tool"), "{api}:\n{stdout}");
    }
    let report = stand_in.report();
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(report["requests"], 8, "{report:#}");

    // Without a key the demo says which variable to set.
    let output = Command::new(env!("CARGO_BIN_EXE_rho-demo"))
        .args(["model", "--api", "gemini", "--url", &base])
        .env_remove("RHO_MODEL_KEY")
        .env_remove("GEMINI_API_KEY")
        .output()
        .expect("the demo runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("RHO_MODEL_KEY or GEMINI_API_KEY"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
