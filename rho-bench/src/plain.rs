//! Figure 5: plain data. The throughput of `rho_untrusted::plain::to_plain`
//! on a nested answer of about 10 MB (its compact JSON size) against
//! `serde_json::to_value` of the same value, both run inside a task on the
//! runtime's worker (where a call's answer is made plain), alternating.
//! Throughput is the JSON size over the time of one conversion; the output
//! is dropped outside the timed part.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use rho_tool_core::{Executor, Joined};
use rho_untrusted::Limits;
use rho_untrusted::plain::to_plain;
use serde::Serialize;

use crate::Config;
use crate::report::{Report, Target};
use crate::rt::Bench;
use crate::stats::median;

/// A search tool's answer: pages of hits, each hit a nested record.
#[derive(Debug, Serialize)]
pub(crate) struct Answer {
    query: String,
    took_ms: u64,
    pages: Vec<Page>,
    totals: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
struct Page {
    number: u32,
    hits: Vec<Hit>,
}

#[derive(Debug, Serialize)]
struct Hit {
    id: u64,
    path: String,
    score: f64,
    kind: Kind,
    tags: Vec<String>,
    flags: BTreeMap<String, bool>,
    spans: Vec<Span>,
    note: Option<String>,
}

#[derive(Debug, Serialize)]
enum Kind {
    File { lines: u32, bytes: u64 },
    Dir,
    Link(String),
}

#[derive(Debug, Serialize)]
struct Span {
    start: u32,
    end: u32,
    text: String,
    weight: f32,
}

impl Answer {
    /// An answer of about `mb` megabytes of compact JSON.
    pub(crate) fn of_size(mb: usize) -> (Self, usize) {
        // About 700 bytes of JSON per hit, 100 hits a page.
        let hits = mb * 1_000_000 / 700;
        let pages = (0..hits.div_ceil(100))
            .map(|page| Page {
                number: page as u32,
                hits: (page * 100..((page + 1) * 100).min(hits))
                    .map(hit)
                    .collect(),
            })
            .collect();
        let totals = (0..16)
            .map(|index| (format!("bucket-{index}"), index as u64 * 1_000))
            .collect();
        let answer = Answer {
            query: "fn main".to_owned(),
            took_ms: 42,
            pages,
            totals,
        };
        let size = serde_json::to_vec(&answer).expect("JSON").len();
        (answer, size)
    }
}

fn hit(index: usize) -> Hit {
    let kind = match index % 3 {
        0 => Kind::File {
            lines: index as u32 % 5_000,
            bytes: index as u64 * 37,
        },
        1 => Kind::Dir,
        _ => Kind::Link(format!("/srv/mirror/{index}")),
    };
    Hit {
        id: index as u64,
        path: format!("src/module_{}/file_{index}.rs", index % 97),
        score: 1.0 / (index as f64 + 1.5),
        kind,
        tags: (0..4)
            .map(|tag| format!("tag-{}", (index + tag) % 50))
            .collect(),
        flags: [
            ("generated", index.is_multiple_of(7)),
            ("test", index.is_multiple_of(5)),
            ("vendored", false),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect(),
        spans: (0..6)
            .map(|span| Span {
                start: (span * 40) as u32,
                end: (span * 40 + 25) as u32,
                text: format!("let value_{span} = compute({index}, {span});"),
                weight: span as f32 * 0.25,
            })
            .collect(),
        note: index
            .is_multiple_of(4)
            .then(|| "matched in a doc comment".to_owned()),
    }
}

/// Times one conversion of each kind, in the order given; returns seconds.
fn convert(answer: &Answer, limits: &Limits, plain_first: bool) -> [f64; 2] {
    let mut seconds = [0.0; 2];
    for kind in if plain_first { [0, 1] } else { [1, 0] } {
        if kind == 0 {
            let start = Instant::now();
            let plain = to_plain(answer, limits).expect("within the limits");
            seconds[0] = start.elapsed().as_secs_f64();
            drop(plain);
        } else {
            let start = Instant::now();
            let value = serde_json::to_value(answer).expect("JSON");
            seconds[1] = start.elapsed().as_secs_f64();
            drop(value);
        }
    }
    seconds
}

pub(crate) fn run<B: Bench>(
    bench: &B,
    answer: &Arc<(Answer, usize)>,
    config: &Config,
    report: &mut Report,
) {
    let name = B::NAME;
    let executor = bench.executor();
    // Limits wide enough for the answer: the figure is the conversion's
    // speed, not a refusal.
    let limits = Arc::new(
        Limits::default()
            .with_max_bytes(1 << 30)
            .with_max_elements(100_000_000),
    );
    let mut ratios = Vec::new();
    let mut rates = [Vec::new(), Vec::new()];
    let size = answer.1 as f64;
    for round in 0..config.plain_rounds + 1 {
        let (answer, limits) = (answer.clone(), limits.clone());
        let task = executor.spawn(async move { convert(&answer.0, &limits, round % 2 == 0) });
        let Joined::Done(seconds) = bench.block_on(task) else {
            panic!("the conversion task did not finish");
        };
        if round == 0 {
            continue; // warm-up
        }
        rates[0].push(size / seconds[0] / 1e6);
        rates[1].push(size / seconds[1] / 1e6);
        ratios.push(seconds[1] / seconds[0]);
    }
    report.target(
        name,
        "plain_throughput_ratio",
        median(&ratios),
        "to_plain/to_value",
        Target::AtLeast(0.7),
    );
    report.info(name, "plain_to_plain", median(&rates[0]), "MB/s");
    report.info(name, "plain_serde_json_to_value", median(&rates[1]), "MB/s");
    report.info(name, "plain_answer_size", size / 1e6, "MB of JSON");
}

/// The hidden subcommand that runs one conversion alone, for a profiler:
/// `__plain <mb> <rounds> <plain|json>`.
pub(crate) const PROFILE: &str = "__plain";

/// The conversion [`PROFILE`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Conversion {
    /// rho's `to_plain`.
    Plain,
    /// `serde_json::to_value`.
    Json,
}

/// Runs the [`PROFILE`] subcommand.
pub(crate) fn profile(mb: usize, rounds: usize, conversion: Conversion) {
    let (answer, size) = Answer::of_size(mb);
    let limits = Limits::default()
        .with_max_bytes(1 << 30)
        .with_max_elements(100_000_000);
    for _ in 0..rounds {
        let start = Instant::now();
        let kind = match conversion {
            Conversion::Plain => {
                drop(to_plain(&answer, &limits).expect("within the limits"));
                "plain"
            }
            Conversion::Json => {
                drop(serde_json::to_value(&answer).expect("JSON"));
                "json"
            }
        };
        eprintln!(
            "{kind}: {:.1} MB/s",
            size as f64 / start.elapsed().as_secs_f64() / 1e6
        );
    }
}
