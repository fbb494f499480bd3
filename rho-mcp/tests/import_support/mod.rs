//! What the import tests share: the pinned MCP reference server and the
//! fault server, each run with node, and runners on tokio and smol.

#![allow(dead_code, unreachable_pub)]

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
fn target_dir() -> PathBuf {
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
        let dir = target_dir().join("peers").join("node");
        let script = peers_dir().join("install-node.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .output()
            .unwrap_or_else(|error| {
                panic!("\n\n*** cannot run {}: {error} ***\n", script.display())
            });
        if !output.status.success() {
            panic!(
                "\n\n*** the MCP import tests need node (20 or later) and the pinned MCP reference \
                 server, and it could not be installed ***\n{} said ({}):\n{}{}\nInstall Node.js \
                 with npm and allow access to the npm registry, or run the script by hand.\n",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        }
        dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    })
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

/// The reference server as a source named `name`.
pub fn everything_source(name: &str) -> McpSourceBuilder {
    McpSource::stdio(name, node())
        .arg(everything())
        .arg("stdio")
}

/// The fault server as a source named `name`.
pub fn fault_source(name: &str) -> McpSourceBuilder {
    McpSource::stdio(name, node()).arg(peers_dir().join("node").join("fault-server.mjs"))
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
    registry
        .start(runner, ToolCall::new(id, tool, arguments))
        .await
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
