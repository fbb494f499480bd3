//! Keep-details: how much of a call's details the session keeps.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::Arc;

use rho_tool_core::untrusted::{Plain, call_contained};

use crate::event::ExecutionEnd;

/// A host function that picks what the session keeps of a call's details:
/// it sees the whole end (tool, outcome, result, details) and returns the
/// details to keep, or `None` for none.
pub type KeepFn = dyn Fn(&ExecutionEnd) -> Option<Plain> + Send + Sync;

/// What the session entry of a call keeps of the call's details.
///
/// Details are data for host screens (a diff, a table, a screenshot's
/// size); the model never reads them, and they can be large. Subscribers
/// always get them whole in `tool_execution_end`; this policy only decides
/// what goes into the [`SessionEntry`](crate::SessionEntry) the turn returns
/// for the host to store. Nothing is dropped silently: details over a size
/// cap are replaced by a marker saying how big they were.
///
/// ```
/// use rho::{KeepDetails, Plain};
///
/// let details = Plain::from(serde_json::json!({ "rows": [1, 2, 3] }));
/// let keep = KeepDetails::MaxBytes(8);
/// let kept = keep.keep_plain(&details).unwrap();
/// assert_eq!(kept.to_json(), serde_json::json!({
///     "details_omitted": true, "bytes": 16, "max_bytes": 8,
/// }));
/// assert_eq!(KeepDetails::All.keep_plain(&details), Some(details.clone()));
/// assert_eq!(KeepDetails::None.keep_plain(&details), None);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum KeepDetails {
    /// Keep none: the session stores the result without details.
    None,
    /// Keep all details as they are (the default).
    #[default]
    All,
    /// Keep details whose JSON form is at most this many bytes; larger ones
    /// become the marker `{"details_omitted": true, "bytes": N,
    /// "max_bytes": MAX}`.
    MaxBytes(usize),
    /// Ask a host function (see [`KeepDetails::with`]).
    With(Arc<KeepFn>),
}

impl KeepDetails {
    /// A policy that asks `keep`. If it panics, the session keeps the
    /// marker `{"details_omitted": true, "reason": ...}` instead.
    pub fn with(keep: impl Fn(&ExecutionEnd) -> Option<Plain> + Send + Sync + 'static) -> Self {
        KeepDetails::With(Arc::new(keep))
    }

    /// What the session keeps of `end`'s details.
    pub fn keep(&self, end: &ExecutionEnd) -> Option<Plain> {
        let details = end.details()?;
        match self {
            KeepDetails::With(keep) => match call_contained(|| keep(end)) {
                Ok(kept) => kept,
                Err(caught) => Some(marker([(
                    "reason",
                    Plain::Text(format!(
                        "the keep-details function panicked: {}",
                        caught
                            .message
                            .as_deref()
                            .unwrap_or("(a payload that is not text)")
                    )),
                )])),
            },
            other => other.keep_plain(details),
        }
    }

    /// What a size policy keeps of `details` alone. A [`KeepDetails::With`]
    /// policy needs the whole end: here it keeps everything.
    pub fn keep_plain(&self, details: &Plain) -> Option<Plain> {
        match self {
            KeepDetails::None => None,
            KeepDetails::All | KeepDetails::With(_) => Some(details.clone()),
            KeepDetails::MaxBytes(max) => {
                let size = json_size(details);
                if size <= *max {
                    Some(details.clone())
                } else {
                    Some(marker([
                        ("bytes", Plain::UInt(size as u64)),
                        ("max_bytes", Plain::UInt(*max as u64)),
                    ]))
                }
            }
        }
    }
}

/// The marker that stands for details the session does not keep whole.
fn marker<const N: usize>(fields: [(&str, Plain); N]) -> Plain {
    let mut map = BTreeMap::new();
    map.insert("details_omitted".to_owned(), Plain::Bool(true));
    for (key, value) in fields {
        map.insert(key.to_owned(), value);
    }
    Plain::Map(map)
}

/// The size in bytes of `value`'s compact JSON form, counted without
/// building it.
pub fn json_size(value: &Plain) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // `Plain`'s `Serialize` is rho's own and cannot fail on a counter.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

impl fmt::Debug for KeepDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepDetails::None => f.write_str("None"),
            KeepDetails::All => f.write_str("All"),
            KeepDetails::MaxBytes(max) => f.debug_tuple("MaxBytes").field(max).finish(),
            KeepDetails::With(_) => f.write_str("With(..)"),
        }
    }
}
