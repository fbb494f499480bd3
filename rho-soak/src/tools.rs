//! The soak's tools: one implementation, many names. Each call's arguments
//! say what the tool does ([`Act`]); the name only decides the timeout, the
//! schema and the source (trusted or the agent's), and so which ledger of
//! the registry's accounting counts the call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rho_conformance::support::{
    BoxFuture, Code, DropRaises, Hostile, RaiseOnDrop, SerializeRaises,
};
use rho_registry::SourceHandle;
use rho_tool_core::untrusted::Plain;
use rho_tool_core::{Image, Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

use crate::plan::{Act, CallArgs};
use crate::witness::{self, note_code};

/// Answers text at once (the tool most calls go to).
pub(crate) const TEXT: &str = "text";
/// Sleeps, then answers.
pub(crate) const SLOW: &str = "slow";
/// Answers images.
pub(crate) const IMAGE: &str = "image";
/// Answers an error.
pub(crate) const ERROR: &str = "error";
/// Answers a crash it observed.
pub(crate) const REPORT_CRASH: &str = "report_crash";
/// Reports partial results.
pub(crate) const UPDATES: &str = "updates";
/// Hangs; timeouts of 5, 12 and 20 ms.
pub(crate) const HANG_5: &str = "hang_5ms";
pub(crate) const HANG_12: &str = "hang_12ms";
pub(crate) const HANG_20: &str = "hang_20ms";
/// Never yields; timeout 10 ms.
pub(crate) const SPIN_10: &str = "spin_10ms";
/// Hangs with a timeout of a minute: only a host abort ends it in time.
pub(crate) const HANG_LONG: &str = "hang_1min";
/// Its schema asks for an integer `n`.
pub(crate) const STRICT: &str = "strict";
/// Answers at once, with a 50 ms timeout (its gate waits longer).
pub(crate) const QUICK_50: &str = "quick_50ms";
/// Answers details (the agent's).
pub(crate) const DETAILS: &str = "details";
/// Panics (the agent's).
pub(crate) const PANIC: &str = "panic";
/// Panics in `run`, before its future exists (the agent's).
pub(crate) const PANIC_IN_RUN: &str = "panic_in_run";
/// Answers values whose code panics (the agent's).
pub(crate) const HOSTILE_ANSWER: &str = "hostile_answer";
/// Answers invalid images (the agent's).
pub(crate) const BAD_IMAGE: &str = "bad_image";
/// Hangs holding a guard whose `Drop` panics; timeout 8 ms (the agent's).
pub(crate) const HANG_DROP_PANICS: &str = "hang_drop_panics_8ms";

/// How many dynamic tools each driver has (added and removed under load).
pub(crate) const DYN_SLOTS: usize = 4;

/// The timeout of tools that should never reach it.
const LONG: Duration = Duration::from_secs(30);
/// How long a hanging tool would sleep if nobody killed it.
const HOUR: Duration = Duration::from_secs(3600);
/// The safety bound of a tool that never yields, should its driver never
/// release it (the soak then reports it).
const SPIN_BOUND: Duration = Duration::from_secs(10);

/// The tickets up to which each lane's spinning tools are released.
static SPIN_RELEASED: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
/// Spinning tools that stopped at their safety bound, not released.
static SPIN_BOUND_HIT: AtomicU64 = AtomicU64::new(0);
/// Spinning tools that ran.
static SPINS: AtomicU64 = AtomicU64::new(0);

/// Releases lane `lane`'s spinning tools up to `ticket`.
pub(crate) fn release_spinners(lane: u8, ticket: u64) {
    SPIN_RELEASED[usize::from(lane) % 2].fetch_max(ticket, Ordering::SeqCst);
}

/// Releases every spinning tool (at the end of the run).
pub(crate) fn release_all_spinners() {
    for released in &SPIN_RELEASED {
        released.store(u64::MAX, Ordering::SeqCst);
    }
}

/// Spinning tools that ran, and those that stopped at their bound.
pub(crate) fn spin_counts() -> (u64, u64) {
    (
        SPINS.load(Ordering::Relaxed),
        SPIN_BOUND_HIT.load(Ordering::Relaxed),
    )
}

/// The name of a driver's dynamic tool.
pub(crate) fn dyn_name(lane_tag: char, driver: usize, slot: usize) -> String {
    format!("dyn_{lane_tag}{driver}_{slot}")
}

/// The slot of a dynamic tool's name.
pub(crate) fn dyn_slot(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("dyn_")?;
    let (_, slot) = rest.rsplit_once('_')?;
    slot.parse().ok()
}

/// One of the soak's tools.
pub(crate) struct SoakTool {
    name: String,
    timeout: Duration,
    parameters: Value,
}

impl SoakTool {
    pub(crate) fn new(name: &str, timeout: Duration) -> Self {
        Self {
            name: name.to_owned(),
            timeout,
            parameters: json!({ "type": "object" }),
        }
    }

    fn with_parameters(mut self, parameters: Value) -> Self {
        self.parameters = parameters;
        self
    }

    pub(crate) fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

/// A dynamic tool of a driver.
pub(crate) fn dynamic(name: &str) -> Arc<dyn Tool> {
    SoakTool::new(name, LONG).into_arc()
}

/// Registers the fixed tools: the host's own on `builtin`, the agent's on
/// `agent`.
pub(crate) fn register(builtin: &SourceHandle, agent: &SourceHandle) {
    let ms = Duration::from_millis;
    let strict = json!({
        "type": "object",
        "properties": { "n": { "type": "integer" } },
        "required": ["n"],
    });
    let host: Vec<Arc<dyn Tool>> = vec![
        SoakTool::new(TEXT, LONG).into_arc(),
        SoakTool::new(SLOW, LONG).into_arc(),
        SoakTool::new(IMAGE, LONG).into_arc(),
        SoakTool::new(ERROR, LONG).into_arc(),
        SoakTool::new(REPORT_CRASH, LONG).into_arc(),
        SoakTool::new(UPDATES, LONG).into_arc(),
        SoakTool::new(HANG_5, ms(5)).into_arc(),
        SoakTool::new(HANG_12, ms(12)).into_arc(),
        SoakTool::new(HANG_20, ms(20)).into_arc(),
        SoakTool::new(SPIN_10, ms(10)).into_arc(),
        SoakTool::new(HANG_LONG, Duration::from_secs(60)).into_arc(),
        SoakTool::new(STRICT, LONG)
            .with_parameters(strict)
            .into_arc(),
        SoakTool::new(QUICK_50, ms(50)).into_arc(),
    ];
    builtin
        .add_all(host)
        .expect("the host's tools have unique names");
    let agents: Vec<Arc<dyn Tool>> = vec![
        SoakTool::new(DETAILS, LONG).into_arc(),
        SoakTool::new(PANIC, LONG).into_arc(),
        SoakTool::new(PANIC_IN_RUN, LONG).into_arc(),
        SoakTool::new(HOSTILE_ANSWER, LONG).into_arc(),
        SoakTool::new(BAD_IMAGE, LONG).into_arc(),
        SoakTool::new(HANG_DROP_PANICS, ms(8)).into_arc(),
    ];
    agent
        .add_all(agents)
        .expect("the agent's tools have unique names");
}

#[async_trait]
impl Tool for SoakTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a tool of the soak: does what its arguments say"
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Written by hand, not `async`: a call may ask it to panic before it
    /// returns its future.
    fn run<'life0, 'async_trait>(
        &'life0 self,
        arguments: Value,
        context: ToolContext,
    ) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        note_code();
        let args: CallArgs = match serde_json::from_value(arguments) {
            Ok(args) => args,
            Err(error) => {
                let text = format!("the soak's tool got arguments it cannot read: {error}");
                return Box::pin(std::future::ready(ToolOutput::error(text)));
            }
        };
        if let Act::PanicInRun { reason } = args.act {
            witness::witness(reason).reason.raise();
        }
        perform(args.act, context)
    }
}

