//! Unit tests of the conversion: every mapping rule, every limit (with the
//! exact path), hostile `Serialize`, `Drop` and `Display` impls. This
//! module holds the helpers and value types the groups share.

mod containment;
mod errors;
mod limits;
mod mapping;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use serde::ser::{Error as _, SerializeMap, SerializeSeq, Serializer};

use super::*;

fn plain<T: Serialize + ?Sized>(value: &T) -> Plain {
    to_plain(value, &Limits::default()).expect("within the default limits")
}

fn text(s: &str) -> Plain {
    Plain::Text(s.to_owned())
}

fn map(entries: Vec<(&str, Plain)>) -> Plain {
    Plain::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn limit_error(limit: Limit, max: usize, path: &str) -> Result<Plain, PlainError> {
    Err(PlainError::LimitExceeded {
        limit,
        max,
        path: path.to_owned(),
    })
}

/// Serializes its bytes with `serialize_bytes`.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// Serializes its entries as a map, keys of any type.
struct Entries<K, V>(Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for Entries<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[derive(Serialize)]
struct Unit;

#[derive(Serialize)]
struct Newtype(u8);

#[derive(Serialize)]
struct TupleStruct(u8, bool);

#[derive(Serialize)]
struct Record {
    name: &'static str,
    tags: Vec<&'static str>,
    parent: Option<Box<Record>>,
}

#[derive(Serialize)]
enum Shape {
    Dot,
    Circle(f64),
    Line(i32, i32),
    Rect { w: u8, h: u8 },
}

#[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
enum Color {
    Red,
}

/// Writes `x` forever (until the writer refuses).
struct Endless;

impl fmt::Display for Endless {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        loop {
            f.write_str("xxxxxxxx")?;
        }
    }
}
