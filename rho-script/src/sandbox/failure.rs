//! How a job's failures read: a thrown value made text, the memory or
//! stack limit a throw stands for, and a failure of the engine itself.

use rho_tool_core::untrusted::plain::Limits;
use rquickjs::{Type, Value};

use crate::sandbox::job::JobSpec;
use crate::sandbox::output::ScriptOutput;

/// What QuickJS throws when an allocation fails under the memory limit.
const OUT_OF_MEMORY: &str = "out of memory";
/// What QuickJS throws when the stack limit is reached.
const STACK_EXCEEDED: &str = "Maximum call stack size exceeded";

/// The limits of how a thrown value that is not an `Error` is shown.
pub(super) const THROWN_LIMITS: Limits = Limits::new()
    .with_max_depth(8)
    .with_max_bytes(4 << 10)
    .with_max_elements(256)
    .with_max_string(2 << 10);

/// The memory or stack limit a thrown value stands for, if any: QuickJS's
/// own out-of-memory and stack errors, or no exception value at all (when
/// memory ran out before one could be made).
pub(super) fn limit_of(thrown: &Value<'_>, spec: &JobSpec) -> Option<String> {
    if thrown.type_of() == Type::Uninitialized {
        return Some(memory_text(spec));
    }
    // Out of memory while it makes the error itself, the engine throws
    // `null` instead; nothing tells that apart from a script's own
    // `throw null`, so the text says both.
    if thrown.is_null() {
        return Some(format!(
            "the script threw `null`, which is what the engine throws when a script exceeds its memory limit of {} (a script's own `throw null` reads the same)",
            bytes_text(spec.limits.memory)
        ));
    }
    if !thrown.is_error() {
        return None;
    }
    let message: Value<'_> = thrown.as_object()?.get("message").ok()?;
    let message = message.as_string()?.to_string().ok()?;
    match message.as_str() {
        OUT_OF_MEMORY => Some(memory_text(spec)),
        STACK_EXCEEDED => Some(format!(
            "the script exceeded its stack limit ({STACK_EXCEEDED}): recursion too deep"
        )),
        _ => None,
    }
}

fn memory_text(spec: &JobSpec) -> String {
    format!(
        "the script exceeded its memory limit of {} and was stopped",
        bytes_text(spec.limits.memory)
    )
}

/// A failure of the engine's binding itself (not of the script).
pub(super) fn engine_failure(spec: &JobSpec, doing: &str, error: &rquickjs::Error) -> ScriptOutput {
    ScriptOutput::crashed(format!(
        "tool `{}` crashed: the engine could not {doing}: {error}",
        spec.name
    ))
}

/// `64 MiB`, `512 KiB` or `1000 bytes`.
pub(super) fn bytes_text(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// The most of a thrown error's text the model reads: 16 KiB.
const MAX_THROWN_TEXT: usize = 16 << 10;

pub(super) fn cut(mut text: String) -> String {
    if text.len() > MAX_THROWN_TEXT {
        let mut end = MAX_THROWN_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("… (cut)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_as_people_write_them() {
        assert_eq!(bytes_text(64 << 20), "64 MiB");
        assert_eq!(bytes_text(512 << 10), "512 KiB");
        assert_eq!(bytes_text(1000), "1000 bytes");
    }
}
