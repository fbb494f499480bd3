//! How much plain data one conversion may make, and how it fails.

use std::fmt;

/// Bounds on the plain data that one conversion may make.
///
/// Every limit is checked while the value is converted, before the part that
/// would exceed it is copied, so a huge or deeply nested value is refused
/// early, not after it has been built. Build one with [`Limits::default`] and
/// the `with_` methods:
///
/// ```
/// use rho::untrusted::Limits;
/// let limits = Limits::default().with_max_depth(16).with_max_string(64 * 1024);
/// assert_eq!(limits.max_depth, 16);
/// assert_eq!(limits.max_elements, 1_000_000);
/// ```
///
/// # What is counted
///
/// - `max_depth`: how deeply values nest, as serde presents them. A value
///   inside a list, tuple, map, struct or enum variant with data is one level
///   deeper than its container; a tuple or struct variant is two levels (it
///   becomes a one-key map around a list or map). `Some(x)` and newtype structs
///   also count one level for `x` although they add none to the output: that
///   bounds the recursion of a chain of wrappers too. A scalar alone is at
///   depth 0, so `max_depth: 0` allows only scalars. Plain data made under
///   this limit has a [`Plain::depth`](super::Plain::depth) of at most
///   `max_depth`.
/// - `max_elements`: the number of values made, containers included; map keys
///   are part of their entry and not counted.
/// - `max_bytes`: an approximate total size: [`Limits::VALUE_COST`] for each
///   value, plus the length in bytes of each text and byte string (before any
///   base64), plus the length of each map key, struct field name and variant
///   name used as a key. That is close to the size of the compact JSON text,
///   not to the memory used (a few times more per value). Plain data made
///   under this limit has a [`Plain::size`](super::Plain::size) of at most
///   `max_bytes`.
/// - `max_string`: the length in bytes of any one text, byte string or map
///   key.
///
/// Values that the output does not keep are still counted: the first of two
/// entries with the same key, the text of a `{"$bytes": ...}` map that is read
/// as bytes. So the measures of the output are at most what was counted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How deeply values may nest (default 64).
    pub max_depth: usize,
    /// Approximate total size in bytes (default 16 MiB).
    pub max_bytes: usize,
    /// Total number of values (default 1,000,000).
    pub max_elements: usize,
    /// Length in bytes of one text, byte string or map key (default 4 MiB).
    pub max_string: usize,
}

impl Limits {
    /// The size counted for each value, on top of its text or bytes.
    pub const VALUE_COST: usize = 8;

    /// The default limits: depth 64, 16 MiB in total, 1,000,000 values,
    /// 4 MiB for one string. The same as [`Limits::default`].
    pub const fn new() -> Self {
        Limits {
            max_depth: 64,
            max_bytes: 16 << 20,
            max_elements: 1_000_000,
            max_string: 4 << 20,
        }
    }

    /// Sets how deeply values may nest.
    #[must_use]
    pub const fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Sets the approximate total size in bytes.
    #[must_use]
    pub const fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets the total number of values.
    #[must_use]
    pub const fn with_max_elements(mut self, max_elements: usize) -> Self {
        self.max_elements = max_elements;
        self
    }

    /// Sets the length in bytes of one text, byte string or map key.
    #[must_use]
    pub const fn with_max_string(mut self, max_string: usize) -> Self {
        self.max_string = max_string;
        self
    }

    /// The value of one limit.
    pub const fn max(&self, limit: Limit) -> usize {
        match limit {
            Limit::Depth => self.max_depth,
            Limit::Bytes => self.max_bytes,
            Limit::Elements => self.max_elements,
            Limit::StringLength => self.max_string,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::new()
    }
}

/// One of the [`Limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// [`Limits::max_depth`].
    Depth,
    /// [`Limits::max_bytes`].
    Bytes,
    /// [`Limits::max_elements`].
    Elements,
    /// [`Limits::max_string`].
    StringLength,
}

