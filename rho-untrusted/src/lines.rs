//! Lines of bounded length from a peer that may never end one.
//!
//! A process rho talks to line by line (an MCP server over stdio, a
//! script worker) is code the host did not write: it may never write a
//! newline, or write a line of a hundred megabytes. [`LineSplitter`]
//! holds the one rule rho reads such a stream by, whatever does the
//! reading (tokio's `AsyncBufRead`, std's `BufRead`): a line costs at most
//! its cap, the newline counted; a line past the cap is reported once and
//! skipped to its end; a `\r` before the newline is dropped. It does no
//! I/O itself: a reader hands it its buffer and consumes what it took.
//!
//! ```
//! use rho_untrusted::lines::{LineSplitter, Taken};
//!
//! let mut lines = LineSplitter::new();
//! // Bytes arrive in pieces, as a reader's buffer fills.
//! let (used, taken) = lines.take(b"{\"id\":", 64);
//! assert_eq!((used, taken), (6, Taken::More));
//! let (used, taken) = lines.take(b"1}\r\nnext", 64);
//! assert_eq!((used, taken), (4, Taken::Line(b"{\"id\":1}".to_vec())));
//! // Past the cap: reported, then skipped to its newline.
//! let (used, taken) = lines.take(b"0123456789", 8);
//! assert_eq!((used, taken), (10, Taken::TooLong));
//! let (used, taken) = lines.take(b"rest\nok\n", 8);
//! assert_eq!((used, taken), (5, Taken::More));
//! assert_eq!(lines.take(b"ok\n", 8), (3, Taken::Line(b"ok".to_vec())));
//! ```

/// What the bytes taken by one [`LineSplitter::take`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Nothing yet: the line goes on (or the rest of a line too long was
    /// skipped).
    More,
    /// A whole line, without its `\n` (and a `\r` before it).
    Line(Vec<u8>),
    /// The line grew past the cap before it ended: what was read of it is
    /// dropped, and so is the rest of it, up to its newline.
    TooLong,
}

/// Splits a peer's bytes into lines of at most a cap, keeping the line
/// read so far between calls (so a reader that is dropped half way, as a
/// `select!` drops one, loses nothing it has not consumed).
#[derive(Debug, Default)]
pub struct LineSplitter {
    line: Vec<u8>,
    /// Skipping the rest of a line already reported too long.
    skipping: bool,
}

impl LineSplitter {
    /// A splitter at the start of a line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes bytes from the front of `buffered` (what a reader has
    /// buffered, never empty at the end of a stream) toward the next line
    /// of at most `max` bytes, its newline counted: how many bytes to
    /// consume from the reader, and what they ended. It takes through the
    /// first newline at most.
    pub fn take(&mut self, buffered: &[u8], max: usize) -> (usize, Taken) {
        let newline = buffered.iter().position(|&byte| byte == b'\n');
        let part = newline.unwrap_or(buffered.len());
        // Through the newline when there is one.
        let used = newline.map_or(part, |at| at + 1);
        if self.skipping {
            self.skipping = newline.is_none();
            return (used, Taken::More);
        }
        // The newline counts, as in rmcp's reading.
        if self.line.len().saturating_add(used) > max {
            self.line = Vec::new();
            self.skipping = newline.is_none();
            return (used, Taken::TooLong);
        }
        self.line.extend_from_slice(&buffered[..part]);
        if newline.is_none() {
            return (used, Taken::More);
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (used, Taken::Line(line))
    }

    /// Whether part of a line was taken and not yet ended (a stream that
    /// ends now ends in the middle of a line).
    pub fn in_line(&self) -> bool {
        !self.line.is_empty() || self.skipping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `input` holds, fed `chunk` bytes at a time as a reader's
    /// buffer would hand them, with a cap of `max`.
    fn lines(input: &[u8], chunk: usize, max: usize) -> Vec<String> {
        let mut splitter = LineSplitter::new();
        let mut seen = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let buffered = &rest[..rest.len().min(chunk)];
            let (used, taken) = splitter.take(buffered, max);
            assert!(used > 0 && used <= buffered.len(), "takes what it is given");
            rest = &rest[used..];
            match taken {
                Taken::More => {}
                Taken::Line(line) => seen.push(String::from_utf8_lossy(&line).into_owned()),
                Taken::TooLong => seen.push("<too long>".to_owned()),
            }
        }
        seen
    }

    #[test]
    fn splits_lines_across_small_reads_and_keeps_a_partial_last_one_pending() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\nsecond line\npartial", 4, 64),
            ["{\"a\":1}", "", "second line"]
        );
        let mut splitter = LineSplitter::new();
        assert_eq!(splitter.take(b"partial", 64), (7, Taken::More));
        assert!(splitter.in_line());
    }

    #[test]
    fn a_line_past_the_cap_is_reported_once_and_skipped_to_its_end() {
        assert_eq!(lines(b"0123456789abcdef\nok\n", 4, 8), ["<too long>", "ok"]);
        assert_eq!(lines(b"0123456789\nok\n", 64, 8), ["<too long>", "ok"]);
        // The cap holds the newline (and a `\r` before it), as rmcp's does.
        assert_eq!(lines(b"0123456\n", 4, 8), ["0123456"]);
        assert_eq!(lines(b"01234567\nok\n", 4, 8), ["<too long>", "ok"]);
        assert_eq!(lines(b"012345\r\n", 4, 8), ["012345"]);
        assert_eq!(lines(b"0123456\r\nok\n", 4, 8), ["<too long>", "ok"]);
    }

    #[test]
    fn a_splitter_past_a_whole_line_is_at_the_start_of_the_next() {
        let mut splitter = LineSplitter::new();
        assert_eq!(splitter.take(b"a\n", 8), (2, Taken::Line(b"a".to_vec())));
        assert!(!splitter.in_line());
    }
}
