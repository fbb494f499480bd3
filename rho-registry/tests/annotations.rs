//! What the registry lists of a tool's annotations and output schema: read
//! once at registration, checked, and shown in MCP's `Tool` shape.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho_registry::{RegistryError, Source, ToolRegistry};
use rho_tool_core::{
    AnnotationGate, ApprovalRequest, Outcome, Runner, Tool, ToolAnnotations, ToolCall, ToolContext,
    ToolOutput, Verdict, async_trait,
};
use serde_json::json;
use support::scripted;

/// A tool with the annotations and output schema it is given, counting
/// how often its metadata is read.
struct Described {
    name: &'static str,
    annotations: ToolAnnotations,
    output_schema: Option<serde_json::Value>,
    reads: Arc<AtomicUsize>,
}

impl Described {
    fn new(
        name: &'static str,
        annotations: ToolAnnotations,
        output_schema: Option<serde_json::Value>,
    ) -> Self {
        Self {
            name,
            annotations,
            output_schema,
            reads: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[async_trait]
impl Tool for Described {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        "Describes itself."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": { "path": { "type": "string" } } })
    }

    fn annotations(&self) -> ToolAnnotations {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.annotations.clone()
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.output_schema.clone()
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text(format!("{} ran", self.name)).with_details(json!({ "lines": 3 }))
    }
}

fn lines_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": { "lines": { "type": "integer" } },
        "required": ["lines"],
    })
}

#[test]
fn the_listing_carries_annotations_and_the_output_schema_read_once() {
    let registry = ToolRegistry::new();
    let source = registry.add_source(Source::trusted("files")).expect("new");
    let hints = ToolAnnotations::new()
        .title("Count lines")
        .read_only()
        .open_world(false);
    let tool = Described::new("count_lines", hints.clone(), Some(lines_schema()));
    let reads = tool.reads.clone();
    source.add(Arc::new(tool)).expect("a good tool");
    // Annotations, output schema, and annotations again through the
    // provided `Tool::concurrency`: all at registration.
    assert_eq!(reads.load(Ordering::SeqCst), 3, "each read at registration");
    assert_eq!(
        registry.tools()[0].concurrency,
        rho_tool_core::Concurrency::Shared
    );

    let listed = registry.tools();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].annotations, hints);
    assert_eq!(listed[0].output_schema, Some(lines_schema()));
    let resolved = registry.resolve("count_lines").expect("registered");
    assert_eq!(resolved.info().annotations, hints);
    assert_eq!(
        reads.load(Ordering::SeqCst),
        3,
        "listing and look-up run no tool code"
    );
}

#[test]
fn a_tool_without_them_lists_none_and_to_json_is_unchanged() {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("builtin"))
        .expect("new");
    source.add(scripted("search")).expect("new");
    let info = registry
        .resolve("search")
        .expect("registered")
        .info()
        .clone();
    assert!(info.annotations.is_empty());
    assert_eq!(info.output_schema, None);
    assert_eq!(
        info.to_mcp_json(),
        json!({
            "name": "search",
            "description": "Does what `do` says.",
            "inputSchema": { "type": "object", "properties": { "do": { "type": "string" } } },
        })
    );
    assert_eq!(
        info.to_json(),
        json!({
            "name": "search",
            "description": "Does what `do` says.",
            "parameters": { "type": "object", "properties": { "do": { "type": "string" } } },
        })
    );
}

#[test]
fn to_mcp_json_gives_mcps_tool_shape() {
    let registry = ToolRegistry::new();
    let source = registry.add_source(Source::trusted("files")).expect("new");
    let hints = ToolAnnotations::new()
        .title("Delete a file")
        .destructive(true)
        .idempotent(true);
    source
        .add(Arc::new(Described::new(
            "delete_file",
            hints,
            Some(lines_schema()),
        )))
        .expect("a good tool");
    let info = registry
        .resolve("delete_file")
        .expect("registered")
        .info()
        .clone();
    assert_eq!(
        info.to_mcp_json(),
        json!({
            "name": "delete_file",
            "title": "Delete a file",
            "description": "Describes itself.",
            "inputSchema": { "type": "object", "properties": { "path": { "type": "string" } } },
            "outputSchema": lines_schema(),
            "annotations": {
                "title": "Delete a file",
                "destructiveHint": true,
                "idempotentHint": true,
            },
        })
    );
    // The model's function definition stays as it was.
    assert_eq!(
        info.to_json(),
        json!({
            "name": "delete_file",
            "description": "Describes itself.",
            "parameters": { "type": "object", "properties": { "path": { "type": "string" } } },
        })
    );

    // Hints without a title: no `title` key, the hints under `annotations`.
    source
        .add(Arc::new(Described::new(
            "append",
            ToolAnnotations::new().destructive(false),
            None,
        )))
        .expect("a good tool");
    let mcp = registry
        .resolve("append")
        .expect("registered")
        .info()
        .to_mcp_json();
    assert_eq!(mcp.get("title"), None);
    assert_eq!(mcp.get("outputSchema"), None);
    assert_eq!(mcp["annotations"], json!({ "destructiveHint": false }));
}

