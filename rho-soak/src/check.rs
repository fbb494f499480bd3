//! The verdicts: each call's end against what was injected, and the
//! registry's counts against the calls that reached it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rho_registry::ToolHealth;
use rho_tool_core::Outcome;
use rho_turn::SessionEntry;

use crate::plan::{Accepted, Act, CallPlan, GatePlan, Refusal, TurnPlan};

/// How many wrong calls are described in full.
const DESCRIBED: usize = 12;

/// What one source's accounting should say about one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) calls: u64,
    pub(crate) succeeded: u64,
    pub(crate) failed: u64,
    pub(crate) denied: u64,
    pub(crate) crashed: u64,
    pub(crate) timed_out: u64,
    pub(crate) aborted: u64,
    pub(crate) executor_gone: u64,
    pub(crate) refused: u64,
}

impl Tally {
    fn add(&mut self, outcome: Outcome) {
        self.calls += 1;
        match outcome {
            Outcome::Succeeded => self.succeeded += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Denied => self.denied += 1,
            Outcome::Crashed => self.crashed += 1,
            Outcome::TimedOut => self.timed_out += 1,
            Outcome::Aborted => self.aborted += 1,
            Outcome::ExecutorGone => self.executor_gone += 1,
            Outcome::Refused => self.refused += 1,
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.calls += other.calls;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.denied += other.denied;
        self.crashed += other.crashed;
        self.timed_out += other.timed_out;
        self.aborted += other.aborted;
        self.executor_gone += other.executor_gone;
        self.refused += other.refused;
    }

    /// The same counts, read from a source's accounting.
    pub(crate) fn of(health: &ToolHealth) -> Self {
        Self {
            calls: health.calls,
            succeeded: health.succeeded,
            failed: health.failed,
            denied: health.denied,
            crashed: health.crashed,
            timed_out: health.timed_out,
            aborted: health.aborted,
            executor_gone: health.executor_gone,
            refused: health.refused,
        }
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "calls {}, ok {}, failed {}, denied {}, crashed {}, timed out {}, aborted {}, gone {}, \
             refused {}",
            self.calls,
            self.succeeded,
            self.failed,
            self.denied,
            self.crashed,
            self.timed_out,
            self.aborted,
            self.executor_gone,
            self.refused
        )
    }
}

/// What one driver found, merged into [`Verdicts`] when it finishes.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Per tool name, the outcomes of the calls its source counts.
    pub(crate) tallies: BTreeMap<String, Tally>,
    /// Every call's outcome, refused ones included.
    pub(crate) outcomes: BTreeMap<&'static str, u64>,
    /// Calls whose outcome was one of two legitimate ones and was aborted.
    pub(crate) raced_aborted: u64,
    /// Calls whose gate outlasted the tool's timeout and whose tool, which
    /// answers at once, was still not polled again within the timeout after
    /// its running notice (a busy or spinning worker held its task): they
    /// time out, but only after the gate, which is what they check.
    pub(crate) late_after_gate: u64,
}

/// Everything the drivers found; shared.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    /// Calls planned.
    pub(crate) calls: AtomicU64,
    /// Calls that got exactly one session entry.
    pub(crate) ends: AtomicU64,
    /// Calls (and counts) that disagree with what was injected.
    pub(crate) wrong: AtomicU64,
    described: Mutex<Vec<String>>,
    findings: Mutex<Findings>,
}

impl Verdicts {
    /// Counts one wrong thing, describing the first few.
    pub(crate) fn wrong(&self, description: impl FnOnce() -> String) {
        let before = self.wrong.fetch_add(1, Ordering::Relaxed);
        if before < DESCRIBED as u64 {
            self.described
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(description());
        }
    }

    /// Counts `count` wrong things described elsewhere.
    pub(crate) fn count_wrong(&self, count: u64) {
        self.wrong.fetch_add(count, Ordering::Relaxed);
    }

