//! Wall-clock time as RFC 3339 text (UTC, milliseconds), for the audit
//! log.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last millisecond RFC 3339's four-digit years can write
/// (9999-12-31T23:59:59.999Z), as a time since the epoch.
const LAST: Duration = Duration::from_millis(253_402_300_799_999);

/// `time` as `2026-12-02T00:41:07.123Z`. A time before 1970 reads as the
/// epoch and one past the year 9999 as its last millisecond (the clock
/// would have to be very wrong): `humantime` panics on the first and
/// fails on the second, and a line of the log is not worth a panic in the
/// call observer.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let time = time.clamp(UNIX_EPOCH, UNIX_EPOCH + LAST);
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        let at = |seconds: u64, millis: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_709_210_096, 999), "2024-02-29T12:34:56.999Z");
        assert_eq!(at(4_102_444_799, 0), "2099-12-31T23:59:59.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(at(253_402_300_799, 999), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            at(253_402_300_800 * 2, 0),
            "9999-12-31T23:59:59.999Z",
            "past the year 9999, the last time it can write"
        );
    }
}