#[test]
fn an_untrusted_tools_hints_are_kept_but_not_passed_on_as_the_hosts_word() {
    let registry = ToolRegistry::new();
    let agent = registry
        .add_source(Source::untrusted("agent"))
        .expect("new");
    let claims = ToolAnnotations::new().title("Harmless").read_only();
    agent
        .add(Arc::new(Described::new(
            "script",
            claims.clone(),
            Some(lines_schema()),
        )))
        .expect("a good tool");
    let resolved = registry.resolve("script").expect("registered");
    let info = resolved.info();
    assert!(info.untrusted);
    assert_eq!(info.annotations, claims, "the host can see the claims");
    let mcp = info.to_mcp_json();
    assert_eq!(mcp["title"], "Harmless");
    assert_eq!(
        mcp["annotations"],
        json!({ "title": "Harmless" }),
        "no hint of an untrusted tool is listed as the host's"
    );
    assert_eq!(mcp["outputSchema"], lines_schema());

    // The tool the gate gets is marked untrusted by its source and still
    // states its own annotations and schema.
    let tool = resolved.tool();
    assert!(tool.is_untrusted());
    assert_eq!(tool.annotations(), claims);
    assert_eq!(tool.output_schema(), Some(lines_schema()));
}

#[test]
fn an_output_schema_that_is_not_a_json_object_is_refused() {
    let registry = ToolRegistry::new();
    let source = registry.add_source(Source::trusted("plugin")).expect("new");
    for schema in [json!(true), json!("object"), json!([{ "type": "object" }])] {
        let error = source
            .add(Arc::new(Described::new(
                "odd",
                ToolAnnotations::new(),
                Some(schema.clone()),
            )))
            .expect_err("not an object");
        assert_eq!(
            error,
            RegistryError::BadTool {
                source_name: "plugin".into(),
                reason: "its output schema is not a JSON object".into(),
            },
            "{schema}"
        );
    }
    assert!(registry.tools().is_empty());
}

/// A tool whose annotations panic.
struct BadHints;

#[async_trait]
impl Tool for BadHints {
    fn name(&self) -> &str {
        "bad_hints"
    }

    fn description(&self) -> &str {
        "Its annotations panic."
    }

    fn annotations(&self) -> ToolAnnotations {
        panic!("no hints today")
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("never")
    }
}

#[test]
fn a_tool_whose_annotations_panic_is_refused_at_registration() {
    let _quiet = support::QuietPanics::new();
    let registry = ToolRegistry::new();
    let source = registry.add_source(Source::trusted("plugin")).expect("new");
    let error = source.add(Arc::new(BadHints)).expect_err("it panics");
    assert_eq!(
        error,
        RegistryError::BadTool {
            source_name: "plugin".into(),
            reason: "reading its metadata panicked: no hints today".into(),
        }
    );
    assert!(registry.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_asks_about_a_tool_of_an_untrusted_source_that_claims_read_only() {
    let registry = ToolRegistry::new();
    let claims = ToolAnnotations::new().read_only();
    registry
        .add_source(Source::untrusted("agent"))
        .expect("new")
        .add(Arc::new(Described::new("peek", claims.clone(), None)))
        .expect("new");
    registry
        .add_source(Source::trusted("builtin"))
        .expect("new")
        .add(Arc::new(Described::new("look", claims, None)))
        .expect("new");

    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let approver = move |request: ApprovalRequest| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            assert!(request.untrusted, "only the untrusted tool is asked about");
            Verdict::deny("not today")
        }
    };
    let executor = rho_exec_tokio::TokioExecutor::current().expect("a timer");
    let runner = Runner::new(executor)
        .with_gate(Arc::new(AnnotationGate::new()))
        .with_approver(Arc::new(approver));

    let look = {
        let call = ToolCall::new("1", "look", json!({}));
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    }
    .await;
    assert_eq!(look.outcome, Outcome::Succeeded);
    assert_eq!(asked.load(Ordering::SeqCst), 0);

    // The tool does not say it is untrusted; its source does, and the gate
    // sees that through the registry.
    let peek = {
        let call = ToolCall::new("2", "peek", json!({}));
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    }
    .await;
    assert_eq!(peek.outcome, Outcome::Denied);
    assert_eq!(
        peek.result.text(),
        "tool `peek` was not run: the gate denied it: not approved: not today"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}
