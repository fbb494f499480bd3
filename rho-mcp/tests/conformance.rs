//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in `tests/peers/conformance`, run by the Node 22 pinned beside
//! it) judging rho's `McpServer` over streamable HTTP, as it judges the
//! SDKs: every server scenario, at each protocol revision rho speaks
//! (2025-11-25 with sessions, 2026-07-28 stateless).
//!
//! The server is a registry of the suite's fixture tools
//! (`conformance/registry.rs`) with its resources and prompts beside them
//! (`conformance/features.rs`), served in this process. A scenario that
//! fails must be listed, with its reason, in the revision's baseline
//! (`conformance/baseline-<revision>.yml`); the suite fails the run both
//! for a failure not listed and for a listed scenario that passes, so the
//! baseline can only shrink as rho learns what it lacks. The suite's own
//! output for each run is kept under `target/conformance/`.

#[path = "conformance/asking.rs"]
mod asking;
#[path = "conformance/features.rs"]
mod features;
mod import_support;
#[path = "conformance/input.rs"]
mod input;
#[path = "conformance/judge.rs"]
mod judge;
#[path = "conformance/registry.rs"]
mod registry;
#[path = "conformance/tasks.rs"]
mod tasks;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::{HttpOptions, McpServer};

/// The scenarios of the suite's extensions (not part of a revision: the
/// suite runs them only when named): the tasks extension. The suite's
/// `tasks-status-notifications` skips its one check at this version (its
/// harness still reads task notifications from the call's response, where
/// SEP-2663 no longer sends them); it stays, to judge rho once the suite
/// does. Not run: the skills extension (SEP-2640, `sep-2640-skills-*`),
/// which rho's server does not offer (skills are a host's content, not
/// calls), so the suite would skip each of its checks and judge nothing.
const EXTENSION_SCENARIOS: &[&str] = &[
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// Serves the fixture registry over streamable HTTP on loopback, runs the
/// suite against it once for each selection of server scenarios in `runs`
/// (its arguments after `--url`) with the baseline of `leg`, and fails
/// naming every check that failed outside the baseline.
fn judge_server(leg: &str, runs: &[Vec<&str>]) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let http = runtime.block_on(async {
        let features = features::Features::default();
        McpServer::new(
            TokioExecutor::current().expect("a runtime"),
            registry::registry(&features),
        )
        .with_features(std::sync::Arc::new(features))
        .with_tasks(tasks::tasks())
        .serve_http(HttpOptions::new())
        .await
        .expect("serves on loopback")
    });
    let url = http.url();
    let judged = judge::Judged::new("server", leg);
    let disagreed: Vec<String> = runs
        .iter()
        .filter_map(|run| judged.run(&[&["server", "--url", &url], &run[..]].concat()))
        .collect();
    runtime.block_on(http.shutdown()).expect("stops");
    judged.conclude("rho's server", &disagreed);
}

/// Every server scenario at 2025-11-25 (sessions, `initialize`) passes or
/// is in its baseline with a reason.
#[test]
fn the_suite_passes_the_server_at_2025_11_25_but_for_its_baseline() {
    judge_server(
        "2025-11-25",
        &[vec!["--suite", "all", "--spec-version", "2025-11-25"]],
    );
}

/// Every server scenario at 2026-07-28 (stateless, input-required
/// results) passes or is in its baseline with a reason.
#[test]
fn the_suite_passes_the_server_at_2026_07_28_but_for_its_baseline() {
    judge_server(
        "2026-07-28",
        &[vec!["--suite", "all", "--spec-version", "2026-07-28"]],
    );
}

/// Every scenario of the suite's tasks extension passes or is in its
/// baseline with a reason.
#[test]
fn the_suite_passes_the_server_s_extensions_but_for_their_baseline() {
    let runs: Vec<Vec<&str>> = EXTENSION_SCENARIOS
        .iter()
        .map(|scenario| vec!["--scenario", scenario])
        .collect();
    judge_server("extensions", &runs);
}
