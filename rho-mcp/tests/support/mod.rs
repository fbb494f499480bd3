//! The real MCP peers the tests drive rho's server with, installed on
//! demand from pinned versions.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use rho_mcp::HttpOptions;
use rho_mcp::proxy::{ProxyHttp, ProxyOptions};
use rho_mcp::rmcp::service::RunningService;
use rho_mcp::rmcp::transport::StreamableHttpClientTransport;
use rho_mcp::rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

pub mod announcing;
pub mod sample_checks;
pub mod stateless;
pub mod tasks;

/// What a client saw of the sample registry, and the sample's log.
pub struct PeerRun {
    /// The client's record, scenario by scenario.
    pub seen: Value,
    /// The lines the sample logged (`slow` calls started and dropped).
    pub log: String,
}

/// The target directory, where the peers are installed.
fn target_dir() -> PathBuf {
    // `CARGO_TARGET_TMPDIR` is `<target>/tmp`.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the tmp dir is inside the target dir")
        .to_path_buf()
}

/// This crate's directory of peer scripts.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("peers")
}

/// The Python of a venv with the pinned MCP Python SDK, installed by
/// `tests/peers/install-python.sh` the first time it is asked for.
///
/// # Panics
///
/// Loudly, with the installer's words, when python3 or the install is not
/// available: a peer test never passes without its peer.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = target_dir().join("peers").join("python");
        let script = peers_dir().join("install-python.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg(&venv)
            .output()
            .unwrap_or_else(|error| panic!("\n\n*** cannot run {}: {error} ***\n", script.display()));
        if !output.status.success() {
            panic!(
                "\n\n*** the MCP peer tests need the official MCP Python SDK, and it could not be \
                 installed ***\n{} said ({}):\n{}{}\nInstall python3 (3.10 or later, with venv) and \
                 allow access to the Python package index, or run the script by hand.\n",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        }
        venv.join("bin").join("python")
    })
}

/// Runs `tests/peers/client.py` with `args` and the extra environment
/// `env`; returns the JSON it printed.
///
/// # Panics
///
/// When the client fails or prints something else than JSON, with its
/// output.
pub fn run_python_client(args: &[&str], env: &[(&str, &Path)]) -> Value {
    let mut command = Command::new(python());
    command.arg(peers_dir().join("client.py")).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("the venv's python runs");
    client_json(&output)
}

/// The JSON a peer client (Python's or Node's) printed on its stdout.
///
/// # Panics
///
/// When the client failed or printed something else than JSON, with its
/// output.
pub fn client_json(output: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the peer client failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "the peer client printed no JSON ({error}):\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// A fresh path for a log file under the target's tmp dir.
pub fn log_path(name: &str) -> PathBuf {
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// One scenario's record, failing with the client's own error when the
/// scenario raised.
pub fn scenario<'a>(run: &'a Value, name: &str) -> &'a Value {
    let record = &run[name];
    assert!(!record.is_null(), "no record of scenario `{name}` in {run}");
    if let Some(error) = record.get("error") {
        panic!(
            "scenario `{name}` raised in the peer client: {error}\n{}",
            record["trace"].as_str().unwrap_or_default()
        );
    }
    record
}

/// The texts of a call's summary, joined.
pub fn text(summary: &Value) -> String {
    summary["texts"]
        .as_array()
        .map(|texts| {
            texts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// `rho-mcp sample --http` with `extra` arguments, logging to `log`: the
/// process and the URL it printed (checked to be loopback's).
pub fn sample_http_server(log: &Path, extra: &[&str]) -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_rho-mcp"))
        .args(["sample", "--http"])
        .args(extra)
        .env("RHO_MCP_SAMPLE_LOG", log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the sample server starts");
    let url = printed_url(&mut server);
    (server, url)
}

/// The URL a `rho-mcp ... --http` process prints first (its stdout
/// piped), checked to be loopback's.
pub fn printed_url(served: &mut Child) -> String {
    let mut url = String::new();
    BufReader::new(served.stdout.take().expect("stdout piped"))
        .read_line(&mut url)
        .expect("it prints its URL");
    let url = url.trim().to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "served on loopback: {url:?}"
    );
    url
}

/// Stops a sample HTTP server (closing its stdin stops it) and reads its
/// log.
pub fn stop_sample(mut server: Child, log: &Path) -> String {
    drop(server.stdin.take());
    let status = server.wait().expect("the sample ends");
    assert!(status.success(), "the sample ended with {status}");
    std::fs::read_to_string(log).unwrap_or_default()
}

/// rmcp's client with `handler`, on 2025-11-25 over streamable HTTP to
/// `url`, past its handshake.
pub async fn http_client<H: ClientHandler>(
    url: String,
    handler: H,
) -> RunningService<RoleClient, H> {
    handler
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("initializes")
}

/// A proxy started with `options`, serving its clients over streamable
/// HTTP on loopback.
pub async fn proxy_over_http(options: ProxyOptions) -> ProxyHttp {
    options
        .start()
        .await
        .expect("the proxy connects to its server")
        .serve_http(HttpOptions::new())
        .await
        .expect("the proxy serves on loopback")
}

/// A child process stopped when dropped: SIGTERM, five seconds to end,
/// then SIGKILL; reaped either way.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Python peer serving streamable HTTP: the venv's python runs `args`
/// followed by a free loopback port, and this returns once the port
/// listens, with the endpoint's URL (`/mcp`).
///
/// # Panics
///
/// When the server does not listen within 30 s.
pub fn python_http_peer(args: &[&str]) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on loopback")
        .port();
    let child = Command::new(python())
        .args(args)
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the venv's python runs");
    let running = Running(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the Python peer {args:?} did not listen on port {port} within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (running, format!("http://127.0.0.1:{port}/mcp"))
}