/// The tool's future for `act`.
fn perform(act: Act, cx: ToolContext) -> BoxFuture<ToolOutput> {
    Box::pin(async move {
        note_code();
        match act {
            Act::Text | Act::PanicInRun { .. } => ToolOutput::text("ok"),
            Act::Slow { ms } => {
                cx.sleep(Duration::from_millis(ms)).await;
                ToolOutput::text(format!("slept {ms} ms"))
            }
            Act::Images { count, bytes } => {
                let images = (0..count)
                    .map(|i| Image::new("image/png", vec![i; usize::from(bytes)]))
                    .collect();
                ToolOutput::images(images, format!("{count} images"))
            }
            Act::Details { keys, plain } => {
                let details: serde_json::Map<String, Value> = (0..keys)
                    .map(|key| {
                        (
                            format!("key{key}"),
                            json!({ "n": key, "s": "x".repeat(16) }),
                        )
                    })
                    .collect();
                let details = Value::Object(details);
                let output = ToolOutput::text(format!("{keys} keys of details"));
                if plain {
                    output.with_plain_details(Plain::from(details))
                } else {
                    output.with_details(details)
                }
            }
            Act::HostileDetails => {
                let witness = witness::witness(0);
                ToolOutput::text("hostile details").with_details(Hostile::new(&witness.extra))
            }
            Act::Error => ToolOutput::error("the tool failed, on purpose"),
            Act::ReportCrash => {
                ToolOutput::crashed("the tool's child died of a signal (simulated)")
            }
            Act::Panic { reason, after_ms } => {
                let witness = witness::witness(reason);
                if after_ms > 0 {
                    cx.sleep(Duration::from_millis(after_ms)).await;
                }
                witness.reason.raise()
            }
            Act::SerializePanics { reason } => {
                let witness = witness::witness(reason);
                ToolOutput::text("unserialisable details")
                    .with_details(SerializeRaises::new(&witness.reason, &witness.extra))
            }
            Act::DropPanics { reason } => {
                let witness = witness::witness(reason);
                ToolOutput::text("undroppable details")
                    .with_details(DropRaises::new(&witness.reason, &witness.extra))
            }
            Act::HostileSerializePanics => {
                let witness = witness::witness(0);
                ToolOutput::text("details that panic")
                    .with_details(Hostile::panicking_in(&witness.extra, Some(Code::Serialize)))
            }
            Act::BadImage { empty } => {
                let image = if empty {
                    Image::new("image/png", Vec::new())
                } else {
                    Image::new("text/plain", b"not an image".to_vec())
                };
                ToolOutput::image(image, "a bad image")
            }
            Act::Updates {
                count,
                hostile,
                pause_ms,
            } => {
                let witness = hostile.then(|| witness::witness(1));
                for i in 0..count {
                    // An update that cannot be made plain data is refused
                    // (an error value); the tool goes on.
                    let _refused = match (&witness, i % 3) {
                        (Some(witness), 0) => cx.update(&Hostile::new(&witness.extra)),
                        (Some(witness), 1) => {
                            cx.update(&SerializeRaises::new(&witness.reason, &witness.extra))
                        }
                        _ => cx.update(&json!({ "step": i, "of": count })),
                    };
                    if pause_ms > 0 {
                        cx.sleep(Duration::from_millis(pause_ms)).await;
                    }
                }
                ToolOutput::text(format!("{count} updates"))
            }
            Act::Hang => {
                cx.sleep(HOUR).await;
                ToolOutput::text("woke up after an hour")
            }
            Act::HangDropPanics { reason } => {
                let witness = witness::witness(reason);
                let _guard = RaiseOnDrop::new(&witness.reason, &witness.extra);
                drop(witness);
                cx.sleep(HOUR).await;
                ToolOutput::text("woke up after an hour")
            }
            Act::Spin { lane, ticket } => spin(lane, ticket),
        }
    })
}

/// Spins without yielding until lane `lane` released `ticket`.
fn spin(lane: u8, ticket: u64) -> ToolOutput {
    SPINS.fetch_add(1, Ordering::Relaxed);
    let released = &SPIN_RELEASED[usize::from(lane) % 2];
    let start = Instant::now();
    while released.load(Ordering::Acquire) < ticket {
        if start.elapsed() > SPIN_BOUND {
            SPIN_BOUND_HIT.fetch_add(1, Ordering::Relaxed);
            return ToolOutput::text("stopped spinning at the safety bound");
        }
        std::hint::spin_loop();
    }
    ToolOutput::text("released")
}
