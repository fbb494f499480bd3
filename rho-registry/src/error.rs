//! Why a change to the registry was refused.

/// A change to the registry that was refused; the registry is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools with one name: names must be unique across all sources.
    #[error(
        "tool `{tool}` of source `{offered_by}` clashes with the tool of that name from source `{held_by}`"
    )]
    DuplicateTool {
        /// The tool's name.
        tool: String,
        /// The source that already has a tool of that name (the same source
        /// when it offered the name twice).
        held_by: String,
        /// The source that offered it again.
        offered_by: String,
    },
    /// A source with this name is already registered.
    #[error("a source named `{name}` is already registered")]
    DuplicateSource {
        /// The source's name.
        name: String,
    },
    /// The source was removed from the registry; its handle can no longer
    /// add tools.
    #[error("source `{name}` was removed from the registry")]
    SourceRemoved {
        /// The source's name.
        name: String,
    },
    /// A tool whose metadata could not be read or is not usable: reading
    /// its `name`, `description`, `parameters`, `annotations` or
    /// `output_schema` panicked, its name is empty, or its output schema is
    /// not a JSON object.
    #[error("source `{source_name}` offered a tool that cannot be registered: {reason}")]
    BadTool {
        /// The source that offered it.
        source_name: String,
        /// What is wrong with it.
        reason: String,
    },
}
