//! What the import tests share: the pinned MCP reference server and the
//! fault server, each run with node, and runners on tokio and smol.

#![allow(dead_code, unreachable_pub, unused_macros)]

/// Makes a `#[test]` on a tokio host and one on a smol host of each
/// scenario named, a function of a [`Host`]; the test file imports
/// `Tokio` and `Smol`.
macro_rules! on_both_hosts {
    ($($name:ident),* $(,)?) => {
        mod tokio_host { $( #[test] fn $name() { super::$name(super::Tokio::new()) } )* }
        mod smol_host { $( #[test] fn $name() { super::$name(super::Smol::new()) } )* }
    };
}

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rho_mcp::import::{McpSource, McpSourceBuilder};
use rho_registry::ToolRegistry;
use rho_tool_core::{CallEnd, Executor, Runner, ToolCall};
use serde_json::Value;

/// The target directory, where the peers are installed.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the tmp dir is inside the target dir")
        .to_path_buf()
}

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("peers")
}

/// The pinned `@modelcontextprotocol/server-everything`, installed by
/// `tests/peers/install-node.sh` the first time it is asked for: the path
/// of its `dist/index.js`.
///
/// # Panics
///
/// Loudly, with the installer's words, when node, npm or the install is
/// not available: an import test never passes without its server.
pub fn everything() -> &'static Path {
    static EVERYTHING: OnceLock<PathBuf> = OnceLock::new();
    EVERYTHING.get_or_init(|| {
        let dir = install_peers(
            "install-node.sh",
            "node",
            "the MCP import tests need node (20 or later) and the pinned MCP reference server",
            "Install Node.js with npm",
        );
        dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    })
}

/// Runs `tests/peers/<script>` to install pinned peers into
/// `target/peers/<into>`, and gives that directory.
///
/// # Panics
///
/// Loudly, with the installer's words, when it cannot: `needs` says what
/// the tests need, `install` what to install; a peer test never passes
/// without its peer.
pub fn install_peers(script: &str, into: &str, needs: &str, install: &str) -> PathBuf {
    let dir = target_dir().join("peers").join(into);
    let script = peers_dir().join(script);
    let output = Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .output()
        .unwrap_or_else(|error| panic!("\n\n*** cannot run {}: {error} ***\n", script.display()));
    if !output.status.success() {
        panic!(
            "\n\n*** {needs}, and it could not be installed ***\n{} said ({}):\n{}{}\n{install} \
             and allow access to the npm registry, or run the script by hand.\n",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
    }
    dir
}

/// `node`, checked to be there.
///
/// # Panics
///
/// Loudly when node is not on the PATH.
pub fn node() -> &'static str {
    static CHECKED: OnceLock<()> = OnceLock::new();
    CHECKED.get_or_init(|| {
        let ran = Command::new("node").arg("--version").output();
        match ran {
            Ok(output) if output.status.success() => {}
            other => panic!(
                "\n\n*** the MCP import tests need node (20 or later) on the PATH to run their \
                 servers, and it is not there ({other:?}) ***\n"
            ),
        }
    });
    "node"
}

/// Runs `tests/peers/node/client.mjs` (the official MCP TypeScript SDK's
/// client) with `args` and the extra environment `env`; what it printed
/// (`support::client_json` reads it).
///
/// # Panics
///
/// When node or the pinned SDK is missing, with the installer's words.
pub fn run_node_client(args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    run_node_peer("client.mjs", args, env)
}

/// Runs `tests/peers/node/<script>` with `args` and the extra environment
/// `env`, beside the pinned node peers so that it finds the TypeScript
/// SDK; what it printed.
///
/// # Panics
///
/// When node or the pinned SDK is missing, with the installer's words.
pub fn run_node_peer(script: &str, args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    // Installs the pinned node peers, the TypeScript SDK among them.
    let installed = everything()
        .ancestors()
        .find(|dir| dir.ends_with("node_modules"))
        .and_then(Path::parent)
        .expect("the node peers' directory")
        .to_path_buf();
    // Node finds the SDK from where the script is: beside the installed
    // packages, under a name of this test run's own.
    let source = peers_dir().join("node").join(script);
    let script = installed.join(format!(
        "{}-{}-{}.mjs",
        script.trim_end_matches(".mjs"),
        std::process::id(),
        args.first()
            .copied()
            .unwrap_or_default()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(16)
            .collect::<String>()
    ));
    std::fs::copy(&source, &script).expect("the client script copied beside the SDK");
    let mut command = Command::new(node());
    command.arg(&script).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output();
    let _ = std::fs::remove_file(&script);
    output.expect("node runs")
}

/// The reference server as a source named `name`.
pub fn everything_source(name: &str) -> McpSourceBuilder {
    McpSource::stdio(name, node())
        .arg(everything())
        .arg("stdio")
}

/// The directory the node peers are installed in (`node_modules`' parent).
pub fn node_peers() -> &'static Path {
    everything()
        .ancestors()
        .find(|dir| dir.ends_with("node_modules"))
        .and_then(Path::parent)
        .expect("the node peers' directory")
}

