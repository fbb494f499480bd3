//! What the soak injects: a seeded plan for every turn and every call in it,
//! and the outcome each call must end with.
//!
//! A plan is made only from the driver's seeded random numbers and the
//! driver's own view of its dynamic tools, never from timing, so the same
//! seed makes the same calls in the same turns.

use std::fmt;
use std::time::Duration;

use rho_conformance::support::{Code, ReasonKind};
use rho_tool_core::{Outcome, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tools::{self, DYN_SLOTS};

/// What the gate does with a call. The gate reads it from the call's
/// arguments (`"gate"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GatePlan {
    /// Allows at once.
    Allow,
    /// Waits `ms` on the executor's timer, then allows.
    WaitAllow { ms: u64 },
    /// Denies at once.
    Deny,
    /// Waits, then denies.
    WaitDeny { ms: u64 },
    /// Panics at its first poll, with payload kind `reason`.
    Panic { reason: u8 },
    /// Waits, then panics.
    WaitPanic { ms: u64, reason: u8 },
    /// Never answers (a person who is away): only a host abort ends it.
    Hold,
}

/// What the tool does. The tool reads it from the call's arguments
/// (`"act"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Act {
    /// Answers text at once, without yielding.
    Text,
    /// Sleeps on the executor's timer, then answers text.
    Slow { ms: u64 },
    /// Answers `count` small PNG images and text.
    Images { count: u8, bytes: u16 },
    /// Answers text with details of `keys` entries, plain or foreign.
    Details { keys: u16, plain: bool },
    /// Answers text with foreign details whose every impl records where it
    /// ran (none panics).
    HostileDetails,
    /// Answers an error.
    Error,
    /// Answers a crash it observed (`ToolOutput::crashed`).
    ReportCrash,
    /// Panics with payload kind `reason`, after sleeping `after_ms` (0: at
    /// its first poll).
    Panic { reason: u8, after_ms: u64 },
    /// Panics in `run` itself, before it returns its future.
    PanicInRun { reason: u8 },
    /// Answers details whose `Serialize` panics.
    SerializePanics { reason: u8 },
    /// Answers details whose `Drop` panics once converted.
    DropPanics { reason: u8 },
    /// Answers details whose `Serialize` panics with a `String` after
    /// recording.
    HostileSerializePanics,
    /// Answers an image with no bytes, or with a mime type that is not an
    /// image's.
    BadImage { empty: bool },
    /// Reports `count` partial results (some hostile), then answers text.
    Updates {
        count: u8,
        hostile: bool,
        pause_ms: u64,
    },
    /// Sleeps an hour: the tool's timeout (or a host abort) ends it.
    Hang,
    /// Sleeps an hour holding a guard whose `Drop` panics: killed at its
    /// timeout, its future's drop panics.
    HangDropPanics { reason: u8 },
    /// Never yields: spins until the driver releases it (`ticket`), with a
    /// safety bound.
    Spin { lane: u8, ticket: u64 },
}

impl Act {
    /// How the call ends when nothing else (gate, host) decides it.
    fn natural(self) -> Outcome {
        match self {
            Act::Text
            | Act::Slow { .. }
            | Act::Images { .. }
            | Act::Details { .. }
            | Act::HostileDetails
            | Act::Updates { .. } => Outcome::Succeeded,
            Act::Error | Act::BadImage { .. } => Outcome::Failed,
            Act::ReportCrash
            | Act::Panic { .. }
            | Act::PanicInRun { .. }
            | Act::SerializePanics { .. }
            | Act::DropPanics { .. }
            | Act::HostileSerializePanics => Outcome::Crashed,
            Act::Hang | Act::HangDropPanics { .. } | Act::Spin { .. } => Outcome::TimedOut,
        }
    }
}

/// The arguments every planned call carries; tools and the gate read them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct CallArgs {
    /// What the gate does.
    pub(crate) gate: GatePlan,
    /// What the tool does.
    pub(crate) act: Act,
    /// Only the `strict` tool's schema asks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) n: Option<i64>,
}

