//! A peer's byte stream as lines: one JSON-RPC message a line, written
//! whole ([`encode`]) and read one line at a time, never holding more
//! than a cap of it.
//!
//! A peer that never writes a newline, or writes a line of a hundred
//! megabytes, must cost the host at most the cap: the reader stops at the
//! cap and says so, and skips the rest of that line. An imported server's
//! connection treats that as the server breaking the protocol; rho's
//! server drops the line and reads on, as rmcp's does.

use std::io;

use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// `message` as one line of JSON, its newline included.
pub(crate) fn encode<T: Serialize>(message: &T) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// What one read gave.
#[derive(Debug)]
pub(crate) enum Line {
    /// A whole line, without its `\n` (and a `\r` before it).
    Text(Vec<u8>),
    /// The line grew past the cap before it ended; what was read of it is
    /// dropped, and so is the rest of it, up to its newline.
    TooLong,
    /// The stream ended (a partial last line is dropped: a message always
    /// ends with a newline).
    End,
    /// Reading failed.
    Failed(io::Error),
}

/// Reads lines of at most `max` bytes, their newline counted, from `reader`.
///
/// Cancel-safe: the line read so far lives in the struct, and bytes are
/// taken from the reader's buffer and appended in one step with no
/// `.await` between, so dropping [`next`](BoundedLines::next) half way (as
/// a `select!` does) loses nothing.
#[derive(Debug)]
pub(crate) struct BoundedLines<R> {
    reader: R,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of a line already reported too long.
    skipping: bool,
}

impl<R: AsyncBufRead + Unpin> BoundedLines<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Self {
            reader,
            line: Vec::new(),
            max,
            skipping: false,
        }
    }

    /// The next line.
    pub(crate) async fn next(&mut self) -> Line {
        loop {
            let buffered = match self.reader.fill_buf().await {
                Ok(buffered) => buffered,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Line::Failed(error),
            };
            if buffered.is_empty() {
                return Line::End;
            }
            let newline = buffered.iter().position(|&byte| byte == b'\n');
            let part = newline.unwrap_or(buffered.len());
            // Through the newline when there is one.
            let taken = newline.map_or(part, |at| at + 1);
            if self.skipping {
                self.reader.consume(taken);
                self.skipping = newline.is_none();
                continue;
            }
            // The newline counts, as in rmcp's reading.
            if self.line.len().saturating_add(taken) > self.max {
                self.line = Vec::new();
                self.reader.consume(taken);
                self.skipping = newline.is_none();
                return Line::TooLong;
            }
            self.line.extend_from_slice(&buffered[..part]);
            self.reader.consume(taken);
            if newline.is_some() {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Line::Text(line);
            }
        }
    }
}

/// The start of `bytes` as text for an error message: at most `max` bytes,
/// invalid UTF-8 replaced, control characters escaped, and a note of what
/// was cut.
pub(crate) fn excerpt(bytes: &[u8], max: usize) -> String {
    let shown = &bytes[..bytes.len().min(max)];
    let mut text: String = String::from_utf8_lossy(shown)
        .chars()
        .flat_map(char::escape_default)
        .collect();
    if bytes.len() > max {
        text.push_str(&format!("... ({} bytes in all)", bytes.len()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = BoundedLines::new(tokio::io::BufReader::with_capacity(4, input), max);
        let mut seen = Vec::new();
        loop {
            match reader.next().await {
                Line::Text(line) => seen.push(String::from_utf8_lossy(&line).into_owned()),
                Line::TooLong => seen.push("<too long>".to_owned()),
                Line::End => return seen,
                Line::Failed(error) => panic!("{error}"),
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_across_small_reads_and_drops_a_partial_last_one() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\nsecond line\npartial", 64).await,
            ["{\"a\":1}", "", "second line"]
        );
    }

    #[tokio::test]
    async fn a_line_past_the_cap_is_reported_and_skipped_to_its_end() {
        // Read four bytes at a time: the cap is passed before the newline
        // is in the buffer, and the rest of the line is skipped after.
        assert_eq!(
            lines(b"0123456789abcdef\nok\n", 8).await,
            ["<too long>", "ok"]
        );
        assert_eq!(lines(b"0123456789\nok\n", 8).await, ["<too long>", "ok"]);
        // The cap holds the newline (and a `\r` before it), as rmcp's does.
        assert_eq!(lines(b"0123456\n", 8).await, ["0123456"]);
        assert_eq!(lines(b"01234567\nok\n", 8).await, ["<too long>", "ok"]);
        assert_eq!(lines(b"012345\r\n", 8).await, ["012345"]);
        assert_eq!(lines(b"0123456\r\nok\n", 8).await, ["<too long>", "ok"]);
    }

    #[test]
    fn excerpts_are_bounded_and_printable() {
        assert_eq!(excerpt(b"ab\x1bc", 10), "ab\\u{1b}c");
        assert_eq!(excerpt(b"abcdef", 3), "abc... (6 bytes in all)");
    }
}
