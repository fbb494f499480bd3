//! Reading one of the child's output streams, up to a cap.
//!
//! What a child writes is read into memory, so it must be bounded: reading
//! stops at the cap, and what was read is kept (at most `cap` bytes, never
//! more than `cap` bytes of buffer). The caller is told, so it can kill the
//! group: a child that keeps writing into a pipe no one reads would
//! otherwise block forever.

use std::io::{self, Read};

/// The size of one read.
const CHUNK: usize = 64 * 1024;

/// What was read from one stream.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    /// The bytes read, at most the cap.
    pub(crate) bytes: Vec<u8>,
    /// The stream had more than the cap; reading stopped there.
    pub(crate) overflowed: bool,
    /// Reading failed (not at the end of the stream, which is no error).
    pub(crate) error: Option<io::Error>,
}

/// Reads `source` to its end, or until it gives more than `cap` bytes; then
/// calls `on_overflow` and stops reading (and drops `source`).
pub(crate) fn read_capped(
    mut source: impl Read,
    cap: usize,
    on_overflow: impl FnOnce(),
) -> Captured {
    let mut captured = Captured::default();
    let mut chunk = vec![0_u8; CHUNK];
    loop {
        let read = match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                captured.error = Some(error);
                break;
            }
        };
        let room = cap - captured.bytes.len();
        let kept = read.min(room);
        reserve_capped(&mut captured.bytes, kept, cap);
        captured.bytes.extend_from_slice(&chunk[..kept]);
        if read > room {
            captured.overflowed = true;
            on_overflow();
            break;
        }
    }
    captured
}

/// Makes room for `more` bytes, growing by doubling (so appending stays
/// linear) but never past `cap`: the buffer is bounded by the cap itself,
/// not by twice the cap.
fn reserve_capped(bytes: &mut Vec<u8>, more: usize, cap: usize) {
    let needed = bytes.len() + more;
    if needed <= bytes.capacity() {
        return;
    }
    let target = needed.max(bytes.capacity().saturating_mul(2)).min(cap);
    bytes.reserve_exact(target - bytes.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_within_the_cap_is_read_whole() {
        let mut overflowed = false;
        let captured = read_capped(&b"hello"[..], 5, || overflowed = true);
        assert_eq!(captured.bytes, b"hello");
        assert!(!captured.overflowed && !overflowed);
        assert!(captured.error.is_none());
    }

    #[test]
    fn a_stream_past_the_cap_stops_there() {
        let mut overflowed = false;
        let source = io::repeat(b'y').take(10 * CHUNK as u64);
        let captured = read_capped(source, CHUNK + 10, || overflowed = true);
        assert_eq!(captured.bytes.len(), CHUNK + 10);
        assert!(captured.bytes.capacity() <= CHUNK + 10);
        assert!(captured.overflowed && overflowed);
    }

    #[test]
    fn an_endless_stream_is_bounded() {
        let captured = read_capped(io::repeat(0), 1000, || {});
        assert_eq!(captured.bytes.len(), 1000);
        assert!(captured.overflowed);
    }

    #[test]
    fn a_zero_cap_overflows_on_the_first_byte() {
        let captured = read_capped(&b"x"[..], 0, || {});
        assert!(captured.bytes.is_empty());
        assert!(captured.overflowed);
        let captured = read_capped(&b""[..], 0, || {});
        assert!(!captured.overflowed);
    }
}
