//! Disposing of a foreign value that may nest deeper than a stack can drop.
//!
//! `serde_json::Value` and [`Plain`] drop themselves recursively, one stack
//! frame per level of nesting. A value a million levels deep takes a few
//! lines to build; [`to_plain`](super::to_plain) refuses it under its depth
//! limit, but its recursive drop would still overflow the task's stack (2
//! MiB on a typical worker thread), and a stack overflow ends the process.
//! So these two are taken apart here one level at a time, with the open
//! containers on a heap stack: memory in proportion to the depth, none to
//! the width.

use std::any::Any;
use std::collections::btree_map;

use serde_json::Value;

use super::Plain;
use crate::DropPanicked;

/// Drops `value`, containing a panic of its `Drop`; a `serde_json::Value`
/// or a [`Plain`] is taken apart without recursion, however deep it nests.
/// Any other type is dropped by its own `Drop`.
pub(crate) fn dispose_of<T: 'static>(value: T) -> Result<(), DropPanicked> {
    let mut slot = Some(value);
    let any: &mut dyn Any = &mut slot;
    if let Some(json) = any.downcast_mut::<Option<Value>>().and_then(Option::take) {
        dismantle(json);
    } else if let Some(plain) = any.downcast_mut::<Option<Plain>>().and_then(Option::take) {
        dismantle(plain);
    }
    // Empty when it was taken apart above.
    crate::drop_contained(slot)
}

/// A value made of nested containers.
trait Nested: Sized {
    /// The values one container holds, handed out one at a time.
    type Inner: Iterator<Item = Self>;

    /// The values inside, when this is a container; a scalar is dropped.
    fn open(self) -> Option<Self::Inner>;
}

/// Drops `value` without recursion: each container is opened and its
/// values handed out one at a time, the innermost open container first.
fn dismantle<T: Nested>(value: T) {
    let mut open: Vec<T::Inner> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(inner) = next.take().and_then(T::open) {
            open.push(inner);
        }
        let Some(innermost) = open.last_mut() else {
            return;
        };
        next = innermost.next();
        if next.is_none() {
            open.pop();
        }
    }
}

/// The values inside a JSON array or object.
enum JsonInner {
    Array(std::vec::IntoIter<Value>),
    Object(serde_json::map::IntoIter),
}

impl Iterator for JsonInner {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        match self {
            JsonInner::Array(items) => items.next(),
            JsonInner::Object(fields) => fields.next().map(|(_, field)| field),
        }
    }
}

impl Nested for Value {
    type Inner = JsonInner;

    fn open(self) -> Option<JsonInner> {
        match self {
            Value::Array(items) => Some(JsonInner::Array(items.into_iter())),
            Value::Object(fields) => Some(JsonInner::Object(fields.into_iter())),
            _ => None,
        }
    }
}

/// The values inside a plain list or map.
enum PlainInner {
    List(std::vec::IntoIter<Plain>),
    Map(btree_map::IntoValues<String, Plain>),
}

impl Iterator for PlainInner {
    type Item = Plain;

    fn next(&mut self) -> Option<Plain> {
        match self {
            PlainInner::List(items) => items.next(),
            PlainInner::Map(values) => values.next(),
        }
    }
}

impl Nested for Plain {
    type Inner = PlainInner;

    fn open(self) -> Option<PlainInner> {
        match self {
            Plain::List(items) => Some(PlainInner::List(items.into_iter())),
            Plain::Map(entries) => Some(PlainInner::Map(entries.into_values())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const LEVELS: usize = 1_000_000;

    /// Runs `f` on a thread with a stack of 256 KiB, far less than a
    /// recursive drop of a million levels needs.
    fn on_a_small_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(f)
            .expect("a thread")
            .join()
            .expect("no overflow, no panic");
    }

    #[test]
    fn json_a_million_levels_deep_is_disposed_of_without_recursion() {
        on_a_small_stack(|| {
            let mut value = Value::Null;
            for level in 0..LEVELS {
                value = if level % 2 == 0 {
                    Value::Array(vec![Value::Bool(true), value])
                } else {
                    let mut fields = serde_json::Map::new();
                    fields.insert("a".to_owned(), value);
                    Value::Object(fields)
                };
            }
            assert_eq!(dispose_of(value), Ok(()));
        });
    }

    #[test]
    fn plain_a_million_levels_deep_is_disposed_of_without_recursion() {
        on_a_small_stack(|| {
            let mut value = Plain::Null;
            for level in 0..LEVELS {
                value = if level % 2 == 0 {
                    Plain::List(vec![Plain::Int(1), value])
                } else {
                    Plain::Map(BTreeMap::from([("a".to_owned(), value)]))
                };
            }
            assert_eq!(dispose_of(value), Ok(()));
        });
    }

    #[test]
    fn other_values_are_dropped_by_their_own_drop_contained() {
        struct Loud;
        impl Drop for Loud {
            fn drop(&mut self) {
                panic!("loud")
            }
        }
        assert_eq!(dispose_of(vec![1, 2]), Ok(()));
        assert_eq!(
            dispose_of(Loud),
            Err(DropPanicked {
                message: Some("loud".to_owned())
            })
        );
    }
}