/// Why a call is refused before its gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No tool has the name.
    Unknown,
    /// The arguments violate the tool's schema.
    InvalidArguments,
    /// The arguments are not an object (null, bool, number, string, array).
    NotAnObject,
    /// An earlier call of the turn has the same id.
    Duplicate,
    /// A dynamic tool the driver removed.
    Removed,
}

/// One planned call.
#[derive(Debug, Clone)]
pub(crate) struct CallPlan {
    pub(crate) id: String,
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) gate: GatePlan,
    pub(crate) act: Act,
    pub(crate) refusal: Option<Refusal>,
    /// Ends only by a host abort (a gate that holds, a tool that hangs for
    /// a minute); the plan always aborts it.
    pub(crate) forever: bool,
    /// When the host aborts this call alone, from the turn's start.
    pub(crate) abort_at: Option<Duration>,
    /// The source of the tool counts this call (its tool was resolved; a
    /// call refused for its arguments or its id is counted as refused).
    pub(crate) counted: bool,
}

impl CallPlan {
    /// How the call ends when the host does not abort it.
    pub(crate) fn natural(&self) -> Outcome {
        if self.refusal.is_some() {
            return Outcome::Refused;
        }
        match self.gate {
            GatePlan::Deny | GatePlan::WaitDeny { .. } => Outcome::Denied,
            GatePlan::Panic { .. } | GatePlan::WaitPanic { .. } => Outcome::Crashed,
            GatePlan::Hold => Outcome::Aborted,
            GatePlan::Allow | GatePlan::WaitAllow { .. } => {
                if self.forever {
                    Outcome::Aborted
                } else {
                    self.act.natural()
                }
            }
        }
    }

    /// The outcomes this call may legitimately end with.
    ///
    /// Exactly one, except where a host abort races the call's own end: a
    /// call the host aborts (alone or with its whole turn) may end with its
    /// natural outcome (it ended before the abort reached it) or aborted.
    /// A call that can only end by the abort (`forever`) must end aborted.
    pub(crate) fn accepted(&self, turn_aborted: bool) -> Accepted {
        let natural = self.natural();
        if self.forever && self.refusal.is_none() {
            return Accepted::One(Outcome::Aborted);
        }
        if (self.abort_at.is_some() || turn_aborted) && natural != Outcome::Aborted {
            Accepted::Raced(natural)
        } else {
            Accepted::One(natural)
        }
    }

    /// For a call whose gate waits longer than its tool's timeout before
    /// allowing a tool that answers at once: the gate's wait. Such a call
    /// checks that the clock starts at the running notice, not at the
    /// call's start.
    pub(crate) fn gate_outlasts_timeout(&self) -> Option<Duration> {
        match (self.tool.as_str(), self.gate, self.act, self.refusal) {
            (tools::QUICK_50, GatePlan::WaitAllow { ms }, Act::Text, None) => {
                Some(Duration::from_millis(ms))
            }
            _ => None,
        }
    }

    /// The call as the model issues it.
    pub(crate) fn to_call(&self) -> ToolCall {
        ToolCall::new(self.id.clone(), self.tool.clone(), self.arguments.clone())
    }
}

impl fmt::Display for CallPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call `{}` of `{}`", self.id, self.tool)?;
        match self.refusal {
            Some(refusal) => write!(f, ", refused: {refusal:?}")?,
            None => write!(f, ", gate {:?}, act {:?}", self.gate, self.act)?,
        }
        if self.forever {
            write!(f, ", never ends by itself")?;
        }
        if let Some(at) = self.abort_at {
            write!(f, ", host aborts it at {at:?}")?;
        }
        Ok(())
    }
}

/// The outcomes a call may end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accepted {
    /// Exactly this one.
    One(Outcome),
    /// This one, or `Aborted` (a host abort raced the call's own end).
    Raced(Outcome),
}

impl Accepted {
    pub(crate) fn allows(self, outcome: Outcome) -> bool {
        match self {
            Accepted::One(expected) => outcome == expected,
            Accepted::Raced(natural) => outcome == natural || outcome == Outcome::Aborted,
        }
    }
}

