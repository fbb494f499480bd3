//! The MCP soak's stand-in over streamable HTTP, and the supervisor that
//! keeps it up.
//!
//! The stand-in is rho's own `McpServer` on a loopback port the soak
//! gives it, with the stdio stand-in's tools but `garbage` (rho's server
//! only writes well-formed answers): `echo`, `fail`, `sleep`, `hang`, and
//! `die`, which exits the process in the middle of its call and so breaks
//! every connection to it. `rho-soak __mcp_http_stand_in PORT MARKER` runs
//! it until its stdin ends; the marker only lets the soak find its
//! processes.
//!
//! An HTTP server is nobody's child, so nothing in rho-mcp starts it
//! again: the [`Supervisor`] does, on the same port, each time it dies, as
//! a service manager would.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::{HttpOptions, McpServer};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// The subcommand that runs the stand-in.
pub(crate) const SUBCOMMAND: &str = "__mcp_http_stand_in";

/// One of the stand-in's tools, doing what its name says.
struct StandIn(&'static str);

#[async_trait]
impl Tool for StandIn {
    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        "Misbehaves as its name says."
    }

    fn parameters(&self) -> Value {
        let property = match self.0 {
            "echo" => json!({ "text": { "type": "string" } }),
            "sleep" => json!({ "ms": { "type": "integer" } }),
            "die" => json!({ "code": { "type": "integer" } }),
            _ => json!({}),
        };
        json!({ "type": "object", "properties": property })
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        match self.0 {
            "echo" => ToolOutput::text(arguments["text"].as_str().unwrap_or_default()),
            "fail" => ToolOutput::error("it failed"),
            "sleep" => {
                let ms = arguments["ms"].as_u64().unwrap_or(0);
                context.sleep(Duration::from_millis(ms)).await;
                ToolOutput::text("slept")
            }
            "die" => {
                let code = arguments["code"].as_i64().unwrap_or(1);
                eprintln!("stand-in: dying with code {code}");
                std::process::exit(i32::try_from(code).unwrap_or(1));
            }
            // `hang`: longer than any call of the soak waits.
            _ => {
                context.sleep(Duration::from_secs(3600)).await;
                ToolOutput::text("woke")
            }
        }
    }
}

/// Runs the stand-in on `port` of the loopback interface.
pub(crate) fn main(port: u16) {
    // The soak holds the other end of stdin: when it goes, so does this.
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    let Ok(runtime) = runtime else {
        std::process::exit(3);
    };
    runtime.block_on(async move {
        let registry = ToolRegistry::new();
        let tools = ["echo", "fail", "sleep", "hang", "die"]
            .map(|name| Arc::new(StandIn(name)) as Arc<dyn Tool>);
        let added = registry
            .add_source(Source::trusted("stand-in"))
            .map(|source| source.add_all(tools));
        let Ok(executor) = TokioExecutor::current() else {
            std::process::exit(3);
        };
        if !matches!(added, Ok(Ok(_))) {
            std::process::exit(3);
        }
        let server = McpServer::new(executor, registry).with_max_calls_per_session(1024);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        // The port may still be held by the one that just died: the
        // supervisor starts this again.
        let Ok(_serving) = server.serve_http(HttpOptions::new().bind(addr)).await else {
            std::process::exit(4);
        };
        std::future::pending::<()>().await;
    });
}

/// Keeps one stand-in up on `port`, starting it again whenever it ends,
/// until stopped.
pub(crate) struct Supervisor {
    stop: Arc<AtomicBool>,
    starts: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Supervisor {
    /// Starts the first stand-in and waits (at most 10 s) until it takes
    /// connections.
    pub(crate) fn start(port: u16, marker: &str) -> Result<Self, String> {
        let this = std::env::current_exe().map_err(|error| error.to_string())?;
        let spawn = {
            let marker = marker.to_owned();
            move || {
                Command::new(&this)
                    .args([SUBCOMMAND, &port.to_string(), &marker])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
            }
        };
        let first = spawn().map_err(|error| format!("the HTTP stand-in: {error}"))?;
        let (stop, starts) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(1)),
        );
        let thread = {
            let (stop, starts) = (Arc::clone(&stop), Arc::clone(&starts));
            std::thread::spawn(move || keep_up(first, &spawn, &stop, &starts))
        };
        let supervisor = Self {
            stop,
            starts,
            thread: Some(thread),
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let waited = Instant::now();
        while TcpStream::connect(addr).is_err() {
            if waited.elapsed() > Duration::from_secs(10) {
                return Err(format!("the HTTP stand-in did not listen on {addr}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(supervisor)
    }

    /// How many stand-ins were started (1 + the restarts).
    pub(crate) fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// Stops the stand-in for good, and waits for it (as dropping does).
    pub(crate) fn stop(self) {
        drop(self);
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The supervisor's thread: watches `child`, starts another when it
/// ends, kills and reaps the last one when told to stop.
fn keep_up(
    mut child: Child,
    spawn: &dyn Fn() -> std::io::Result<Child>,
    stop: &AtomicBool,
    starts: &AtomicU64,
) {
    loop {
        if stop.load(Ordering::Relaxed) {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        match child.try_wait() {
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Ok(Some(_)) | Err(_) => match spawn() {
                Ok(next) => {
                    child = next;
                    starts.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            },
        }
    }
}

/// A loopback port nobody listens on now.
pub(crate) fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|error| format!("no free port: {error}"))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|error| error.to_string())
}
