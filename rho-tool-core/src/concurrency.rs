//! `Concurrency`: how a tool's calls may overlap with other calls.

use std::fmt;
use std::num::NonZeroUsize;

use serde::Serialize;

use crate::annotations::ToolAnnotations;

/// How a tool's calls may overlap with the other calls of a model's
/// message, and with each other ([`Tool::concurrency`](crate::Tool::concurrency)).
///
/// A turn orders its calls the way a fair read/write lock taken in the
/// model's order would: [`Shared`](Concurrency::Shared) and
/// [`Bounded`](Concurrency::Bounded) calls take it shared,
/// [`Exclusive`](Concurrency::Exclusive) calls take it exclusively.
///
/// | a call of a tool that is | runs |
/// |---|---|
/// | `Shared` | beside any shared call; after every earlier exclusive call of its message ended |
/// | `Bounded(n)` | as `Shared`, and while fewer than `n` calls of the tool run in the whole host |
/// | `Exclusive` | alone: after every earlier call of its message ended, before any later one runs |
///
/// The default comes from the tool's annotations
/// ([`from_annotations`](Concurrency::from_annotations)): a tool that says
/// it is read-only (`readOnlyHint`) is shared, any other is exclusive, so
/// a tool that says nothing keeps the model's order.
///
/// ```
/// use std::num::NonZeroUsize;
/// use rho::{Concurrency, ToolAnnotations};
///
/// assert_eq!(Concurrency::from_annotations(&ToolAnnotations::new().read_only()), Concurrency::Shared);
/// assert_eq!(Concurrency::from_annotations(&ToolAnnotations::new()), Concurrency::Exclusive);
/// let four = Concurrency::bounded(4);
/// assert_eq!(four, Concurrency::Bounded(NonZeroUsize::new(4).unwrap()));
/// assert!(four.is_shared() && !Concurrency::Exclusive.is_shared());
/// assert_eq!(four.to_string(), "bounded(4)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Concurrency {
    /// Side by side with any other shared call: a read, a search, a
    /// fetch.
    Shared,
    /// Side by side like [`Shared`](Concurrency::Shared), but at most this
    /// many calls of the tool at once in the whole host (every turn, every
    /// runner of the tool's registry); a call over the bound waits, in
    /// order, off its clock.
    Bounded(NonZeroUsize),
    /// Alone, in the model's order: after every earlier call of its
    /// message ended, and before any later one starts running. An edit, a
    /// write, a command.
    Exclusive,
}

impl Concurrency {
    /// [`Bounded`](Concurrency::Bounded) to `calls` at once (at least one).
    pub fn bounded(calls: usize) -> Self {
        Self::Bounded(NonZeroUsize::new(calls).unwrap_or(NonZeroUsize::MIN))
    }

    /// What `annotations` imply: [`Shared`](Concurrency::Shared) for a tool
    /// that says it is read-only, [`Exclusive`](Concurrency::Exclusive)
    /// for any other (MCP's cautious reading of a tool that says nothing).
    pub fn from_annotations(annotations: &ToolAnnotations) -> Self {
        if annotations.is_read_only() {
            Self::Shared
        } else {
            Self::Exclusive
        }
    }

    /// Whether calls take the order shared (side by side): `Shared` or
    /// `Bounded`.
    pub fn is_shared(self) -> bool {
        !matches!(self, Self::Exclusive)
    }

    /// The bound on calls at once in the host, for `Bounded`.
    pub fn bound(self) -> Option<NonZeroUsize> {
        match self {
            Self::Bounded(calls) => Some(calls),
            Self::Shared | Self::Exclusive => None,
        }
    }
}

impl fmt::Display for Concurrency {
    /// `shared`, `exclusive` or `bounded(N)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Shared => f.write_str("shared"),
            Self::Exclusive => f.write_str("exclusive"),
            Self::Bounded(calls) => write!(f, "bounded({calls})"),
        }
    }
}

/// Serialises as its [`Display`](fmt::Display) text, e.g. `"bounded(4)"`.
impl Serialize for Concurrency {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
