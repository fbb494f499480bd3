//! A tool's health as [`Accounting`](crate::Accounting) counts it, and a
//! table of it for host screens.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use rho_tool_core::Outcome;

use crate::quarantine::Quarantine;

/// One tool's counts, last error and quarantine, at the moment it was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolHealth {
    /// The tool's name.
    pub tool: String,
    /// Calls started (including those still in flight).
    pub calls: u64,
    /// Calls that answered successfully.
    pub succeeded: u64,
    /// Calls that answered with the tool's own error.
    pub failed: u64,
    /// Calls the gate denied (never counted against the tool).
    pub denied: u64,
    /// Calls that panicked (counted against the tool).
    pub crashed: u64,
    /// Calls killed at their timeout (counted against the tool).
    pub timed_out: u64,
    /// Calls the host aborted (never counted against the tool).
    pub aborted: u64,
    /// Calls whose executor went away (never counted against the tool).
    pub executor_gone: u64,
    /// Calls refused before they ran: arguments that do not fit the tool's
    /// schema, or a call while the tool is quarantined (never counted
    /// against the tool; a sign that the model misreads it, or keeps
    /// calling a tool it was told is disabled).
    pub refused: u64,
    /// The counted failures (crashes and timeouts) that count towards a
    /// quarantine now.
    pub strikes: u32,
    /// The last failure, crash, timeout or lost executor, in words.
    pub last_error: Option<String>,
    /// The quarantine, while the tool is quarantined.
    pub quarantine: Option<Quarantine>,
}

impl ToolHealth {
    /// Calls that ended as `outcome`.
    pub fn count(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Succeeded => self.succeeded,
            Outcome::Failed => self.failed,
            Outcome::Denied => self.denied,
            Outcome::Crashed => self.crashed,
            Outcome::TimedOut => self.timed_out,
            Outcome::Aborted => self.aborted,
            Outcome::ExecutorGone => self.executor_gone,
            Outcome::Refused => self.refused,
        }
    }

    /// The count of every outcome, in [`Outcome::ALL`]'s order: a host's
    /// screen or log iterates this and never depends on which columns a
    /// table has.
    pub fn counts(&self) -> impl Iterator<Item = (Outcome, u64)> + '_ {
        Outcome::ALL
            .into_iter()
            .map(|outcome| (outcome, self.count(outcome)))
    }

    /// Calls that ended, of any class.
    pub fn ended(&self) -> u64 {
        self.counts().map(|(_, count)| count).sum()
    }

    /// Where the tool stands: enabled (with the strikes it has towards a
    /// quarantine) or quarantined.
    pub fn state(&self) -> ToolState {
        match &self.quarantine {
            Some(quarantine) => ToolState::Quarantined(quarantine.clone()),
            None => ToolState::Enabled {
                strikes: self.strikes,
            },
        }
    }

    /// The record as JSON, for a host's log or API: `tool`, `calls`,
    /// `in_flight`, `outcomes` (each [`Outcome`]'s
    /// [`as_str`](Outcome::as_str) name to its count), `state`
    /// (`"enabled"` or `"quarantined"`), `strikes`, `last_error` (or
    /// `null`) and, while quarantined, `quarantine` (`failures`,
    /// `crashes`, `timeouts`, `reason`).
    ///
    /// ```
    /// use rho::Accounting;
    ///
    /// // Every tool's health, as a JSON array.
    /// let rows: Vec<serde_json::Value> =
    ///     Accounting::default().health().iter().map(|row| row.to_json()).collect();
    /// assert!(rows.is_empty());
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let outcomes: serde_json::Map<String, serde_json::Value> = self
            .counts()
            .map(|(outcome, count)| (outcome.as_str().to_owned(), count.into()))
            .collect();
        let mut row = serde_json::json!({
            "tool": self.tool,
            "calls": self.calls,
            "in_flight": self.in_flight(),
            "outcomes": outcomes,
            "state": match self.state() {
                ToolState::Enabled { .. } => "enabled",
                ToolState::Quarantined(_) => "quarantined",
            },
            "strikes": self.strikes,
            "last_error": self.last_error,
        });
        if let Some(quarantine) = &self.quarantine {
            row["quarantine"] = serde_json::json!({
                "failures": quarantine.failures,
                "crashes": quarantine.crashes,
                "timeouts": quarantine.timeouts,
                "reason": quarantine.reason(),
            });
        }
        row
    }

    /// Calls started and not yet ended.
    pub fn in_flight(&self) -> u64 {
        self.calls.saturating_sub(self.ended())
    }

    /// Whether the tool is quarantined.
    pub fn is_quarantined(&self) -> bool {
        self.quarantine.is_some()
    }
}

