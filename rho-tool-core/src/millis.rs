//! Durations as fractional milliseconds, the way rho's records serialise
//! them (`waited_ms`, `ran_ms`): for `#[serde(serialize_with = ...)]` on a
//! host's own records beside rho's.
//!
//! ```
//! use std::time::Duration;
//!
//! #[derive(serde::Serialize)]
//! struct Timing {
//!     #[serde(serialize_with = "rho::call::millis::duration")]
//!     took_ms: Duration,
//! }
//!
//! let json = serde_json::to_value(Timing { took_ms: Duration::from_micros(1500) }).unwrap();
//! assert_eq!(json["took_ms"], 1.5);
//! ```

use std::time::Duration;

use serde::Serializer;

/// Writes `duration` as fractional milliseconds.
///
/// # Errors
///
/// Whatever the serializer returns.
pub fn duration<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

/// Writes an optional duration as fractional milliseconds, or `null`.
///
/// # Errors
///
/// Whatever the serializer returns.
pub fn optional<S: Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => self::duration(duration, serializer),
        None => serializer.serialize_none(),
    }
}