impl fmt::Display for Accepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accepted::One(outcome) => write!(f, "{outcome}"),
            Accepted::Raced(outcome) => write!(f, "{outcome} or aborted"),
        }
    }
}

/// A host abort of the turn or of one call of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AbortTarget {
    /// The whole turn.
    Turn,
    /// The call at this index.
    Call(usize),
}

/// One planned turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnPlan {
    /// Which turn of its driver this is (from 0).
    pub(crate) number: u64,
    pub(crate) calls: Vec<CallPlan>,
    /// The host's aborts, by time from the turn's start, earliest first.
    pub(crate) aborts: Vec<(Duration, AbortTarget)>,
    /// Whether the whole turn is aborted at some point.
    pub(crate) turn_aborted: bool,
    /// A dynamic tool slot the driver removes while the turn is in flight
    /// (after every call started).
    pub(crate) remove_mid_turn: Option<usize>,
    /// The ticket of the spinning call in this turn, released when the turn
    /// ends.
    pub(crate) spin_ticket: Option<u64>,
}

impl TurnPlan {
    /// The whole description of a call, for a report of a wrong one.
    pub(crate) fn describe(&self, index: usize) -> String {
        let call = &self.calls[index];
        let mut text = format!("turn {} call {index}: {call}", self.number);
        if self.turn_aborted {
            let at = self
                .aborts
                .iter()
                .find(|(_, target)| *target == AbortTarget::Turn)
                .map(|(at, _)| *at);
            if let Some(at) = at {
                text.push_str(&format!(", host aborts the turn at {at:?}"));
            }
        }
        text
    }
}

/// The largest turn.
const MAX_TURN: usize = 64;
/// How many of each driver's first turns are of the largest size.
const WARM_UP_TURNS: u64 = 2;
/// The calls of each driver's warm-up turns.
pub(crate) const WARM_UP_CALLS: u64 = WARM_UP_TURNS * MAX_TURN as u64;

/// Who plans: the driver's identity and its seeded numbers.
pub(crate) struct Planner {
    pub(crate) rng: fastrand::Rng,
    /// `t` (tokio) or `s` (smol).
    pub(crate) lane_tag: char,
    pub(crate) lane: u8,
    pub(crate) driver: usize,
    /// Whether this driver may plan a tool that never yields (one driver
    /// per lane, one such call per turn at most: never all workers busy).
    pub(crate) may_spin: bool,
    /// Which of the driver's dynamic tools are registered.
    pub(crate) dyn_present: [bool; DYN_SLOTS],
    next_turn: u64,
    reasons: Reasons,
}

/// The payload kinds, as indexes into [`ReasonKind::all`]: those whose
/// `Drop` panics with a second payload, and the others.
#[derive(Debug, Clone)]
struct Reasons {
    second_payload: Vec<u8>,
    others: Vec<u8>,
}

impl Reasons {
    fn new() -> Self {
        let (mut second_payload, mut others) = (Vec::new(), Vec::new());
        for (index, kind) in ReasonKind::all().into_iter().enumerate() {
            let index = u8::try_from(index).expect("a few payload kinds");
            match kind {
                ReasonKind::Bomb | ReasonKind::Custom(Some(Code::Drop)) => {
                    second_payload.push(index);
                }
                _ => others.push(index),
            }
        }
        Self {
            second_payload,
            others,
        }
    }
}

impl Planner {
    pub(crate) fn new(rng: fastrand::Rng, lane_tag: char, lane: u8, driver: usize) -> Self {
        Self {
            rng,
            lane_tag,
            lane,
            driver,
            may_spin: driver == 0,
            dyn_present: [false; DYN_SLOTS],
            next_turn: 0,
            reasons: Reasons::new(),
        }
    }

    /// The name of this driver's dynamic tool in `slot`.
    pub(crate) fn dyn_name(&self, slot: usize) -> String {
        tools::dyn_name(self.lane_tag, self.driver, slot)
    }

