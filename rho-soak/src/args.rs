//! The command line.

use std::fmt;

/// Which runtimes run calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runtimes {
    Tokio,
    Smol,
    Both,
}

impl fmt::Display for Runtimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Runtimes::Tokio => "tokio",
            Runtimes::Smol => "smol",
            Runtimes::Both => "both",
        })
    }
}

/// What the soak was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    /// Calls in all.
    pub(crate) calls: u64,
    /// The seed everything random derives from.
    pub(crate) seed: u64,
    pub(crate) runtimes: Runtimes,
    /// Turns in flight at once per runtime.
    pub(crate) drivers: usize,
    /// The largest resident-memory growth (percent) that passes.
    pub(crate) max_rss_growth: f64,
}

const USAGE: &str = "\
usage: rho-soak [--calls N] [--seed S] [--runtime tokio|smol|both]
                [--drivers D] [--max-rss-growth PERCENT]

  --calls N            calls in all (default 1000000; `_` separators allowed)
  --seed S             the seed to replay (default: random, printed first)
  --runtime R          tokio, smol, or both (default; the calls are split)
  --drivers D          turns in flight at once per runtime (default 16)
  --max-rss-growth P   resident memory growth after warm-up that passes
                       (default 10)";

impl Args {
    /// Parses the command line; `Err` holds what to print (usage or error).
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut parsed = Args {
            calls: 1_000_000,
            seed: fastrand::u64(..),
            runtimes: Runtimes::Both,
            drivers: 16,
            max_rss_growth: 10.0,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(USAGE.to_owned());
            }
            let mut value = || {
                args.next()
                    .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))
            };
            match flag.as_str() {
                "--calls" => parsed.calls = number(&flag, &value()?)?,
                "--seed" => parsed.seed = number(&flag, &value()?)?,
                "--drivers" => {
                    let drivers = number(&flag, &value()?)?;
                    parsed.drivers = usize::try_from(drivers).unwrap_or(usize::MAX).max(1);
                }
                "--max-rss-growth" => {
                    let text = value()?;
                    parsed.max_rss_growth = text
                        .parse()
                        .map_err(|_| format!("{flag}: `{text}` is not a number"))?;
                }
                "--runtime" => {
                    parsed.runtimes = match value()?.as_str() {
                        "tokio" => Runtimes::Tokio,
                        "smol" => Runtimes::Smol,
                        "both" => Runtimes::Both,
                        other => {
                            return Err(format!(
                                "--runtime: `{other}` is not tokio, smol or both\n\n{USAGE}"
                            ));
                        }
                    }
                }
                other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
            }
        }
        Ok(parsed)
    }
}

fn number(flag: &str, text: &str) -> Result<u64, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("{flag}: `{text}` is not a whole number"))
}
