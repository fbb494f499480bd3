//! Hostile values: panic payloads and answers whose every trait impl
//! records that it ran (on a [`Recorder`]) and may panic.
//!
//! None of them may ever be dropped while the thread is already unwinding
//! from another panic when their `Drop` panics (that aborts the process):
//! the points only drop them as payloads, as answers, or in a killed
//! future, which rho contains one at a time.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::{Serialize, Serializer};

use super::record::{Code, Recorder};

/// A foreign value whose `Drop`, `Display`, `Debug`, `Clone` and
/// `Serialize` record that they ran; the one named by `panics_in` panics
/// (with a `String`) after recording.
pub struct Hostile {
    recorder: Arc<Recorder>,
    panics_in: Option<Code>,
}

impl Hostile {
    /// A value that records and never panics.
    pub fn new(recorder: &Arc<Recorder>) -> Self {
        Self::panicking_in(recorder, None)
    }

    /// A value that records, and panics in `code` (if given).
    pub fn panicking_in(recorder: &Arc<Recorder>, code: Option<Code>) -> Self {
        Self {
            recorder: recorder.clone(),
            panics_in: code,
        }
    }

    fn ran(&self, code: Code) {
        self.recorder.note(code);
        if self.panics_in == Some(code) {
            panic!("the hostile value's {code:?} panicked");
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.ran(Code::Drop);
    }
}

impl fmt::Display for Hostile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ran(Code::Display);
        f.write_str("hostile (Display)")
    }
}

impl fmt::Debug for Hostile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ran(Code::Debug);
        f.write_str("hostile (Debug)")
    }
}

impl Clone for Hostile {
    fn clone(&self) -> Self {
        self.ran(Code::Clone);
        Self {
            recorder: self.recorder.clone(),
            panics_in: self.panics_in,
        }
    }
}

impl Serialize for Hostile {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.ran(Code::Serialize);
        serializer.serialize_str("hostile")
    }
}

/// A panic payload whose `Drop` records itself on `first`, then panics
/// with a [`Hostile`] recording on `second`: that second payload must never
/// run at all (rho forgets it).
pub struct Bomb {
    first: Arc<Recorder>,
    second: Arc<Recorder>,
}

impl Bomb {
    /// A bomb recording on `first`, whose second payload records on
    /// `second`.
    pub fn new(first: &Arc<Recorder>, second: &Arc<Recorder>) -> Self {
        Self {
            first: first.clone(),
            second: second.clone(),
        }
    }
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.first.note(Code::Drop);
        std::panic::panic_any(Hostile::new(&self.second));
    }
}

impl fmt::Debug for Bomb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.first.note(Code::Debug);
        f.write_str("Bomb")
    }
}

/// The text of a [`ReasonKind::StaticStr`] panic.
pub const STATIC_REASON: &str = "a static reason";

/// The text of a [`ReasonKind::String`] panic.
pub fn owned_reason() -> String {
    format!("an owned reason, number {}", 7)
}

/// The kind of a panic payload (the "reason" a call ends with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasonKind {
    /// `panic!("literal")`: a `&'static str`.
    StaticStr,
    /// `panic!("{}", x)`: a `String`.
    String,
    /// A [`Hostile`] value, panicking in the given code when it runs.
    Custom(Option<Code>),
    /// A [`Bomb`]: its `Drop` panics with a second payload.
    Bomb,
}

impl ReasonKind {
    /// Every kind, with a custom payload for each code that can panic.
    pub fn all() -> Vec<ReasonKind> {
        let mut kinds = vec![
            ReasonKind::StaticStr,
            ReasonKind::String,
            ReasonKind::Custom(None),
        ];
        for code in [
            Code::Drop,
            Code::Display,
            Code::Debug,
            Code::Clone,
            Code::Serialize,
        ] {
            kinds.push(ReasonKind::Custom(Some(code)));
        }
        kinds.push(ReasonKind::Bomb);
        kinds
    }

    /// The message rho may read from such a payload: only `&str` and
    /// `String` have one.
    pub fn message(self) -> Option<String> {
        match self {
            ReasonKind::StaticStr => Some(STATIC_REASON.to_owned()),
            ReasonKind::String => Some(owned_reason()),
            ReasonKind::Custom(_) | ReasonKind::Bomb => None,
        }
    }

    /// Whether the payload is a value with code of its own.
    pub fn is_custom(self) -> bool {
        matches!(self, ReasonKind::Custom(_) | ReasonKind::Bomb)
    }
}

/// Raises panics of one [`ReasonKind`], each time with a fresh payload, and
/// keeps the recorders that tell what ran.
#[derive(Clone)]
pub struct Reason {
    kind: ReasonKind,
    raised: Arc<Recorder>,
    first: Arc<Recorder>,
    second: Arc<Recorder>,
}