/// Where a tool stands with its source's [`Accounting`](crate::Accounting).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolState {
    /// In the model's list. `strikes` counted failures (crashes and
    /// timeouts) count towards a quarantine now; 0 when none do.
    Enabled {
        /// The counted failures that count towards a quarantine now.
        strikes: u32,
    },
    /// Out of the model's list until the host re-enables it
    /// ([`Accounting::reenable`](crate::Accounting::reenable)); its calls
    /// are refused, and counted as `refused`.
    Quarantined(Quarantine),
}

/// The counters of one tool, each its own atomic: counting an end takes no
/// lock.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    calls: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
    denied: AtomicU64,
    crashed: AtomicU64,
    timed_out: AtomicU64,
    aborted: AtomicU64,
    executor_gone: AtomicU64,
    refused: AtomicU64,
}

impl Counts {
    pub(crate) fn started(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn ended(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Succeeded => &self.succeeded,
            Outcome::Failed => &self.failed,
            Outcome::Denied => &self.denied,
            Outcome::Crashed => &self.crashed,
            Outcome::TimedOut => &self.timed_out,
            Outcome::Aborted => &self.aborted,
            Outcome::ExecutorGone => &self.executor_gone,
            Outcome::Refused => &self.refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts, into a health record of `tool`.
    pub(crate) fn read(&self, tool: &str) -> ToolHealth {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ToolHealth {
            tool: tool.to_owned(),
            calls: load(&self.calls),
            succeeded: load(&self.succeeded),
            failed: load(&self.failed),
            denied: load(&self.denied),
            crashed: load(&self.crashed),
            timed_out: load(&self.timed_out),
            aborted: load(&self.aborted),
            executor_gone: load(&self.executor_gone),
            refused: load(&self.refused),
            ..ToolHealth::default()
        }
    }
}

/// Every tool's health as a text table, one row per tool, for a host's
/// screen or log.
///
/// ```
/// use rho::Accounting;
///
/// let table = Accounting::default().health_table().to_string();
/// assert!(table.starts_with("tool"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthTable {
    rows: Vec<ToolHealth>,
}

impl HealthTable {
    /// A table of `rows`.
    pub fn new(rows: Vec<ToolHealth>) -> Self {
        Self { rows }
    }

    /// The rows.
    pub fn rows(&self) -> &[ToolHealth] {
        &self.rows
    }
}

impl fmt::Display for HealthTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .rows
            .iter()
            .map(|row| row.tool.chars().count())
            .chain([4])
            .max()
            .unwrap_or(4);
        writeln!(
            f,
            "{:<width$}  {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}  state",
            "tool", "calls", "ok", "failed", "crash", "t/out", "abort", "denied", "gone", "refuse"
        )?;
        for row in &self.rows {
            let state = match &row.quarantine {
                Some(q) => format!("quarantined after {}", count(q.failures, "failure")),
                None if row.strikes > 0 => format!("enabled, {}", count(row.strikes, "strike")),
                None => "enabled".to_owned(),
            };
            writeln!(
                f,
                "{:<width$}  {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}  {state}",
                row.tool,
                row.calls,
                row.succeeded,
                row.failed,
                row.crashed,
                row.timed_out,
                row.aborted,
                row.denied,
                row.executor_gone,
                row.refused,
            )?;
            if let Some(last) = &row.last_error {
                writeln!(f, "{:<width$}  last error: {last}", "")?;
            }
        }
        Ok(())
    }
}

/// `n` things, in words: "1 strike", "2 strikes".
fn count(n: u32, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}
