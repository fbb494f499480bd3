//! What the MCP figures share: the same no-op tool served by rho and by a
//! bare rmcp server, the client both are called with, and the hidden
//! subcommands that run the stdio servers of the proxy figure.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::McpServer;
use rho_mcp::proxy::ProxyOptions;
use rho_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rho_mcp::rmcp::service::{RequestContext, RunningService};
use rho_mcp::rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

/// The tool's name on both servers.
pub(crate) const TOOL: &str = "noop";
/// Serves the bare no-op server over stdio (the proxy figure's server).
pub(crate) const NOOP_SERVER: &str = "__mcp_noop";
/// Runs the proxy in front of [`NOOP_SERVER`], over stdio.
pub(crate) const PROXY: &str = "__mcp_proxy";
/// Relays bytes to and from [`NOOP_SERVER`] without reading them: the
/// floor of any proxy that is a process of its own.
pub(crate) const RELAY: &str = "__mcp_relay";
/// The same relay on a current-thread tokio runtime's reactor: the floor
/// of any proxy built on tokio, as rmcp's are.
pub(crate) const REACTOR_RELAY: &str = "__mcp_reactor_relay";

/// The bare rmcp server: `tools/list` and `tools/call` of one tool that
/// answers "ok", and nothing else.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bare;

fn bare_tool() -> rho_mcp::rmcp::model::Tool {
    let schema = json!({ "type": "object" });
    let Value::Object(schema) = schema else {
        unreachable!("an object literal")
    };
    rho_mcp::rmcp::model::Tool::new(TOOL, "Answers `ok`.", Arc::new(schema))
}

impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bare-noop", "1"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![bare_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params("no such tool", None));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
    }
}

/// rho's side of the same tool.
struct Noop;

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        TOOL
    }
    fn description(&self) -> &str {
        "Answers `ok`."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object" })
    }
    async fn run(&self, _arguments: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("ok")
    }
}

/// rho's server of the no-op tool, its calls on the current tokio runtime.
pub(crate) fn rho_server() -> McpServer<TokioExecutor> {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("bench"))
        .and_then(|source| source.add(Noop))
        .expect("a fresh registry takes one tool");
    let executor = TokioExecutor::current().expect("a tokio runtime with a timer");
    McpServer::new(executor, registry)
}

/// A client of whatever serves `reader` and `writer`: rmcp's, with no
/// handler of its own.
pub(crate) async fn client<R, W>(reader: R, writer: W) -> RunningService<RoleClient, ()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    ().serve((reader, writer))
        .await
        .expect("the MCP handshake succeeds")
}

/// One call of the no-op tool; panics unless it answered "ok" (a figure
/// of failed calls would measure nothing).
pub(crate) async fn call(client: &RunningService<RoleClient, ()>) {
    let result = client
        .call_tool(CallToolRequestParams::new(TOOL))
        .await
        .expect("the call is answered");
    assert_ne!(
        result.is_error,
        Some(true),
        "the no-op call failed: {result:?}"
    );
}

/// A multi-threaded runtime with the bench's worker count.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::rt::WORKERS)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// `rho-bench __mcp_noop`: the bare server over stdio, until stdin ends.
pub(crate) fn noop_server() {
    runtime().block_on(async {
        let running = Bare
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .expect("the MCP handshake succeeds");
        let _ = running.waiting().await;
    });
}

/// `rho-bench __mcp_proxy`: the proxy (rho_mcp::proxy, as `rho-mcp proxy`
/// runs it: no policy, no audit log, a current-thread runtime) in front of
/// `rho-bench __mcp_noop`, over stdio.
pub(crate) fn proxy() {
    let this = std::env::current_exe().expect("this binary's path");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let proxy = ProxyOptions::new(this)
            .args([NOOP_SERVER])
            .timeout(Duration::from_secs(60))
            .start()
            .await
            .expect("the proxy starts");
        proxy.serve_stdio().await.expect("the proxy serves");
    });
}

/// `rho-bench __mcp_relay`: `rho-bench __mcp_noop` as a child, each byte
/// of stdin copied to its stdin and each byte of its stdout to stdout as
/// soon as it is read, by two threads in blocking reads: the least work a
/// proxy in a process of its own can do per message (two more pipes and
/// two more wake-ups), with no parsing and no runtime.
pub(crate) fn relay() {
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::process::{Command, Stdio};

    /// Copies until `from` ends, writing each read at once (no buffer in
    /// between to flush).
    fn pump(mut from: impl Read, mut to: impl Write) {
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            match from.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(read) => {
                    if to.write_all(&buffer[..read]).is_err() {
                        return;
                    }
                }
            }
        }
    }

    let this = std::env::current_exe().expect("this binary's path");
    let mut child = Command::new(this)
        .arg(NOOP_SERVER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("this binary starts again");
    let to_child = child.stdin.take().expect("piped");
    let from_child = child.stdout.take().expect("piped");
    // Unbuffered handles of this process's own stdin and stdout.
    let stdin = std::fs::File::from(
        std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .expect("stdin is open"),
    );
    let stdout = std::fs::File::from(
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .expect("stdout is open"),
    );
    let answers = std::thread::spawn(move || pump(from_child, stdout));
    // When the client closes stdin, so does the child's: it ends, and its
    // stdout with it.
    pump(stdin, to_child);
    let _ = answers.join();
    let _ = child.wait();
}

/// `rho-bench __mcp_reactor_relay`: the byte relay of [`relay`], but on a
/// current-thread tokio runtime, each side woken by the reactor (epoll)
/// as a proxy on tokio is: what a proxy pays for its runtime before it
/// reads a byte.
pub(crate) fn reactor_relay() {
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
    use tokio::net::unix::pipe;

    /// Copies until `from` ends, writing each read at once.
    async fn pump(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin) {
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            match from.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => {
                    if to.write_all(&buffer[..read]).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let this = std::env::current_exe().expect("this binary's path");
        let mut child = tokio::process::Command::new(this)
            .arg(NOOP_SERVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("this binary starts again");
        let to_child = child.stdin.take().expect("piped");
        let from_child = child.stdout.take().expect("piped");
        // The bench gives this process pipes: reopened, they are read and
        // written on the reactor.
        let stdin = pipe::OpenOptions::new()
            .open_receiver("/proc/self/fd/0")
            .expect("stdin is a pipe");
        let stdout = pipe::OpenOptions::new()
            .open_sender("/proc/self/fd/1")
            .expect("stdout is a pipe");
        let answers = tokio::spawn(pump(from_child, stdout));
        pump(stdin, to_child).await;
        let _ = answers.await;
        let _ = child.wait().await;
    });
}
