//! Arguments nested too deep to touch.
//!
//! `serde_json::Value` clones, prints, validates and even drops itself
//! recursively, one stack frame per level. Arguments a million levels deep
//! (a host that builds them, a model told to) would overflow the loop's
//! stack at the first of these, and a stack overflow ends the process. So
//! a turn measures each call's nesting without recursion first, and takes
//! arguments past [`ArgumentError::MAX_DEPTH`] apart without recursion before
//! anything else sees them: the call is refused with a clear error instead.

use serde_json::Value;

use crate::validate::ArgumentError;

/// Whether `value` nests deeper than `max` levels (a scalar is level 0).
/// Looks at most at `max + 1` levels of any branch, without recursion.
pub(crate) fn nests_deeper_than(value: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(fields) => Box::new(fields.values()),
            _ => continue,
        };
        if depth + 1 > max {
            return true;
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    false
}

/// Drops `value` without recursion: each container is emptied onto a
/// stack before it is dropped.
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(fields) => stack.extend(fields.into_iter().map(|(_, field)| field)),
            _ => {}
        }
    }
}

/// What events show in place of arguments nested too deep.
pub(crate) fn placeholder() -> Value {
    Value::String(format!(
        "<arguments nested deeper than {} levels: not shown>",
        ArgumentError::MAX_DEPTH
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> Value {
        let mut value = Value::Null;
        for _ in 0..levels {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn depth_is_counted_by_levels_of_containers() {
        assert!(!nests_deeper_than(&Value::Null, 0));
        assert!(!nests_deeper_than(&nested(3), 3));
        assert!(nests_deeper_than(&nested(4), 3));
        assert!(!nests_deeper_than(
            &serde_json::json!({ "a": [1, {"b": 2}] }),
            3
        ));
        assert!(nests_deeper_than(
            &serde_json::json!({ "a": [1, {"b": []}] }),
            3
        ));
    }

    #[test]
    fn a_million_levels_are_measured_and_dropped_without_recursion() {
        let deep = nested(1_000_000);
        assert!(nests_deeper_than(&deep, ArgumentError::MAX_DEPTH));
        dismantle(deep);
    }
}
