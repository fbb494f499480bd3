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
#[path = "conformance/registry.rs"]
mod registry;
#[path = "conformance/tasks.rs"]
mod tasks;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use import_support::{install_peers, target_dir};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::{HttpOptions, McpServer};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The suite's directory, installed by `tests/peers/install-conformance.sh`
/// the first time it is asked for.
///
/// # Panics
///
/// Loudly, with the installer's words, when npm, the registry or this
/// machine cannot install it: the conformance tests never pass without the
/// suite.
fn suite() -> &'static Path {
    static SUITE: OnceLock<PathBuf> = OnceLock::new();
    SUITE.get_or_init(|| {
        install_peers(
            "install-conformance.sh",
            "conformance",
            "the MCP conformance tests need the pinned conformance suite and its Node 22 from \
             the npm registry",
            "Install npm",
        )
    })
}

/// The scenarios of the suite's extensions (not part of a revision: the
/// suite runs them only when named).
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
    "sep-2640-skills-directory",
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
];

/// Serves the fixture registry over streamable HTTP on loopback, runs the
/// suite against it once for each selection of server scenarios in `runs`
/// (its arguments after `--url`) with the baseline of `leg`, and fails
/// naming every check that failed outside the baseline.
fn judge_server(leg: &str, runs: &[Vec<&str>]) {
    let suite = suite();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let http = runtime.block_on(async {
        McpServer::new(
            TokioExecutor::current().expect("a runtime"),
            registry::registry(),
        )
        .with_features(std::sync::Arc::new(features::Features))
        .with_tasks(tasks::tasks())
        .serve_http(HttpOptions::new())
        .await
        .expect("serves on loopback")
    });
    let results = target_dir()
        .join("conformance")
        .join(format!("server-{leg}"));
    let _ = std::fs::remove_dir_all(&results);
    let baseline = here()
        .join("conformance")
        .join(format!("baseline-{leg}.yml"));
    let mut disagreed = Vec::new();
    for run in runs {
        let output = Command::new(suite.join("node_modules/.bin/node"))
            .arg(suite.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["server", "--url", &http.url()])
            .args(run)
            .arg("--expected-failures")
            .arg(&baseline)
            .arg("-o")
            .arg(&results)
            .output()
            .expect("the pinned Node runs");
        if !output.status.success() {
            disagreed.push(format!(
                "{}:\n{}\n{}",
                run.join(" "),
                summary(&String::from_utf8_lossy(&output.stdout)),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    runtime.block_on(http.shutdown()).expect("stops");
    if !disagreed.is_empty() {
        panic!(
            "\n\n*** the MCP conformance suite judged rho's server ({leg}) and did not agree \
             with {} ***\n\nfailed checks (listed or not):\n{}\n\nthe suite's summaries:\n{}\n\
             (its results are in {})\n",
            baseline.display(),
            failed_checks(&results).join("\n"),
            disagreed.join("\n\n"),
            results.display(),
        );
    }
}

/// The suite's lines that say how a scenario went, and its totals.
fn summary(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            line.starts_with('✓')
                || line.starts_with('✗')
                || line.contains("passed")
                || line.contains("baseline")
                || line.contains("xpected")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `scenario: check: message` for each failed check the suite recorded.
fn failed_checks(results: &Path) -> Vec<String> {
    let mut failed = Vec::new();
    let Ok(runs) = std::fs::read_dir(results) else {
        return failed;
    };
    let mut runs: Vec<PathBuf> = runs.flatten().map(|entry| entry.path()).collect();
    runs.sort();
    for run in runs {
        let Ok(text) = std::fs::read_to_string(run.join("checks.json")) else {
            continue;
        };
        let checks: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let scenario = run
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        for check in checks.as_array().into_iter().flatten() {
            if check["status"] == "FAILURE" {
                failed.push(format!(
                    "  {scenario}: {}: {}",
                    check["id"].as_str().unwrap_or("?"),
                    check["errorMessage"].as_str().unwrap_or("")
                ));
            }
        }
    }
    failed
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

/// Every scenario of the suite's extensions (tasks, skills) passes or is
/// in its baseline with a reason.
#[test]
fn the_suite_passes_the_server_s_extensions_but_for_their_baseline() {
    let runs: Vec<Vec<&str>> = EXTENSION_SCENARIOS
        .iter()
        .map(|scenario| vec!["--scenario", scenario])
        .collect();
    judge_server("extensions", &runs);
}