impl Reason {
    /// A reason of `kind` with fresh recorders.
    pub fn new(kind: ReasonKind) -> Self {
        Self {
            kind,
            raised: Recorder::new(),
            first: Recorder::new(),
            second: Recorder::new(),
        }
    }

    /// The payload's kind.
    pub fn kind(&self) -> ReasonKind {
        self.kind
    }

    /// Panics with a fresh payload of the kind; records the raise (as
    /// [`Code::Run`]) on [`raised`](Reason::raised) first.
    pub fn raise(&self) -> ! {
        self.raised.note(Code::Run);
        // `panic_any` with the concrete value, as foreign code would: the
        // panic hook runs and the payload's type is the value's own.
        match self.kind {
            ReasonKind::StaticStr => std::panic::panic_any(STATIC_REASON),
            ReasonKind::String => std::panic::panic_any(owned_reason()),
            ReasonKind::Custom(code) => {
                std::panic::panic_any(Hostile::panicking_in(&self.first, code))
            }
            ReasonKind::Bomb => std::panic::panic_any(Bomb::new(&self.first, &self.second)),
        }
    }

    /// [`raise`](Reason::raise), typed as whatever the caller returns (a
    /// tool's answer, a gate's verdict).
    pub fn raise_as<T>(&self) -> T {
        self.raise()
    }

    /// Records each raise.
    pub fn raised(&self) -> &Arc<Recorder> {
        &self.raised
    }

    /// Records the code of the payload itself (custom kinds only).
    pub fn first(&self) -> &Arc<Recorder> {
        &self.first
    }

    /// Records the code of a bomb's second payload: must stay empty.
    pub fn second(&self) -> &Arc<Recorder> {
        &self.second
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reason")
            .field("kind", &self.kind)
            .field("raised", &self.raised)
            .field("first", &self.first)
            .field("second", &self.second)
            .finish()
    }
}

/// A guard whose `Drop` records itself, then raises its [`Reason`]: held
/// by a future that is killed, it is a future whose `Drop` panics.
pub struct RaiseOnDrop {
    reason: Reason,
    recorder: Arc<Recorder>,
}

impl RaiseOnDrop {
    /// A guard raising `reason`, recording its drop on `recorder`.
    pub fn new(reason: &Reason, recorder: &Arc<Recorder>) -> Self {
        Self {
            reason: reason.clone(),
            recorder: recorder.clone(),
        }
    }
}

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.recorder.note(Code::Drop);
        self.reason.raise();
    }
}

impl fmt::Debug for RaiseOnDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaiseOnDrop")
            .field("reason", &self.reason.kind)
            .finish_non_exhaustive()
    }
}

/// An answer's details whose `Serialize` records itself and raises its
/// [`Reason`]; its `Drop` records itself.
pub struct SerializeRaises {
    reason: Reason,
    recorder: Arc<Recorder>,
}

impl SerializeRaises {
    /// Details raising `reason`, recording on `recorder`.
    pub fn new(reason: &Reason, recorder: &Arc<Recorder>) -> Self {
        Self {
            reason: reason.clone(),
            recorder: recorder.clone(),
        }
    }
}

impl Serialize for SerializeRaises {
    fn serialize<S: Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
        self.recorder.note(Code::Serialize);
        self.reason.raise()
    }
}

impl Drop for SerializeRaises {
    fn drop(&mut self) {
        self.recorder.note(Code::Drop);
    }
}

impl fmt::Debug for SerializeRaises {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SerializeRaises")
            .field("reason", &self.reason.kind)
            .finish_non_exhaustive()
    }
}

/// An answer's details that serialise fine (to a text), recording it, and
/// whose `Drop` records itself and raises its [`Reason`].
pub struct DropRaises {
    reason: Reason,
    recorder: Arc<Recorder>,
}

impl DropRaises {
    /// Details raising `reason` when dropped, recording on `recorder`.
    pub fn new(reason: &Reason, recorder: &Arc<Recorder>) -> Self {
        Self {
            reason: reason.clone(),
            recorder: recorder.clone(),
        }
    }
}

impl Serialize for DropRaises {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.recorder.note(Code::Serialize);
        serializer.serialize_str("fine so far")
    }
}

impl Drop for DropRaises {
    fn drop(&mut self) {
        self.recorder.note(Code::Drop);
        self.reason.raise();
    }
}

impl fmt::Debug for DropRaises {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DropRaises")
            .field("reason", &self.reason.kind)
            .finish_non_exhaustive()
    }
}

/// Sets its flag when dropped.
#[derive(Debug)]
pub struct SetOnDrop(pub Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Counts its drops on a shared counter.
#[derive(Debug)]
pub struct CountOnDrop(pub Arc<AtomicUsize>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