impl Limit {
    /// What the limit bounds, in words: `nesting depth`, `total size in
    /// bytes`, `number of values`, `length in bytes of one string`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Limit::Depth => "nesting depth",
            Limit::Bytes => "total size in bytes",
            Limit::Elements => "number of values",
            Limit::StringLength => "length in bytes of one string",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a value could not be made plain data.
///
/// Every variant holds only library-owned data: nothing of the value that
/// failed. A `path` tells where in the value: `$` is the root, `$.items[3]`
/// the fourth element of field `items`, `$["a b"]` a key that is not an
/// identifier (long keys are cut).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlainError {
    /// The value is larger than the [`Limits`] allow.
    #[error("{limit} exceeds the limit of {max} at {path}")]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its value.
        max: usize,
        /// Where the value exceeded it.
        path: String,
    },
    /// The value holds something plain data cannot express (a map key that is
    /// a list or a map, say).
    #[error("{what} at {path} cannot be made plain data")]
    Unsupported {
        /// What it was.
        what: String,
        /// Where.
        path: String,
    },
    /// The value's `Serialize` returned an error of its own (such as
    /// `serde::ser::Error::custom`). The message is cut after 4 KiB.
    #[error("the value's Serialize failed at {path}: {message}")]
    Custom {
        /// The error's message.
        message: String,
        /// Where it was returned (the innermost value rho was converting).
        path: String,
    },
    /// The value's `Serialize` (or a `Display` it used) panicked.
    #[error("the value's Serialize panicked{}", describe(.message))]
    Panicked {
        /// The panic's message, when its payload was a `String` or `&str`.
        message: Option<String>,
    },
    /// The value's `Drop` panicked once it was converted (or refused).
    #[error("the value's Drop panicked{}", describe(.message))]
    DropPanicked {
        /// The panic's message, when its payload was a `String` or `&str`.
        message: Option<String>,
    },
}

impl PlainError {
    /// Where in the value the error happened, for the errors that know.
    pub fn path(&self) -> Option<&str> {
        match self {
            PlainError::LimitExceeded { path, .. }
            | PlainError::Unsupported { path, .. }
            | PlainError::Custom { path, .. } => Some(path),
            PlainError::Panicked { .. } | PlainError::DropPanicked { .. } => None,
        }
    }
}

/// `: message`, or a note that the payload was not text.
fn describe(message: &Option<String>) -> String {
    match message {
        Some(message) => format!(": {message}"),
        None => " (with a payload that is not text)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_builder() {
        let limits = Limits::default();
        assert_eq!(limits, Limits::new());
        assert_eq!(limits.max_depth, 64);
        assert_eq!(limits.max_bytes, 16 * 1024 * 1024);
        assert_eq!(limits.max_elements, 1_000_000);
        assert_eq!(limits.max_string, 4 * 1024 * 1024);
        let limits = limits
            .with_max_depth(1)
            .with_max_bytes(2)
            .with_max_elements(3)
            .with_max_string(4);
        assert_eq!(
            [
                Limit::Depth,
                Limit::Bytes,
                Limit::Elements,
                Limit::StringLength
            ]
            .map(|limit| limits.max(limit)),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn messages_name_the_limit_its_value_and_the_place() {
        let error = PlainError::LimitExceeded {
            limit: Limit::Depth,
            max: 64,
            path: "$.items[3]".into(),
        };
        assert_eq!(
            error.to_string(),
            "nesting depth exceeds the limit of 64 at $.items[3]"
        );
        assert_eq!(error.path(), Some("$.items[3]"));
        assert_eq!(
            PlainError::Panicked {
                message: Some("boom".into())
            }
            .to_string(),
            "the value's Serialize panicked: boom"
        );
        assert_eq!(
            PlainError::DropPanicked { message: None }.to_string(),
            "the value's Drop panicked (with a payload that is not text)"
        );
        assert_eq!(
            PlainError::Unsupported {
                what: "a map key that is a list".into(),
                path: "$".into()
            }
            .to_string(),
            "a map key that is a list at $ cannot be made plain data"
        );
        assert_eq!(Limit::Bytes.to_string(), "total size in bytes");
        assert_eq!(Limit::Elements.to_string(), "number of values");
    }
}
