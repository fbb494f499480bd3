//! Where in a value an error happened, written like `$.items[3]["a b"]`.

use std::fmt::Write as _;

/// Keys longer than this many bytes are cut (at a character boundary) in a
/// path, so that an error message stays short whatever the value holds.
const MAX_KEY_IN_PATH: usize = 64;

/// One step from a container to one of its values.
#[derive(Debug)]
pub(crate) enum Segment {
    /// An element of a list.
    Index(usize),
    /// A struct field or an enum variant: names that serde gives as
    /// `&'static str`, so no copy is made for the path.
    Field(&'static str),
    /// A map key (moved in while its value is converted, then moved out).
    Key(String),
}

/// Writes `segments` as a path: `$` is the root, identifiers are written
/// `.name`, other keys `["a b"]` (escaped as a JSON string), list elements
/// `[3]`.
pub(crate) fn render(segments: &[Segment]) -> String {
    let mut out = String::from("$");
    for segment in segments {
        match segment {
            Segment::Index(index) => {
                // Writing into a String cannot fail.
                let _ = write!(out, "[{index}]");
            }
            Segment::Field(name) => push_key(&mut out, name),
            Segment::Key(key) => push_key(&mut out, key),
        }
    }
    out
}

/// Appends one key step.
fn push_key(out: &mut String, key: &str) {
    if key.len() <= MAX_KEY_IN_PATH && is_identifier(key) {
        out.push('.');
        out.push_str(key);
        return;
    }
    let (shown, cut) = if key.len() > MAX_KEY_IN_PATH {
        let mut end = MAX_KEY_IN_PATH;
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        (&key[..end], true)
    } else {
        (key, false)
    };
    out.push_str("[\"");
    for c in shown.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    if cut {
        out.push('…');
    }
    out.push_str("\"]");
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_like_json_path() {
        assert_eq!(render(&[]), "$");
        assert_eq!(
            render(&[
                Segment::Field("items"),
                Segment::Index(3),
                Segment::Key("name".into())
            ]),
            "$.items[3].name"
        );
        assert_eq!(render(&[Segment::Key("a b".into())]), "$[\"a b\"]");
        assert_eq!(render(&[Segment::Key(String::new())]), "$[\"\"]");
        assert_eq!(render(&[Segment::Key("1x".into())]), "$[\"1x\"]");
        assert_eq!(render(&[Segment::Key("$bytes".into())]), "$[\"$bytes\"]");
        assert_eq!(
            render(&[Segment::Key("q\"\\\n\u{1}".into())]),
            "$[\"q\\\"\\\\\\n\\u0001\"]"
        );
    }

    #[test]
    fn long_keys_are_cut_at_a_character_boundary() {
        let key = "é".repeat(100);
        let path = render(&[Segment::Key(key)]);
        assert_eq!(path, format!("$[\"{}…\"]", "é".repeat(32)));
        let ident = "a".repeat(65);
        assert_eq!(
            render(&[Segment::Key(ident)]),
            format!("$[\"{}…\"]", "a".repeat(64))
        );
    }
}