    /// The descriptions of the first wrong things.
    pub(crate) fn described(&self) -> Vec<String> {
        self.described
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Merges a driver's findings.
    pub(crate) fn merge(&self, findings: &Findings) {
        let mut all = self.findings.lock().unwrap_or_else(PoisonError::into_inner);
        for (tool, tally) in &findings.tallies {
            all.tallies.entry(tool.clone()).or_default().merge(tally);
        }
        for (outcome, count) in &findings.outcomes {
            *all.outcomes.entry(outcome).or_default() += count;
        }
        all.raced_aborted += findings.raced_aborted;
        all.late_after_gate += findings.late_after_gate;
    }

    /// The merged findings.
    pub(crate) fn with_findings<R>(&self, read: impl FnOnce(&Findings) -> R) -> R {
        read(&self.findings.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Checks one turn's entries against its plan; `lane` names the
    /// driver for the descriptions. Returns the outcomes, in call order,
    /// for the event check (`None` where an entry is missing).
    pub(crate) fn check_turn(
        &self,
        lane: &str,
        plan: &TurnPlan,
        entries: &[SessionEntry],
        findings: &mut Findings,
    ) -> Vec<Option<Outcome>> {
        self.calls
            .fetch_add(plan.calls.len() as u64, Ordering::Relaxed);
        if entries.len() != plan.calls.len() {
            self.wrong(|| {
                format!(
                    "{lane} turn {}: {} calls but {} session entries",
                    plan.number,
                    plan.calls.len(),
                    entries.len()
                )
            });
        }
        let mut outcomes = Vec::with_capacity(plan.calls.len());
        for (index, call) in plan.calls.iter().enumerate() {
            let Some(entry) = entries.get(index).filter(|entry| entry.call_id == call.id) else {
                self.wrong(|| format!("{lane} {}: no session entry", plan.describe(index)));
                outcomes.push(None);
                continue;
            };
            self.ends.fetch_add(1, Ordering::Relaxed);
            outcomes.push(Some(entry.outcome));
            *findings.outcomes.entry(entry.outcome.as_str()).or_default() += 1;
            let accepted = call.accepted(plan.turn_aborted);
            if let Accepted::Raced(_) = accepted
                && entry.outcome == Outcome::Aborted
            {
                findings.raced_aborted += 1;
            }
            let text = entry.text();
            if timed_out_after_gate(call, entry) {
                findings.late_after_gate += 1;
            } else if !accepted.allows(entry.outcome) {
                self.wrong(|| {
                    format!(
                        "{lane} {}: expected {accepted}, got {}: {}",
                        plan.describe(index),
                        entry.outcome,
                        short(&text)
                    )
                });
            } else if let Some(missing) = text_misses(call, entry.outcome, &text) {
                self.wrong(|| {
                    format!(
                        "{lane} {}: {} as expected, but its text does not say {missing:?}: {}",
                        plan.describe(index),
                        entry.outcome,
                        short(&text)
                    )
                });
            }
            if call.counted {
                findings
                    .tallies
                    .entry(call.tool.clone())
                    .or_default()
                    .add(entry.outcome);
            }
        }
        outcomes
    }
}

/// Whether `call`, whose gate outlasts its tool's timeout, timed out only
/// after its whole gate: then the clock started at the running notice, as
/// the contract says, and the timeout is the scheduler's delay in polling
/// the task again (a worker held by a spinning tool), not rho's. A clock
/// that counted the gate would have ended the call while its gate still
/// waited, with less than the gate's wait as `waited`.
fn timed_out_after_gate(call: &CallPlan, entry: &SessionEntry) -> bool {
    entry.outcome == Outcome::TimedOut
        && call
            .gate_outlasts_timeout()
            .is_some_and(|gate| entry.waited >= gate)
}

/// What the text of a call that ended `outcome` must say, if it does not.
fn text_misses(call: &CallPlan, outcome: Outcome, text: &str) -> Option<&'static str> {
    let needed = match outcome {
        Outcome::TimedOut => "timed out after",
        Outcome::Aborted => "was aborted by the host",
        Outcome::Denied => "the gate denied it",
        Outcome::Refused => match call.refusal {
            Some(Refusal::Unknown | Refusal::Removed) => "no such tool",
            Some(Refusal::InvalidArguments | Refusal::NotAnObject) => "do not fit its schema",
            Some(Refusal::Duplicate) => "is the id of an earlier call",
            None => return None,
        },
        Outcome::Crashed => match (call.gate, call.act) {
            (GatePlan::Panic { .. } | GatePlan::WaitPanic { .. }, _) => "panicked",
            (_, Act::ReportCrash) => "died of a signal",
            _ => "panicked",
        },
        Outcome::Failed => match call.act {
            Act::BadImage { .. } => "unusable answer",
            _ => "failed, on purpose",
        },
        _ => return None,
    };
    (!text.contains(needed)).then_some(needed)
}

/// The head of a long text, for a report.
fn short(text: &str) -> String {
    const MAX: usize = 300;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rho_tool_core::{Outcome, ToolResult};
    use rho_turn::SessionEntry;
    use serde_json::json;

    use super::timed_out_after_gate;
    use crate::plan::{Act, CallPlan, GatePlan};
    use crate::tools;

    fn plan(tool: &str, gate: GatePlan) -> CallPlan {
        CallPlan {
            id: "c1".to_owned(),
            tool: tool.to_owned(),
            arguments: json!({}),
            gate,
            act: Act::Text,
            refusal: None,
            forever: false,
            abort_at: None,
            counted: true,
        }
    }

    fn entry(outcome: Outcome, waited_ms: u64) -> SessionEntry {
        SessionEntry {
            call_id: "c1".to_owned(),
            tool: tools::QUICK_50.to_owned(),
            outcome,
            result: ToolResult::error("tool `quick_50ms` timed out after 50ms and was stopped"),
            cut_bytes: 0,
            waited: Duration::from_millis(waited_ms),
            queued: Duration::ZERO,
            ran: Some(Duration::from_millis(50)),
            nested: Vec::new(),
        }
    }

    /// Only a timeout that came after the whole gate is the scheduler's: one
    /// that cut the gate short (a clock counting the gate), or one of any
    /// other call, stays wrong.
    #[test]
    fn only_a_timeout_after_the_whole_gate_is_put_down_to_the_scheduler() {
        let late_gate = plan(tools::QUICK_50, GatePlan::WaitAllow { ms: 70 });
        assert!(timed_out_after_gate(
            &late_gate,
            &entry(Outcome::TimedOut, 71)
        ));
        assert!(!timed_out_after_gate(
            &late_gate,
            &entry(Outcome::TimedOut, 50)
        ));
        assert!(!timed_out_after_gate(
            &late_gate,
            &entry(Outcome::Succeeded, 71)
        ));
        let other = plan(tools::TEXT, GatePlan::WaitAllow { ms: 70 });
        assert!(!timed_out_after_gate(&other, &entry(Outcome::TimedOut, 71)));
    }
}