    fn size(&mut self, left: u64, number: u64) -> usize {
        // The warm-up: each driver's first turns are as large as turns get,
        // so that the process reaches its working size before resident
        // memory is measured the first time.
        let size = match self.rng.u32(0..100) {
            _ if number < WARM_UP_TURNS => MAX_TURN,
            0..70 => self.rng.usize(1..=8),
            70..95 => self.rng.usize(9..=24),
            _ => self.rng.usize(25..=MAX_TURN),
        };
        size.min(usize::try_from(left).unwrap_or(usize::MAX)).max(1)
    }

    /// A payload kind: an index into `ReasonKind::all()`.
    ///
    /// Every kind comes, but the two whose `Drop` panics with a second
    /// payload (a custom payload panicking in `Drop`, and a bomb) come
    /// one time in a hundred each: rho forgets (leaks) each second payload
    /// by design (measured: about 90 bytes for the first kind, 190 for a
    /// bomb, whose second payload keeps its recorder), and at the rate of
    /// the other kinds that alone would grow resident memory by about
    /// 7 MiB per million calls, hiding any other growth.
    fn reason(&mut self) -> u8 {
        let reasons = &self.reasons;
        let roll = self.rng.usize(0..100);
        match reasons.second_payload.get(roll) {
            Some(kind) => *kind,
            None => reasons.others[self.rng.usize(0..reasons.others.len())],
        }
    }

    fn gate(&mut self) -> GatePlan {
        let ms = self.rng.u64(1..=10);
        match self.rng.u32(0..1000) {
            0..720 => GatePlan::Allow,
            720..820 => GatePlan::WaitAllow { ms },
            820..870 => GatePlan::Deny,
            870..900 => GatePlan::WaitDeny { ms },
            900..940 => GatePlan::Panic {
                reason: self.reason(),
            },
            940..960 => GatePlan::WaitPanic {
                ms,
                reason: self.reason(),
            },
            _ => GatePlan::Hold,
        }
    }

    /// A tool and what it does, for a call that is not refused.
    fn act(&mut self) -> (String, Act, bool) {
        let reason = self.reason();
        let (tool, act, forever) = match self.rng.u32(0..1000) {
            0..200 => (tools::TEXT, Act::Text, false),
            200..280 => (
                tools::SLOW,
                Act::Slow {
                    ms: self.rng.u64(1..=8),
                },
                false,
            ),
            280..340 => (
                tools::IMAGE,
                Act::Images {
                    count: self.rng.u8(1..=3),
                    bytes: self.rng.u16(1..=256),
                },
                false,
            ),
            340..400 => (
                tools::DETAILS,
                Act::Details {
                    keys: self.rng.u16(0..=48),
                    plain: self.rng.bool(),
                },
                false,
            ),
            400..430 => (tools::DETAILS, Act::HostileDetails, false),
            430..490 => (tools::ERROR, Act::Error, false),
            490..510 => (tools::REPORT_CRASH, Act::ReportCrash, false),
            510..590 => (
                tools::PANIC,
                Act::Panic {
                    reason,
                    after_ms: 0,
                },
                false,
            ),
            590..620 => (
                tools::PANIC,
                Act::Panic {
                    reason,
                    after_ms: self.rng.u64(1..=5),
                },
                false,
            ),
            620..640 => (tools::PANIC_IN_RUN, Act::PanicInRun { reason }, false),
            640..670 => (
                tools::HOSTILE_ANSWER,
                Act::SerializePanics { reason },
                false,
            ),
            670..690 => (tools::HOSTILE_ANSWER, Act::DropPanics { reason }, false),
            690..710 => (tools::HOSTILE_ANSWER, Act::HostileSerializePanics, false),
            710..740 => (
                tools::BAD_IMAGE,
                Act::BadImage {
                    empty: self.rng.bool(),
                },
                false,
            ),
            740..800 => (
                tools::UPDATES,
                Act::Updates {
                    count: self.rng.u8(1..=20),
                    hostile: self.rng.bool(),
                    pause_ms: self.rng.u64(0..=2),
                },
                false,
            ),
            800..860 => {
                let tool = match self.rng.u8(0..3) {
                    0 => tools::HANG_5,
                    1 => tools::HANG_12,
                    _ => tools::HANG_20,
                };
                (tool, Act::Hang, false)
            }
            860..880 => (
                tools::HANG_DROP_PANICS,
                Act::HangDropPanics { reason },
                false,
            ),
            880..890 => (tools::HANG_LONG, Act::Hang, true),
            _ => return self.dyn_act(),
        };
        (tool.to_owned(), act, forever)
    }

