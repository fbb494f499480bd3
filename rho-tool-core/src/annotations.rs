//! `ToolAnnotations`: what a tool says about its own behaviour, in the
//! terms of the Model Context Protocol (MCP).

use serde::{Deserialize, Serialize};

/// Hints about what a tool does, and a title for people: the annotations
/// MCP puts on a tool.
///
/// Every field is optional. An absent hint means MCP's default, which is the
/// cautious reading; the `is_*` accessors apply it:
///
/// | hint | absent means |
/// |---|---|
/// | `readOnlyHint` | not read-only |
/// | `destructiveHint` | destructive, unless the tool is read-only |
/// | `idempotentHint` | not idempotent |
/// | `openWorldHint` | open world |
///
/// The destructive and idempotent hints only mean something for a tool that
/// is not read-only (a tool that changes nothing destroys nothing).
///
/// Hints are claims by whoever wrote the tool. A tool the host wrote can be
/// believed; a tool the host did not write ([`Tool::is_untrusted`]) can claim
/// anything, so a gate should not let such a claim widen what the tool may
/// do ([`AnnotationGate`] does not, unless the host asks it to).
///
/// Serialises in MCP's camelCase, leaving out absent fields, so
/// `ToolAnnotations::new()` is `{}`.
///
/// [`Tool::is_untrusted`]: crate::Tool::is_untrusted
/// [`AnnotationGate`]: crate::AnnotationGate
///
/// # Example
///
/// ```
/// use rho::ToolAnnotations;
///
/// let grep = ToolAnnotations::new().title("Search files").read_only().open_world(false);
/// assert!(grep.is_read_only());
/// assert!(!grep.is_destructive()); // read-only, so not destructive
/// assert!(!grep.is_open_world());
/// assert_eq!(
///     serde_json::to_value(&grep).unwrap(),
///     serde_json::json!({ "title": "Search files", "readOnlyHint": true, "openWorldHint": false }),
/// );
///
/// // Nothing said: MCP's cautious defaults.
/// let unknown = ToolAnnotations::new();
/// assert!(!unknown.is_read_only());
/// assert!(unknown.is_destructive());
/// assert!(!unknown.is_idempotent());
/// assert!(unknown.is_open_world());
/// assert_eq!(serde_json::to_value(&unknown).unwrap(), serde_json::json!({}));
///
/// // Only appends, and safe to retry.
/// let append = ToolAnnotations::new().destructive(false).idempotent(true);
/// assert!(!append.is_read_only() && !append.is_destructive() && append.is_idempotent());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A title for people (MCP's `title`); the model goes by the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether the tool leaves its environment unchanged (MCP's
    /// `readOnlyHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// Whether the tool may destroy or overwrite what is there, as opposed
    /// to only adding to it (MCP's `destructiveHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Whether calling the tool again with the same arguments has no further
    /// effect (MCP's `idempotentHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// Whether the tool reaches an open world of outside entities (the web,
    /// other people's systems) rather than a closed domain of its own
    /// (MCP's `openWorldHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No title and no hints: every hint reads as its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the title for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Says the tool leaves its environment unchanged.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only_hint = Some(true);
        self
    }

    /// Says whether the tool may destroy or overwrite what is there
    /// (`false`: it only adds).
    #[must_use]
    pub fn destructive(mut self, destructive: bool) -> Self {
        self.destructive_hint = Some(destructive);
        self
    }

    /// Says whether calling the tool again with the same arguments has no
    /// further effect.
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent_hint = Some(idempotent);
        self
    }

    /// Says whether the tool reaches an open world of outside entities
    /// (`false`: its domain is closed, like a memory of its own).
    #[must_use]
    pub fn open_world(mut self, open_world: bool) -> Self {
        self.open_world_hint = Some(open_world);
        self
    }

    /// Whether the tool leaves its environment unchanged. Absent: `false`.
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// Whether the tool may destroy or overwrite what is there. A read-only
    /// tool is not destructive whatever its hint says; otherwise absent:
    /// `true`.
    pub fn is_destructive(&self) -> bool {
        !self.is_read_only() && self.destructive_hint.unwrap_or(true)
    }

    /// Whether calling the tool again with the same arguments has no
    /// further effect. Absent: `false` (for a read-only tool too: the hint
    /// is only read as stated).
    pub fn is_idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }

    /// Whether the tool reaches an open world of outside entities. Absent:
    /// `true`.
    pub fn is_open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }

    /// Whether nothing is set: no title and no hint.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Whether any of the four behaviour hints is set (the title aside).
    pub fn has_hints(&self) -> bool {
        self.read_only_hint.is_some()
            || self.destructive_hint.is_some()
            || self.idempotent_hint.is_some()
            || self.open_world_hint.is_some()
    }

    /// The same title without the behaviour hints: what is left to show of
    /// a tool whose hints are not believed.
    #[must_use]
    pub fn without_hints(&self) -> Self {
        Self {
            title: self.title.clone(),
            ..Self::default()
        }
    }

    /// These annotations as a reader takes them: as stated when it
    /// `believe`s them, else [without their hints](Self::without_hints).
    /// rho believes a trusted tool's hints, and an untrusted tool's only
    /// where the host says so.
    #[must_use]
    pub fn believed(&self, believe: bool) -> Self {
        if believe {
            self.clone()
        } else {
            self.without_hints()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_hints_read_as_mcps_defaults() {
        let none = ToolAnnotations::new();
        assert!(!none.is_read_only());
        assert!(none.is_destructive());
        assert!(!none.is_idempotent());
        assert!(none.is_open_world());
        assert!(none.is_empty());
        assert!(!none.has_hints());
    }

    #[test]
    fn a_read_only_tool_is_never_destructive() {
        let claims_both = ToolAnnotations::new().read_only().destructive(true);
        assert!(claims_both.is_read_only());
        assert!(!claims_both.is_destructive());
        // An explicit "not read-only" is the same as none.
        let mut stated = ToolAnnotations::new();
        stated.read_only_hint = Some(false);
        assert!(!stated.is_read_only());
        assert!(stated.is_destructive());
    }

    #[test]
    fn stated_hints_are_read_as_stated() {
        let hints = ToolAnnotations::new()
            .destructive(false)
            .idempotent(true)
            .open_world(false);
        assert!(!hints.is_read_only());
        assert!(!hints.is_destructive());
        assert!(hints.is_idempotent());
        assert!(!hints.is_open_world());
        assert!(hints.has_hints());
        assert!(!hints.is_empty());
    }

    #[test]
    fn serialises_in_mcps_camel_case_leaving_out_what_is_absent() {
        let all = ToolAnnotations::new()
            .title("Delete file")
            .read_only()
            .destructive(true)
            .idempotent(true)
            .open_world(false);
        let json = serde_json::to_value(&all).expect("plain fields serialise");
        assert_eq!(
            json,
            json!({
                "title": "Delete file",
                "readOnlyHint": true,
                "destructiveHint": true,
                "idempotentHint": true,
                "openWorldHint": false,
            })
        );
        let back: ToolAnnotations = serde_json::from_value(json).expect("its own shape");
        assert_eq!(back, all);

        let title_only = ToolAnnotations::new().title("Search");
        assert_eq!(
            serde_json::to_value(&title_only).expect("plain fields serialise"),
            json!({ "title": "Search" })
        );
        assert!(!title_only.has_hints() && !title_only.is_empty());
    }

    #[test]
    fn deserialises_partial_and_unknown_fields() {
        let parsed: ToolAnnotations =
            serde_json::from_value(json!({ "destructiveHint": false, "futureHint": 3 }))
                .expect("unknown fields are ignored");
        assert_eq!(parsed, ToolAnnotations::new().destructive(false));
        let empty: ToolAnnotations = serde_json::from_value(json!({})).expect("all optional");
        assert!(empty.is_empty());
    }

    #[test]
    fn without_hints_keeps_only_the_title() {
        let hints = ToolAnnotations::new()
            .title("Grep")
            .read_only()
            .open_world(false);
        assert_eq!(hints.without_hints(), ToolAnnotations::new().title("Grep"));
        assert_eq!(
            ToolAnnotations::new().read_only().without_hints(),
            ToolAnnotations::new()
        );
    }
}
