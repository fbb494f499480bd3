//! The output cap: how much of a result's text the model reads.

use rho_tool_core::{Content, ToolResult};

/// A cap on the text the model reads of one call's result.
///
/// Each text part longer than the cap keeps its head and its tail (half the
/// cap each, cut on character boundaries) around a marker that says how much
/// was cut, so the model sees both how the output began and how it ended
/// (where errors usually are). Images are not touched. The cap applies to
/// what the model and the session get; subscribers get the whole text in
/// `tool_execution_end`.
///
/// ```
/// use rho::OutputCap;
///
/// let (text, cut) = OutputCap::bytes(10).cut("0123456789abcdefghij");
/// assert_eq!(cut, 10);
/// assert_eq!(text, "01234\n[… 10 of 20 bytes cut …]\nfghij");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutputCap {
    max_bytes: usize,
}

impl OutputCap {
    /// A cap of `max_bytes` bytes of text (UTF-8) per text part, marker not
    /// counted.
    pub const fn bytes(max_bytes: usize) -> Self {
        Self { max_bytes }
    }

    /// The cap in bytes.
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// `text` under the cap, and how many bytes were cut (0 when it fits).
    pub fn cut(&self, text: &str) -> (String, usize) {
        cut_middle(text, self.max_bytes)
    }

    /// `result` with each text part under the cap, and how many bytes were
    /// cut in all. The details are kept as they are.
    pub fn apply(&self, mut result: ToolResult) -> (ToolResult, usize) {
        let cut = self.apply_in_place(&mut result);
        (result, cut)
    }

    /// Cuts each text part of `result` under the cap, in place; returns how
    /// many bytes were cut in all. Other parts and the details are kept.
    pub fn apply_in_place(&self, result: &mut ToolResult) -> usize {
        let mut total = 0;
        for part in result.content_mut() {
            if let Some((kept, cut)) = self.cut_part(part) {
                *part = kept;
                total += cut;
            }
        }
        total
    }

    /// What is kept of `part` and how many bytes were cut, when the cap
    /// cuts it (a text part longer than the cap); `None` when it is kept
    /// whole. Only the kept head and tail are copied.
    pub(crate) fn cut_part(&self, part: &Content) -> Option<(Content, usize)> {
        match part {
            Content::Text(text) if text.len() > self.max_bytes => {
                let (kept, cut) = self.cut(text);
                Some((Content::Text(kept), cut))
            }
            _ => None,
        }
    }
}

/// `text` cut to at most `max` bytes plus a marker, keeping its head and
/// tail on character boundaries; and how many bytes were cut.
pub(crate) fn cut_middle(text: &str, max: usize) -> (String, usize) {
    if text.len() <= max {
        return (text.to_owned(), 0);
    }
    let head_end = floor_boundary(text, max - max / 2);
    let tail_start = ceil_boundary(text, text.len() - max / 2);
    let cut = tail_start - head_end;
    let marker = format!("\n[… {cut} of {} bytes cut …]\n", text.len());
    let mut out = String::with_capacity(head_end + marker.len() + (text.len() - tail_start));
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    (out, cut)
}

/// The largest character boundary at or before `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary at or after `at`.
fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        let text = "é".repeat(100); // 200 bytes
        for max in 0..40 {
            let (out, cut) = cut_middle(&text, max);
            assert!(cut >= 200 - max, "max {max}: cut {cut}");
            assert!(out.contains(&format!("{cut} of 200 bytes cut")));
        }
    }

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(cut_middle("hello", 5), ("hello".to_owned(), 0));
    }
}