    /// A call of one of the driver's dynamic tools (present or removed).
    fn dyn_act(&mut self) -> (String, Act, bool) {
        let slot = self.rng.usize(0..DYN_SLOTS);
        let act = match self.rng.u8(0..4) {
            0 => Act::Text,
            1 => Act::Slow {
                ms: self.rng.u64(1..=4),
            },
            2 => Act::Error,
            _ => Act::Panic {
                reason: self.reason(),
                after_ms: 0,
            },
        };
        (self.dyn_name(slot), act, false)
    }

    /// Plans the next turn of at most `left` calls.
    pub(crate) fn turn(&mut self, left: u64) -> TurnPlan {
        let number = self.next_turn;
        self.next_turn += 1;
        let size = self.size(left, number);
        let mut calls: Vec<CallPlan> = Vec::with_capacity(size);
        let mut aborts = Vec::new();
        let spin_at = (self.may_spin && self.rng.u32(0..25) == 0).then(|| self.rng.usize(0..size));
        let mut spin_ticket = None;
        for index in 0..size {
            let id = format!("{}{}-{}-{}", self.lane_tag, self.driver, number, index);
            let call = if spin_at == Some(index) {
                let ticket = number + 1;
                spin_ticket = Some(ticket);
                self.planned(
                    id,
                    tools::SPIN_10.to_owned(),
                    GatePlan::Allow,
                    Act::Spin {
                        lane: self.lane,
                        ticket,
                    },
                    false,
                )
            } else {
                self.call(id, index, &calls)
            };
            calls.push(call);
        }
        // Race aborts of single calls.
        for (index, call) in calls.iter_mut().enumerate() {
            if self.rng.u32(0..100) < 3 {
                let at = Duration::from_millis(self.rng.u64(0..=15));
                call.abort_at = Some(at);
                aborts.push((at, AbortTarget::Call(index)));
            }
        }
        let turn_aborted = self.rng.u32(0..100) < 3;
        if turn_aborted {
            aborts.push((
                Duration::from_millis(self.rng.u64(1..=25)),
                AbortTarget::Turn,
            ));
        } else {
            // Whatever never ends by itself is aborted alone.
            for (index, call) in calls.iter_mut().enumerate() {
                if call.forever && call.abort_at.is_none() {
                    let at = Duration::from_millis(self.rng.u64(1..=25));
                    call.abort_at = Some(at);
                    aborts.push((at, AbortTarget::Call(index)));
                }
            }
        }
        aborts.sort_by_key(|(at, _)| *at);
        // Now and then a dynamic tool this turn calls is removed while the
        // calls are in flight.
        let called: Vec<usize> = calls
            .iter()
            .filter(|call| call.refusal.is_none())
            .filter_map(|call| tools::dyn_slot(&call.tool))
            .collect();
        let remove_mid_turn = if !called.is_empty() && self.rng.u32(0..100) < 30 {
            Some(called[self.rng.usize(0..called.len())])
        } else {
            None
        };
        TurnPlan {
            number,
            calls,
            aborts,
            turn_aborted,
            remove_mid_turn,
            spin_ticket,
        }
    }