/// The pinned `@modelcontextprotocol/server-filesystem`'s `dist/index.js`.
pub fn filesystem_server() -> PathBuf {
    node_peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// The fault server as a source named `name`.
pub fn fault_source(name: &str) -> McpSourceBuilder {
    McpSource::stdio(name, node()).arg(fault_server())
}

/// The fault server's script (`tests/peers/node/fault-server.mjs`).
pub fn fault_server() -> PathBuf {
    peers_dir().join("node").join("fault-server.mjs")
}

/// Where the tests run: a tokio runtime or a smol executor, with a rho
/// runner on it.
pub trait Host {
    type Executor: Executor;
    fn runner(&self) -> Runner<Self::Executor>;
    fn block_on<F: Future>(&self, future: F) -> F::Output;
}

pub struct Tokio(tokio::runtime::Runtime);

impl Tokio {
    pub fn new() -> Self {
        Tokio(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime"),
        )
    }
}

impl Host for Tokio {
    type Executor = rho_exec_tokio::TokioExecutor;
    fn runner(&self) -> Runner<Self::Executor> {
        Runner::new(rho_exec_tokio::TokioExecutor::new(self.0.handle().clone()).expect("a timer"))
    }
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }
}

pub struct Smol {
    executor: Arc<smol::Executor<'static>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Smol {
    pub fn new() -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::unbounded::<()>();
        let threads = (0..2)
            .map(|_| {
                let executor = Arc::clone(&executor);
                let stopped = stopped.clone();
                std::thread::spawn(move || {
                    let _ = smol::block_on(executor.run(stopped.recv()));
                })
            })
            .collect();
        Smol {
            executor,
            stop: Some(stop),
            threads,
        }
    }
}

