//! What the points are made of, one concept per module; public so an
//! executor crate can write further tests of its own with the same pieces.
//!
//! Everything here is runtime-free: tools and gates wait with the
//! executor's own timer ([`Executor::sleep`](rho_tool_core::Executor::sleep))
//! or a [`Latch`], never with tokio's or smol's directly.

mod counting;
mod events;
mod gates;
mod hostile;
mod marker;
mod record;
mod sync;
mod time;
mod tools;
mod watch;

pub use counting::{Counting, current_task};
pub use events::{EventLog, Step};
pub use gates::TestGate;
pub use hostile::{
    Bomb, CountOnDrop, DropRaises, Hostile, RaiseOnDrop, Reason, ReasonKind, STATIC_REASON,
    SerializeRaises, SetOnDrop, owned_reason,
};
pub use marker::{InLoop, LoopMark, in_loop};
pub use record::{Code, Recorder};
pub use sync::{Latch, LatchWait, flag};
pub use time::{
    HANG, SOON, block_on_within, poll_once, wait_until, wait_until_blocking, within, yield_now,
};
pub use tools::{BoxFuture, METADATA_PANIC, MetadataPanics, RaisesInRun, TestTool};
pub use watch::{PanickingWatch, RecordingWatch};