    /// One call at `index` (not the spinning one).
    fn call(&mut self, id: String, index: usize, earlier: &[CallPlan]) -> CallPlan {
        let refusal_roll = self.rng.u32(0..1000);
        match refusal_roll {
            0..10 => {
                let name = format!("no_such_tool_{}", self.rng.u8(0..4));
                self.refused(id, name, plain_arguments(), Refusal::Unknown)
            }
            10..20 => {
                let arguments = json!({
                    "n": "not a number",
                    "gate": GatePlan::Allow,
                    "act": Act::Text,
                });
                self.refused(
                    id,
                    tools::STRICT.to_owned(),
                    arguments,
                    Refusal::InvalidArguments,
                )
            }
            20..25 => {
                let arguments = match self.rng.u8(0..5) {
                    0 => Value::Null,
                    1 => Value::Bool(self.rng.bool()),
                    2 => json!(self.rng.i64(..)),
                    3 => json!("an argument string"),
                    _ => json!([1, "two", null]),
                };
                self.refused(id, tools::TEXT.to_owned(), arguments, Refusal::NotAnObject)
            }
            25..30 if index > 0 => {
                let originals: Vec<&CallPlan> = earlier
                    .iter()
                    .filter(|call| call.refusal != Some(Refusal::Duplicate))
                    .collect();
                // The model's mistake: this call repeats an earlier id.
                let original = originals[self.rng.usize(0..originals.len())].id.clone();
                self.refused(
                    original,
                    tools::TEXT.to_owned(),
                    plain_arguments(),
                    Refusal::Duplicate,
                )
            }
            30..40 => {
                // The strict tool with valid arguments.
                let gate = self.gate();
                let mut plan = self.planned(id, tools::STRICT.to_owned(), gate, Act::Text, false);
                plan.arguments["n"] = json!(self.rng.i64(..));
                plan
            }
            40..50 => {
                // A gate that waits longer than the tool's timeout, then a
                // tool that answers at once: the clock starts after the gate.
                let gate = GatePlan::WaitAllow {
                    ms: self.rng.u64(60..=75),
                };
                self.planned(id, tools::QUICK_50.to_owned(), gate, Act::Text, false)
            }
            _ => {
                let (tool, act, hangs) = self.act();
                let gate = self.gate();
                let mut plan = self.planned(id, tool, gate, act, hangs);
                if let Some(slot) = tools::dyn_slot(&plan.tool)
                    && !self.dyn_present[slot]
                {
                    plan.refusal = Some(Refusal::Removed);
                    plan.counted = false;
                    plan.forever = false;
                }
                plan
            }
        }
    }

    /// A call that is not refused; `hangs`: its tool only ends by a host
    /// abort.
    fn planned(
        &mut self,
        id: String,
        tool: String,
        gate: GatePlan,
        act: Act,
        hangs: bool,
    ) -> CallPlan {
        // Only a gate that allows lets a hanging tool run; a gate that
        // holds never lets anything end by itself.
        let forever = match gate {
            GatePlan::Hold => true,
            GatePlan::Allow | GatePlan::WaitAllow { .. } => hangs,
            _ => false,
        };
        let arguments = serde_json::to_value(CallArgs { gate, act, n: None })
            .expect("the soak's own arguments serialise");
        CallPlan {
            id,
            tool,
            arguments,
            gate,
            act,
            refusal: None,
            forever,
            abort_at: None,
            counted: true,
        }
    }

    fn refused(
        &mut self,
        id: String,
        tool: String,
        arguments: Value,
        refusal: Refusal,
    ) -> CallPlan {
        // A refused call of a registered tool reaches its source as a
        // refusal; a call of a tool that is not there reaches none.
        let counted = match refusal {
            Refusal::InvalidArguments | Refusal::NotAnObject | Refusal::Duplicate => true,
            Refusal::Unknown | Refusal::Removed => false,
        };
        CallPlan {
            id,
            tool,
            arguments,
            gate: GatePlan::Allow,
            act: Act::Text,
            refusal: Some(refusal),
            forever: false,
            abort_at: None,
            counted,
        }
    }
}

fn plain_arguments() -> Value {
    json!({ "gate": GatePlan::Allow, "act": Act::Text })
}