impl Drop for Smol {
    fn drop(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Host for Smol {
    type Executor = rho_exec_smol::SmolExecutor;
    fn runner(&self) -> Runner<Self::Executor> {
        Runner::new(rho_exec_smol::SmolExecutor::new(Arc::clone(&self.executor)))
    }
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }
}

/// Calls `tool` with `arguments` through `registry`.
pub async fn call<E: Executor>(
    registry: &ToolRegistry,
    runner: &Runner<E>,
    tool: &str,
    arguments: Value,
) -> CallEnd {
    let id = format!("call-{tool}");
    runner
        .start(ToolCall::new(id, tool, arguments), registry.start_for(tool))
        .await
}

/// Calls `tool` with `arguments` through `registry` and keeps its partial
/// results as they come: the call's end and the partials, as JSON.
pub async fn call_with_updates<E: Executor>(
    registry: &ToolRegistry,
    runner: &Runner<E>,
    tool: &str,
    arguments: Value,
) -> (CallEnd, Vec<Value>) {
    let mut handle = {
        let call = ToolCall::new(format!("call-{tool}"), tool, arguments);
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    };
    let mut updates = Vec::new();
    loop {
        match handle.next_event().await.expect("the call ends") {
            rho_tool_core::CallEvent::Update(update) => updates.push(update.partial.to_json()),
            rho_tool_core::CallEvent::Ended(end) => return (end, updates),
            _ => {}
        }
    }
}

/// Calls the fault server's `progress` tool `times` times with every step
/// and the answer in one write, checking that each call's five steps
/// reached it, in order, before its end.
pub async fn check_progress_read_with_the_answer<E: Executor>(
    registry: &ToolRegistry,
    runner: &Runner<E>,
    times: usize,
) {
    for _ in 0..times {
        let (end, updates) = call_with_updates(
            registry,
            runner,
            "progress",
            serde_json::json!({ "steps": 5, "burst": true }),
        )
        .await;
        assert_eq!(end.result.text(), "done");
        let steps: Vec<_> = updates
            .iter()
            .map(|update| update["progress"].clone())
            .collect();
        assert_eq!(steps, [1, 2, 3, 4, 5], "{updates:?}");
    }
}

/// Checks what the reference server answers through `registry`, over
/// whichever transport it was imported: `echo`'s text, one PNG image,
/// structured content as details, and its own validation error as the
/// tool's error answer.
pub async fn check_reference_answers<E: Executor>(registry: &ToolRegistry, runner: &Runner<E>) {
    let echo = call(
        registry,
        runner,
        "echo",
        serde_json::json!({ "message": "hello" }),
    )
    .await;
    assert_eq!(
        echo.outcome,
        rho_tool_core::Outcome::Succeeded,
        "{}",
        echo.result.text()
    );
    assert_eq!(echo.result.text(), "Echo: hello");

    let image = call(registry, runner, "get-tiny-image", serde_json::json!({})).await;
    assert_eq!(
        image.outcome,
        rho_tool_core::Outcome::Succeeded,
        "{}",
        image.result.text()
    );
    let pictures: Vec<_> = image.result.images().collect();
    assert_eq!(pictures.len(), 1);
    assert_eq!(pictures[0].mime_type, "image/png");
    assert_eq!(&pictures[0].data[..4], b"\x89PNG");

    let weather = call(
        registry,
        runner,
        "get-structured-content",
        serde_json::json!({ "location": "Chicago" }),
    )
    .await;
    assert_eq!(
        weather.outcome,
        rho_tool_core::Outcome::Succeeded,
        "{}",
        weather.result.text()
    );
    let details = weather.result.details.as_ref().expect("details").to_json();
    assert_eq!(details["temperature"], 36);

    // The server's own validation error is the tool's error answer.
    let wrong = call(
        registry,
        runner,
        "get-sum",
        serde_json::json!({ "a": "x", "b": 1 }),
    )
    .await;
    assert!(wrong.result.is_error, "{}", wrong.result.text());
}

/// Checks that the reference server's progress notifications reach the
/// host as partial results, one per step of a `steps`-step operation,
/// before its answer.
pub async fn check_reference_progress<E: Executor>(
    registry: &ToolRegistry,
    runner: &Runner<E>,
    steps: u64,
) {
    let (end, updates) = call_with_updates(
        registry,
        runner,
        "trigger-long-running-operation",
        serde_json::json!({ "duration": 1, "steps": steps }),
    )
    .await;
    assert_eq!(
        end.outcome,
        rho_tool_core::Outcome::Succeeded,
        "{}",
        end.result.text()
    );
    assert!(
        end.result.text().contains(&format!("Steps: {steps}")),
        "{}",
        end.result.text()
    );
    assert_eq!(
        updates,
        (1..=steps)
            .map(|step| serde_json::json!({ "progress": step, "total": steps }))
            .collect::<Vec<_>>()
    );
}

/// Checks that `source` (the reference server) comes to list the tools
/// the server registers once a client is initialized, and says it added
/// with `notifications/tools/list_changed`.
pub fn check_reference_tools_added_after_the_handshake(source: &McpSource) {
    assert!(
        eventually(Duration::from_secs(10), || source
            .tools()
            .iter()
            .any(|name| name == "simulate-research-query")),
        "{:?}",
        source.tools()
    );
}

/// Waits up to `limit` for `done`, checking every 20 ms.
pub fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// Whether process `pid` still exists (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Sends SIGKILL to `pid`.
pub fn kill_9(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -9 {pid}");
}

/// A port on loopback that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on loopback")
        .port()
}

