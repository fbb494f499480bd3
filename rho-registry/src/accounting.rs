//! `Accounting`: the ready-made policy that counts each tool's calls and
//! quarantines a tool that keeps crashing or hanging.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Instant;

use rho_tool_core::{CallEnd, Outcome, TaskId, ToolCall, Watch};

use crate::changes::ToolListNotifier;
use crate::health::{Counts, HealthTable, ToolHealth};
use crate::policy::{Disabled, SourcePolicy};
use crate::quarantine::{Quarantine, QuarantineRule, Strikes};

/// Counts, per tool, calls and how they ended, keeps the last error, and
/// quarantines a tool whose crashes plus timeouts reach the
/// [`QuarantineRule`]'s limit.
///
/// Give it to a source ([`Source::with_policy`](crate::Source::with_policy))
/// and keep an `Arc` for the host: [`health`](Accounting::health) reads
/// every tool's record, [`reenable`](Accounting::reenable) puts a
/// quarantined tool back. One `Accounting` may serve several sources (tool
/// names are unique in a registry).
///
/// # Cost in the loop
///
/// Its hooks run in the loop (see [`SourcePolicy`]), so they are kept
/// light: a call's start and a success, denial or abort are one atomic
/// increment after a shared read lock of the tool map; a failure, crash or
/// timeout also takes the tool's own short lock (last error, strikes); the
/// map's write lock is taken once per tool, when it is first seen.
/// [`disabled`](SourcePolicy::disabled) is a read lock and an atomic load
/// for a tool that is not quarantined.
///
/// # What it counts
///
/// Crashes and timeouts count towards a quarantine ("strikes"); the tool's
/// own error answers, gate denials, host aborts and a lost executor never
/// do, and neither do calls refused before they ran (counted as `refused`:
/// arguments that do not fit, and every call of the tool while it is
/// quarantined, so a model that keeps calling it shows).
/// The quarantine happens at exactly the limit-th strike; calls already
/// in flight then still end and are counted, but add no strikes. Re-enabling
/// a tool starts its strikes afresh.
pub struct Accounting {
    rule: QuarantineRule,
    ledgers: RwLock<HashMap<String, Arc<Ledger>>>,
    /// The registries its sources are registered in, told when a tool is
    /// quarantined or re-enabled (their tool lists change).
    registries: RwLock<Vec<ToolListNotifier>>,
}

/// One tool's record.
#[derive(Debug, Default)]
struct Ledger {
    counts: Counts,
    /// Mirrors `state.quarantine.is_some()`, so the check before every
    /// call takes no lock.
    quarantined: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last_error: Option<String>,
    strikes: Strikes,
    quarantine: Option<Quarantine>,
}

impl Ledger {
    fn state(&self) -> MutexGuard<'_, State> {
        // Only rho's own bookkeeping runs under this lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Accounting {
    /// Accounting that quarantines by `rule`.
    pub fn new(rule: QuarantineRule) -> Self {
        Self {
            rule,
            ledgers: RwLock::new(HashMap::new()),
            registries: RwLock::new(Vec::new()),
        }
    }

    /// The quarantine rule.
    pub fn rule(&self) -> QuarantineRule {
        self.rule
    }

