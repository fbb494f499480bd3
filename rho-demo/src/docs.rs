//! The demo's MCP server, and its import: a documentation server that this
//! same program serves over stdio when started with [`SERVE_FLAG`], which
//! the session imports as a source of its registry. So the demo shows a
//! tool that comes from another process over MCP while it needs nothing
//! but Rust to run.

use std::sync::Arc;
use std::time::Duration;

use rho::mcp::McpServer;
use rho::mcp::import::McpSource;
use rho::{Source, Tool, ToolAnnotations, ToolContext, ToolOutput, ToolRegistry, async_trait};

use crate::fail;

/// The long flag (`--serve-docs-over-mcp`) that makes this program the
/// documentation server.
pub(crate) const SERVE_FLAG: &str = "serve-docs-over-mcp";

/// How long rho gives an imported call: the server itself sets no
/// timeout, and neither does the MCP SDK.
const IMPORTED_TIMEOUT: Duration = Duration::from_millis(400);

/// Searches the documentation.
struct SearchDocs;

#[async_trait]
impl Tool for SearchDocs {
    fn name(&self) -> &str {
        "search_docs"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Searches the project's documentation."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "query": { "type": "string" } },
            "required": ["query"],
        })
    }
    async fn run(&self, args: serde_json::Value, cx: ToolContext) -> ToolOutput {
        cx.sleep(Duration::from_millis(30)).await;
        let query = args["query"].as_str().unwrap_or_default();
        ToolOutput::text(format!(
            "2 pages mention `{query}`: guide/timeouts.md, guide/approval.md"
        ))
    }
}

/// Fetches a page, from a wiki that never answers.
struct FetchPage;

#[async_trait]
impl Tool for FetchPage {
    fn name(&self) -> &str {
        "fetch_page"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }
    fn description(&self) -> &str {
        "Fetches a page of the wiki."
    }
    fn timeout(&self) -> Duration {
        // The server's own tool waits for ever: only the importing side's
        // clock can end it.
        Duration::MAX
    }
    async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        std::future::pending::<()>().await;
        ToolOutput::text("never")
    }
}

/// Serves the documentation tools over stdio until stdin ends, then exits.
pub(crate) fn serve() -> ! {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|error| fail(&format!("cannot start the docs server: {error}")));
    let registry = ToolRegistry::new();
    let tools: [Arc<dyn Tool>; 2] = [Arc::new(SearchDocs), Arc::new(FetchPage)];
    if let Err(error) = registry
        .add_source(Source::trusted("docs"))
        .and_then(|source| source.add_all(tools))
    {
        fail(&format!("cannot register the docs tools: {error}"));
    }
    let served = runtime.block_on(async {
        let executor = rho::tokio::TokioExecutor::current().map_err(|error| error.to_string())?;
        McpServer::new(executor, registry)
            .with_name("rho-demo-docs", env!("CARGO_PKG_VERSION"))
            .serve_stdio()
            .await
            .map_err(|error| error.to_string())
    });
    if let Err(error) = served {
        fail(&format!("the docs server stopped: {error}"));
    }
    std::process::exit(0);
}

/// Starts this program as the documentation server and imports its tools
/// into `registry`, as the untrusted source `docs`.
pub(crate) async fn import(registry: &ToolRegistry) -> McpSource {
    let program = std::env::current_exe()
        .unwrap_or_else(|error| fail(&format!("cannot find the demo's own program: {error}")));
    McpSource::stdio("docs", program)
        .arg(format!("--{SERVE_FLAG}"))
        .timeout(IMPORTED_TIMEOUT)
        .connect(registry)
        .await
        .unwrap_or_else(|error| fail(&format!("cannot import the docs server: {error}")))
}