/// The reference server in its streamable HTTP mode, on a port of its
/// own; killed with SIGKILL when dropped.
pub struct EverythingHttp {
    child: std::process::Child,
    port: u16,
}

impl EverythingHttp {
    /// Starts the server on a free port and waits until it listens.
    pub fn start() -> Self {
        Self::on(free_port())
    }

    /// Starts the server on `port` and waits until it listens.
    ///
    /// # Panics
    ///
    /// When it does not say it listens within 20 s.
    pub fn on(port: u16) -> Self {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(node())
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("node starts the reference server");
        let stderr = child.stderr.take().expect("piped");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut said = String::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("listening on port") {
                    let _ = ready_tx.send(Ok(()));
                }
                said.push_str(&line);
                said.push('\n');
            }
            let _ = ready_tx.send(Err(said));
        });
        match ready_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(())) => Self { child, port },
            other => panic!("the reference server did not listen on port {port}: {other:?}"),
        }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The live processes whose command line holds `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(marker) && alive(pid)
        })
        .collect()
}

/// One call of a reference server's tool, made to compare its answers.
pub struct EverythingCall {
    pub tool: &'static str,
    pub arguments: Value,
    /// How many times to make it, when its answer holds the time of day:
    /// two answers a moment apart are then equal on one try at least.
    pub tries: u32,
}

/// A call of every tool the reference server lists to a client that
/// offers it nothing (no sampling, elicitation or roots: neither the
/// import nor the test clients do), with arguments it accepts; several for
/// a tool whose answers differ in kind.
///
/// The tools it lists only to a client that offers it more
/// (`get-roots-list`, `trigger-elicitation-request`,
/// `trigger-url-elicitation`, `trigger-sampling-request` and their
/// `-async` forms) are listed by neither side, so there is nothing to
/// compare; a test that finds a listed tool missing here fails, so that
/// a new tool is never skipped without a word.
pub fn everything_calls() -> Vec<EverythingCall> {
    use serde_json::json;
    let once = |tool, arguments| EverythingCall {
        tool,
        arguments,
        tries: 1,
    };
    // A small file given inline, so that the tool reads no network.
    let file = "data:text/plain;base64,aGVsbG8gcmhvLCBoZWxsbyByaG8sIGhlbGxvIHJobw==";
    vec![
        once("echo", json!({ "message": "hello, whole" })),
        // [text, image, text]: the order the old import lost.
        once("get-tiny-image", json!({})),
        // Annotations on a text and on an image.
        once(
            "get-annotated-message",
            json!({ "messageType": "error", "includeImage": true }),
        ),
        once(
            "get-annotated-message",
            json!({ "messageType": "success", "includeImage": false }),
        ),
        once(
            "get-annotated-message",
            json!({ "messageType": "debug", "includeImage": true }),
        ),
        // The server's environment, the same on both sides when both
        // servers were started with the same.
        once("get-env", json!({})),
        // A text, then resource links.
        once("get-resource-links", json!({ "count": 4 })),
        // [text, embedded resource, text], a blob then a text; each
        // resource says when it was made, to the second.
        EverythingCall {
            tool: "get-resource-reference",
            arguments: json!({ "resourceType": "Blob", "resourceId": 3 }),
            tries: 3,
        },
        EverythingCall {
            tool: "get-resource-reference",
            arguments: json!({ "resourceType": "Text", "resourceId": 2 }),
            tries: 3,
        },
        // Structured content beside its JSON as text.
        once(
            "get-structured-content",
            json!({ "location": "Los Angeles" }),
        ),
        once("get-sum", json!({ "a": 1.5, "b": 2 })),
        // An embedded binary resource (gzip bytes), then a link to one.
        once(
            "gzip-file-as-resource",
            json!({ "name": "whole.gz", "data": file, "outputType": "resource" }),
        ),
        once(
            "gzip-file-as-resource",
            json!({ "name": "link.gz", "data": file, "outputType": "resourceLink" }),
        ),
        // Each starts something on its server and says so; the first
        // call of a fresh server says the same on both sides.
        once("toggle-simulated-logging", json!({})),
        once("toggle-subscriber-updates", json!({})),
        once(
            "trigger-long-running-operation",
            json!({ "duration": 0.2, "steps": 2 }),
        ),
        // It runs only as a task (`execution.taskSupport: "required"`):
        // the raw client calls it as one, rho's import runs its plain
        // call as one.
        once("simulate-research-query", json!({ "topic": "rho" })),
    ]
}

/// The reference server driven by hand over stdio: its answers as it
/// wrote them, with no SDK in between. Killed when dropped.
pub struct RawEverything {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl RawEverything {
    /// Starts the server and makes the handshake (offering it nothing).
    pub fn start() -> Self {
        let mut child = Command::new(node())
            .arg(everything())
            .arg("stdio")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node starts the reference server");
        let stdin = child.stdin.take().expect("piped");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut raw = Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        raw.request(
            "initialize",
            serde_json::json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "rho-raw", "version": "1" } }),
        );
        raw.send(&serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        raw
    }

    /// The result the server answered `tools/call` of `tool` with.
    ///
    /// # Panics
    ///
    /// When it answered with a JSON-RPC error.
    pub fn call(&mut self, tool: &str, arguments: &Value) -> Value {
        self.request(
            "tools/call",
            serde_json::json!({ "name": tool, "arguments": arguments }),
        )
    }

    /// The result of `tool` called as a task of 2025-11-25: `tools/call`
    /// with `task`, then `tasks/result`, which the server answers once
    /// the task has ended.
    ///
    /// # Panics
    ///
    /// When the server made no task of the call, or answered with a
    /// JSON-RPC error.
    pub fn call_as_task(&mut self, tool: &str, arguments: &Value) -> Value {
        let created = self.request(
            "tools/call",
            serde_json::json!({ "name": tool, "arguments": arguments, "task": {} }),
        );
        let id = created["task"]["taskId"].clone();
        assert!(id.is_string(), "no task was made of `{tool}`: {created}");
        self.request("tasks/result", serde_json::json!({ "taskId": id }))
    }

    /// The names of the tools the server lists as runnable only as
    /// tasks, once it lists every one of `expected` (it adds some after
    /// the handshake).
    ///
    /// # Panics
    ///
    /// When it does not list them all within 10 s.
    pub fn task_only_tools(&mut self, expected: &[String]) -> Vec<String> {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let listed = self.request("tools/list", serde_json::json!({}));
            let tools = listed["tools"].as_array().cloned().unwrap_or_default();
            let has = |name: &String| tools.iter().any(|tool| tool["name"] == name.as_str());
            if expected.iter().all(has) {
                return tools
                    .iter()
                    .filter(|tool| tool["execution"]["taskSupport"] == "required")
                    .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
                    .collect();
            }
            assert!(
                std::time::Instant::now() < until,
                "the raw server does not list all of {expected:?}: {listed}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn send(&mut self, message: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").expect("the server reads");
    }

    /// The result of the request, past the notifications before it.
    fn request(&mut self, method: &str, params: Value) -> Value {
        use std::io::BufRead;
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            &serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        );
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("the server writes");
            assert!(read > 0, "the reference server closed its stdout");
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] != id || message.get("method").is_some() {
                continue;
            }
            match message.get("result") {
                Some(result) => return result.clone(),
                None => panic!("`{method}` failed: {message}"),
            }
        }
    }
}

impl Drop for RawEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
