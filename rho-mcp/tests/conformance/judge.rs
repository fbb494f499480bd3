//! Running the official MCP conformance suite (pinned in
//! `tests/peers/conformance`, run by the Node 22 pinned beside it) and
//! reading its verdict against a baseline of expected failures.

#![allow(unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::import_support::{install_peers, target_dir};

/// The suite's directory, installed by `tests/peers/install-conformance.sh`
/// the first time it is asked for.
///
/// # Panics
///
/// Loudly, with the installer's words, when npm, the registry or this
/// machine cannot install it: the conformance tests never pass without the
/// suite.
pub fn suite() -> &'static Path {
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

/// One judgement: a side of rho (`server`, `client`) at one leg (a
/// revision, or the extensions), with its baseline
/// (`conformance/baseline-<side>-<leg>.yml`, or `baseline-<leg>.yml` for
/// the server) and where the suite keeps its results.
pub struct Judged {
    baseline: PathBuf,
    results: PathBuf,
}

impl Judged {
    /// Clears the results of an earlier run of the same judgement.
    pub fn new(side: &str, leg: &str) -> Self {
        let results = target_dir()
            .join("conformance")
            .join(format!("{side}-{leg}"));
        let _ = std::fs::remove_dir_all(&results);
        let name = if side == "server" {
            format!("baseline-{leg}.yml")
        } else {
            format!("baseline-{side}-{leg}.yml")
        };
        let baseline = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/conformance")
            .join(name);
        Self { baseline, results }
    }

    /// Runs the suite with `args` (its command and selection) against the
    /// baseline: `None` when it agrees, else what it said.
    pub fn run(&self, args: &[&str]) -> Option<String> {
        let suite = suite();
        let output = Command::new(suite.join("node_modules/.bin/node"))
            .arg(suite.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(args)
            .arg("--expected-failures")
            .arg(&self.baseline)
            .arg("-o")
            .arg(&self.results)
            .output()
            .expect("the pinned Node runs");
        (!output.status.success()).then(|| {
            format!(
                "{}:\n{}\n{}",
                args.join(" "),
                summary(&String::from_utf8_lossy(&output.stdout)),
                String::from_utf8_lossy(&output.stderr)
            )
        })
    }

    /// Fails naming every failed check when any run disagreed with the
    /// baseline.
    ///
    /// # Panics
    ///
    /// When `disagreed` is not empty.
    pub fn conclude(&self, judged: &str, disagreed: &[String]) {
        if disagreed.is_empty() {
            return;
        }
        panic!(
            "\n\n*** the MCP conformance suite judged {judged} and did not agree with {} ***\n\n\
             failed checks (listed or not):\n{}\n\nthe suite's summaries:\n{}\n\
             (its results are in {})\n",
            self.baseline.display(),
            failed_checks(&self.results).join("\n"),
            disagreed.join("\n\n"),
            self.results.display(),
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

/// `scenario: check: message` for each failed check the suite recorded
/// (a failure, or a warning: the suite counts both against a run).
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
            if check["status"] == "FAILURE" || check["status"] == "WARNING" {
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
