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

use rho_tool_core::untrusted::lines::{LineSplitter, Taken};
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

/// Reads lines of at most `max` bytes, their newline counted, from
/// `reader`, by rho's one rule for a peer's lines
/// ([`LineSplitter`](rho_tool_core::untrusted::lines::LineSplitter)).
///
/// Cancel-safe: the line read so far lives in the splitter, and bytes are
/// taken from the reader's buffer and consumed in one step with no
/// `.await` between, so dropping [`next`](BoundedLines::next) half way (as
/// a `select!` does) loses nothing.
#[derive(Debug)]
pub(crate) struct BoundedLines<R> {
    reader: R,
    splitter: LineSplitter,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> BoundedLines<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Self {
            reader,
            splitter: LineSplitter::new(),
            max,
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
            let (used, taken) = self.splitter.take(buffered, self.max);
            self.reader.consume(used);
            match taken {
                Taken::More => {}
                Taken::Line(line) => return Line::Text(line),
                Taken::TooLong => return Line::TooLong,
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

    /// The rule itself is `LineSplitter`'s, tested there; here, that the
    /// reader hands it every buffer, consumes what it took, and ends.
    #[tokio::test]
    async fn reads_lines_across_small_reads_skips_one_too_long_and_drops_a_partial_end() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n0123456789abcdef\n\nok\npartial", 16).await,
            ["{\"a\":1}", "<too long>", "", "ok"]
        );
    }

    #[test]
    fn excerpts_are_bounded_and_printable() {
        assert_eq!(excerpt(b"ab\x1bc", 10), "ab\\u{1b}c");
        assert_eq!(excerpt(b"abcdef", 3), "abc... (6 bytes in all)");
    }
}