    /// Every tool seen so far (started or ended at least once), sorted by
    /// name: typed rows ([`ToolHealth::counts`], [`ToolHealth::state`],
    /// [`ToolHealth::to_json`]) for a host that shows or stores them; the
    /// [`health_table`](Accounting::health_table) is the same rows as text.
    pub fn health(&self) -> Vec<ToolHealth> {
        let ledgers: Vec<(String, Arc<Ledger>)> = self
            .ledgers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(name, ledger)| (name.clone(), ledger.clone()))
            .collect();
        let mut health: Vec<ToolHealth> = ledgers
            .iter()
            .map(|(name, ledger)| self.read(name, ledger))
            .collect();
        health.sort_by(|a, b| a.tool.cmp(&b.tool));
        health
    }

    /// `tool`'s record, if it was seen.
    pub fn tool_health(&self, tool: &str) -> Option<ToolHealth> {
        let ledger = self.find(tool)?;
        Some(self.read(tool, &ledger))
    }

    /// Every tool's health as a text table.
    pub fn health_table(&self) -> HealthTable {
        HealthTable::new(self.health())
    }

    /// `tool`'s quarantine, while it is quarantined.
    pub fn quarantine(&self, tool: &str) -> Option<Quarantine> {
        let ledger = self.find(tool)?;
        if !ledger.quarantined.load(Ordering::Acquire) {
            return None;
        }
        ledger.state().quarantine.clone()
    }

    /// Puts a quarantined `tool` back: it returns to the model's tool list
    /// and its strikes start afresh. Returns whether it was quarantined.
    pub fn reenable(&self, tool: &str) -> bool {
        let Some(ledger) = self.find(tool) else {
            return false;
        };
        let mut state = ledger.state();
        if state.quarantine.take().is_none() {
            return false;
        }
        state.strikes.clear();
        ledger.quarantined.store(false, Ordering::Release);
        drop(state);
        self.tell_registries();
        true
    }

    /// Tells every registry a source of this policy is in that a tool
    /// left or rejoined its list. Rare (a quarantine, a re-enabling), so
    /// the lock and the listeners' work are fine here.
    fn tell_registries(&self) {
        let registries = self
            .registries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for registry in &registries {
            registry.notify();
        }
    }

    fn find(&self, tool: &str) -> Option<Arc<Ledger>> {
        self.ledgers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .cloned()
    }

    fn ledger(&self, tool: &str) -> Arc<Ledger> {
        if let Some(ledger) = self.find(tool) {
            return ledger;
        }
        self.ledgers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(tool.to_owned())
            .or_default()
            .clone()
    }

    fn read(&self, tool: &str, ledger: &Ledger) -> ToolHealth {
        let counts = ledger.counts.read(tool);
        let state = ledger.state();
        ToolHealth {
            strikes: state.strikes.count(Instant::now(), &self.rule),
            last_error: state.last_error.clone(),
            quarantine: state.quarantine.clone(),
            ..counts
        }
    }
}

impl Watch for Accounting {
    fn started(&self, call: &ToolCall, _task: TaskId) {
        self.ledger(&call.name).counts.started();
    }

    fn ended(&self, end: &CallEnd) {
        let ledger = self.ledger(&end.tool);
        ledger.counts.ended(end.outcome);
        let strike = match end.outcome {
            // Crashes and timeouts count towards quarantine.
            Outcome::Crashed | Outcome::TimedOut => Some(end.outcome),
            // The tool's own error and a lost executor are noted, not
            // counted.
            Outcome::Failed | Outcome::ExecutorGone => None,
            // Nothing more to note: the tool did its job, or was never
            // asked to (a denial, a refusal), or the host stopped it.
            Outcome::Succeeded | Outcome::Denied | Outcome::Aborted | Outcome::Refused => return,
        };
        let text = end.result.text();
        let mut state = ledger.state();
        let mut quarantined = false;
        if let Some(strike) = strike {
            if state.quarantine.is_none() {
                let quarantine = state
                    .strikes
                    .record(strike, Instant::now(), &self.rule, &text);
                if quarantine.is_some() {
                    state.quarantine = quarantine;
                    ledger.quarantined.store(true, Ordering::Release);
                    quarantined = true;
                }
            }
        }
        state.last_error = Some(text);
        drop(state);
        if quarantined {
            self.tell_registries();
        }
    }
}

impl SourcePolicy for Accounting {
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        self.quarantine(tool).map(|q| q.to_disabled())
    }

    fn attach(&self, notifier: ToolListNotifier) {
        self.registries
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(notifier);
    }
}

impl Default for Accounting {
    /// Accounting with the default rule: quarantine after three crashes or
    /// timeouts.
    fn default() -> Self {
        Self::new(QuarantineRule::default())
    }
}

impl fmt::Debug for Accounting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self
            .ledgers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Accounting")
            .field("rule", &self.rule)
            .field("tools", &tools)
            .finish()
    }
}
/// Taken by value where a policy is asked for
/// ([`Source::with_policy`](crate::Source::with_policy)).
impl rho_tool_core::IntoShared<dyn SourcePolicy> for Accounting {
    fn into_shared(self) -> std::sync::Arc<dyn SourcePolicy> {
        std::sync::Arc::new(self)
    }
}
