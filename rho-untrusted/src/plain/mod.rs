//! Plain data: values made only of library-owned types.
//!
//! An untrusted tool's answer is a value of a type the host did not write: its
//! `Drop`, `Display` and `Serialize` are foreign code. rho turns it into
//! [`Plain`] data inside the tool's own task, with [`plain_owned`] (or through
//! a [`Foreign`]), so only [`Plain`] (whose every trait impl is this crate's or
//! the standard library's) reaches the agent loop.
//!
//! # The mapping
//!
//! [`to_plain`] walks a value with its `Serialize` impl:
//!
//! | serde gives | plain data |
//! |---|---|
//! | `bool` | [`Plain::Bool`] |
//! | `i8`..`i64` / `u8`..`u64` | [`Plain::Int`] / [`Plain::UInt`] |
//! | `i128` / `u128` | `Int` / `UInt` when they fit, else the decimal as [`Plain::Text`] |
//! | `f32`, `f64` | [`Plain::Float`] when finite; NaN, infinities: `Text("NaN")`, `Text("inf")`, `Text("-inf")` |
//! | `char`, `str` | [`Plain::Text`] |
//! | bytes | [`Plain::Bytes`] |
//! | `None`, `()`, unit struct | [`Plain::Null`] |
//! | `Some(x)`, newtype struct `N(x)` | `x` |
//! | unit variant `E::V` | `Text("V")` |
//! | newtype variant `E::V(x)` | `Map { "V": x }` |
//! | seq, tuple, tuple struct | [`Plain::List`] |
//! | tuple variant `E::V(a, b)` | `Map { "V": List [a, b] }` |
//! | map, struct | [`Plain::Map`] |
//! | struct variant `E::V { a }` | `Map { "V": Map { "a": a } }` |
//!
//! Map keys become text: strings stay, integers, floats, booleans and chars
//! are written out (`1`, `1.5`, `true`; floats as Rust's `{:?}` writes them,
//! so `1.0`, `NaN`), a unit variant gives its name, `Some(k)` and newtype
//! structs give their inner key. Any other key (a list, a map, bytes, `None`)
//! is refused with [`PlainError::Unsupported`]. When two entries have the
//! same key, the last one wins.
//!
//! # Bytes and JSON
//!
//! The JSON form of [`Plain`] (its `Serialize`/`Deserialize`, and
//! [`Plain::to_json`]) is the natural one, except that [`Plain::Bytes`] is
//! written as a one-key map `{"$bytes": "<standard base64, padded>"}`. Reading
//! JSON back, and converting a `serde_json::Value` or any value with
//! [`to_plain`], reads such a map as bytes when its text is canonical base64
//! (as [`base64_decode`] accepts it). That is ambiguous on purpose: a genuine
//! map whose only key is `$bytes` and whose value is canonical base64 text
//! becomes [`Plain::Bytes`]. In exchange, plain data made by this crate never
//! holds such a map, so it round-trips through JSON unchanged.
//!
//! # Limits
//!
//! Conversion is bounded by [`Limits`]: depth, number of values, total size,
//! length of one string. A value beyond them is refused with
//! [`PlainError::LimitExceeded`], which names the limit and the path where it
//! was exceeded, before the excess is copied.
//!
//! ```
//! use rho::untrusted::plain::{self, Limit, Limits, Plain, PlainError};
//!
//! #[derive(serde::Serialize)]
//! enum Shape { Circle { r: f64 }, Dot }
//!
//! let value = plain::to_plain(&vec![Shape::Circle { r: 1.5 }, Shape::Dot], &Limits::default())?;
//! assert_eq!(value.to_json(), serde_json::json!([{ "Circle": { "r": 1.5 } }, "Dot"]));
//!
//! let long = "x".repeat(100);
//! let error = plain::to_plain(&[("name", long)], &Limits::default().with_max_string(10));
//! assert_eq!(
//!     error,
//!     Err(PlainError::LimitExceeded { limit: Limit::StringLength, max: 10, path: "$[0][1]".into() })
//! );
//! # Ok::<(), PlainError>(())
//! ```

mod base64;
#[cfg(test)]
mod conversion_tests;
mod de;
mod dismantle;
mod limits;
mod owned;
mod path;
mod ser;

use std::collections::BTreeMap;
use std::fmt;

pub use base64::{base64_decode, base64_encode};
pub use limits::{Limit, Limits, PlainError};
pub use owned::{Foreign, plain_owned};
pub use ser::to_plain;

/// The key of the one-key map that stands for [`Plain::Bytes`] in JSON.
pub const BYTES_KEY: &str = "$bytes";

/// A value made only of library-owned data.
///
/// Equality is by value: [`Plain::Int`] and [`Plain::UInt`] holding the same
/// number are equal (`Int(5) == UInt(5)`), because JSON does not keep which
/// one a number was; a float is never equal to an integer.
#[derive(Debug, Clone)]
pub enum Plain {
    /// `null`: `None`, `()`, a unit struct.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float; always finite in plain data made by this crate (NaN and the
    /// infinities become text). A non-finite one built by hand is written as
    /// that text in JSON.
    Float(f64),
    /// Text (from `str` and `char`, and numbers JSON cannot hold).
    Text(String),
    /// A byte string; `{"$bytes": "<base64>"}` in JSON.
    Bytes(Vec<u8>),
    /// A list (from sequences, tuples, tuple structs).
    List(Vec<Plain>),
    /// A map with text keys, sorted (from maps, structs, variants with data).
    Map(BTreeMap<String, Plain>),
}

impl PartialEq for Plain {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Plain::Null, Plain::Null) => true,
            (Plain::Bool(a), Plain::Bool(b)) => a == b,
            (Plain::Int(a), Plain::Int(b)) => a == b,
            (Plain::UInt(a), Plain::UInt(b)) => a == b,
            (Plain::Int(a), Plain::UInt(b)) | (Plain::UInt(b), Plain::Int(a)) => {
                u64::try_from(*a).is_ok_and(|a| a == *b)
            }
            (Plain::Float(a), Plain::Float(b)) => a == b,
            (Plain::Text(a), Plain::Text(b)) => a == b,
            (Plain::Bytes(a), Plain::Bytes(b)) => a == b,
            (Plain::List(a), Plain::List(b)) => a == b,
            (Plain::Map(a), Plain::Map(b)) => a == b,
            _ => false,
        }
    }
}

impl Plain {
    /// The text that stands for a script engine's function value:
    /// `#Function<name/arity>`.
    ///
    /// ```
    /// use rho::Plain;
    /// assert_eq!(Plain::function("map", 2), Plain::Text("#Function<map/2>".into()));
    /// ```
    pub fn function(name: &str, arity: usize) -> Plain {
        Plain::Text(format!("#Function<{name}/{arity}>"))
    }

    /// The text that stands for a script engine's value that has no plain
    /// form (a handle, a native object): `#Opaque<kind>`.
    ///
    /// ```
    /// use rho::Plain;
    /// assert_eq!(Plain::opaque("Socket"), Plain::Text("#Opaque<Socket>".into()));
    /// ```
    pub fn opaque(kind: &str) -> Plain {
        Plain::Text(format!("#Opaque<{kind}>"))
    }

    /// The value of `key`, if this is a map that has it.
    pub fn get(&self, key: &str) -> Option<&Plain> {
        match self {
            Plain::Map(map) => map.get(key),
            _ => None,
        }
    }

    /// The element at `index`, if this is a list that long.
    pub fn at(&self, index: usize) -> Option<&Plain> {
        match self {
            Plain::List(list) => list.get(index),
            _ => None,
        }
    }

    /// Whether this is [`Plain::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Plain::Null)
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Plain::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The integer, if this is an [`Int`](Plain::Int) or a
    /// [`UInt`](Plain::UInt) that fits in `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Plain::Int(n) => Some(*n),
            Plain::UInt(n) => i64::try_from(*n).ok(),
            _ => None,
        }
    }

    /// The integer, if this is a [`UInt`](Plain::UInt) or a non-negative
    /// [`Int`](Plain::Int).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Plain::UInt(n) => Some(*n),
            Plain::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        }
    }

    /// The number as a float, if this is a number (integers are converted,
    /// possibly rounded).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Plain::Float(x) => Some(*x),
            Plain::Int(n) => Some(*n as f64),
            Plain::UInt(n) => Some(*n as f64),
            _ => None,
        }
    }

    /// The text, if this is [`Plain::Text`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Plain::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The bytes, if this is [`Plain::Bytes`].
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Plain::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The elements, if this is a list.
    pub fn as_list(&self) -> Option<&[Plain]> {
        match self {
            Plain::List(list) => Some(list),
            _ => None,
        }
    }

    /// The entries, if this is a map.
    pub fn as_map(&self) -> Option<&BTreeMap<String, Plain>> {
        match self {
            Plain::Map(map) => Some(map),
            _ => None,
        }
    }

    /// A short name of the variant: `null`, `bool`, `integer` (both integer
    /// variants), `float`, `text`, `bytes`, `list`, `map`.
    pub fn kind(&self) -> &'static str {
        match self {
            Plain::Null => "null",
            Plain::Bool(_) => "bool",
            Plain::Int(_) | Plain::UInt(_) => "integer",
            Plain::Float(_) => "float",
            Plain::Text(_) => "text",
            Plain::Bytes(_) => "bytes",
            Plain::List(_) => "list",
            Plain::Map(_) => "map",
        }
    }

    /// How deeply containers nest: 0 for a scalar, 1 for a list or map of
    /// scalars (or an empty one), and so on. Bounded by
    /// [`Limits::max_depth`] in what [`to_plain`] makes.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        self.walk(|value, depth| {
            if matches!(value, Plain::List(_) | Plain::Map(_)) {
                deepest = deepest.max(depth + 1);
            }
        });
        deepest
    }

    /// The number of values, containers included (map keys are not values).
    /// Bounded by [`Limits::max_elements`] in what [`to_plain`] makes.
    pub fn count(&self) -> usize {
        let mut count = 0;
        self.walk(|_, _| count += 1);
        count
    }

    /// The approximate size in bytes, as [`Limits::max_bytes`] counts it:
    /// [`Limits::VALUE_COST`] per value plus the length of each text, byte
    /// string and map key.
    pub fn size(&self) -> usize {
        let mut size: usize = 0;
        self.walk(|value, _| {
            let own = match value {
                Plain::Text(text) => text.len(),
                Plain::Bytes(bytes) => bytes.len(),
                Plain::Map(map) => map.keys().map(String::len).sum(),
                _ => 0,
            };
            size = size.saturating_add(Limits::VALUE_COST + own);
        });
        size
    }

    /// Calls `visit` with every value and its depth (the number of
    /// containers around it), without recursion.
    fn walk(&self, mut visit: impl FnMut(&Plain, usize)) {
        let mut stack = vec![(self, 0_usize)];
        while let Some((value, depth)) = stack.pop() {
            visit(value, depth);
            match value {
                Plain::List(list) => stack.extend(list.iter().map(|v| (v, depth + 1))),
                Plain::Map(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
                _ => {}
            }
        }
    }

    /// This value as a `serde_json::Value`; [`Plain::Bytes`] becomes
    /// `{"$bytes": "<base64>"}`, a non-finite float (only when built by hand)
    /// the text [`to_plain`] would have made of it.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Plain::Null => Value::Null,
            Plain::Bool(b) => Value::Bool(*b),
            Plain::Int(n) => Value::from(*n),
            Plain::UInt(n) => Value::from(*n),
            Plain::Float(x) => match serde_json::Number::from_f64(*x) {
                Some(number) => Value::Number(number),
                None => Value::String(non_finite_text(*x).to_owned()),
            },
            Plain::Text(text) => Value::String(text.clone()),
            Plain::Bytes(bytes) => {
                let mut map = serde_json::Map::new();
                map.insert(BYTES_KEY.to_owned(), Value::String(base64_encode(bytes)));
                Value::Object(map)
            }
            Plain::List(list) => Value::Array(list.iter().map(Plain::to_json).collect()),
            Plain::Map(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| (key.clone(), value.to_json()))
                    .collect(),
            ),
        }
    }

    /// A map, or [`Plain::Bytes`] when the map is the JSON form of bytes
    /// (one key `$bytes` holding canonical base64 text).
    pub(crate) fn from_map(map: BTreeMap<String, Plain>) -> Plain {
        if map.len() == 1 {
            if let Some(Plain::Text(text)) = map.get(BYTES_KEY) {
                if let Some(bytes) = base64_decode(text) {
                    return Plain::Bytes(bytes);
                }
            }
        }
        Plain::Map(map)
    }

    /// A float as plain data: itself when finite, else its text.
    pub(crate) fn from_f64(x: f64) -> Plain {
        if x.is_finite() {
            Plain::Float(x)
        } else {
            Plain::Text(non_finite_text(x).to_owned())
        }
    }
}

/// `NaN`, `inf` or `-inf` (for a finite `x`, `NaN` too, never used).
pub(crate) fn non_finite_text(x: f64) -> &'static str {
    if x == f64::INFINITY {
        "inf"
    } else if x == f64::NEG_INFINITY {
        "-inf"
    } else {
        "NaN"
    }
}

/// Converts JSON data (trusted: serde_json's own types). Numbers become
/// `UInt`, `Int` or `Float`, in that order of preference; a one-key
/// `{"$bytes": ...}` map with canonical base64 becomes [`Plain::Bytes`].
impl From<serde_json::Value> for Plain {
    fn from(value: serde_json::Value) -> Self {
        use serde_json::Value;
        match value {
            Value::Null => Plain::Null,
            Value::Bool(b) => Plain::Bool(b),
            Value::Number(number) => {
                if let Some(n) = number.as_u64() {
                    Plain::UInt(n)
                } else if let Some(n) = number.as_i64() {
                    Plain::Int(n)
                } else {
                    match number.as_f64() {
                        Some(x) if x.is_finite() => Plain::Float(x),
                        _ => Plain::Text(number.to_string()),
                    }
                }
            }
            Value::String(text) => Plain::Text(text),
            Value::Array(list) => Plain::List(list.into_iter().map(Plain::from).collect()),
            Value::Object(map) => Plain::from_map(
                map.into_iter()
                    .map(|(key, value)| (key, Plain::from(value)))
                    .collect(),
            ),
        }
    }
}

impl From<bool> for Plain {
    fn from(b: bool) -> Self {
        Plain::Bool(b)
    }
}

impl From<i64> for Plain {
    fn from(n: i64) -> Self {
        Plain::Int(n)
    }
}

impl From<u64> for Plain {
    fn from(n: u64) -> Self {
        Plain::UInt(n)
    }
}

/// A finite float stays one; NaN and the infinities become text, as in
/// [`to_plain`].
impl From<f64> for Plain {
    fn from(x: f64) -> Self {
        Plain::from_f64(x)
    }
}

impl From<String> for Plain {
    fn from(text: String) -> Self {
        Plain::Text(text)
    }
}

impl From<&str> for Plain {
    fn from(text: &str) -> Self {
        Plain::Text(text.to_owned())
    }
}

impl From<Vec<Plain>> for Plain {
    fn from(list: Vec<Plain>) -> Self {
        Plain::List(list)
    }
}

impl From<BTreeMap<String, Plain>> for Plain {
    fn from(map: BTreeMap<String, Plain>) -> Self {
        Plain::Map(map)
    }
}

/// Compact JSON, as [`Plain::to_json`] gives it.
impl fmt::Display for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(entries: &[(&str, Plain)]) -> Plain {
        Plain::Map(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn accessors() {
        let value = map(&[
            ("a", Plain::List(vec![Plain::Int(-1), Plain::UInt(2)])),
            ("b", Plain::Null),
            ("c", Plain::Text("x".into())),
        ]);
        assert_eq!(value.get("c").and_then(Plain::as_str), Some("x"));
        assert_eq!(value.get("zz"), None);
        assert!(value.get("b").is_some_and(Plain::is_null));
        let list = value.get("a").expect("a is there");
        assert_eq!(list.at(0).and_then(Plain::as_i64), Some(-1));
        assert_eq!(list.at(0).and_then(Plain::as_u64), None);
        assert_eq!(list.at(1).and_then(Plain::as_i64), Some(2));
        assert_eq!(list.at(1).and_then(Plain::as_f64), Some(2.0));
        assert_eq!(list.at(2), None);
        assert_eq!(Plain::UInt(u64::MAX).as_i64(), None);
        assert_eq!(Plain::Bool(true).as_bool(), Some(true));
        assert_eq!(Plain::Bytes(vec![1]).as_bytes(), Some(&[1_u8][..]));
        assert_eq!(list.as_list().map(<[Plain]>::len), Some(2));
        assert_eq!(value.as_map().map(BTreeMap::len), Some(3));
        assert_eq!(Plain::UInt(1).kind(), Plain::Int(1).kind());
        assert_eq!(Plain::Float(1.0).kind(), "float");
    }

    #[test]
    fn integers_are_equal_by_value_but_never_equal_to_floats() {
        assert_eq!(Plain::Int(5), Plain::UInt(5));
        assert_eq!(Plain::UInt(5), Plain::Int(5));
        assert_ne!(Plain::Int(-1), Plain::UInt(u64::MAX));
        assert_ne!(Plain::Int(5), Plain::Float(5.0));
        assert_ne!(Plain::Null, Plain::Bool(false));
        assert_eq!(
            Plain::List(vec![Plain::Int(1)]),
            Plain::List(vec![Plain::UInt(1)])
        );
    }

    #[test]
    fn function_and_opaque_texts() {
        assert_eq!(Plain::function("f", 0).as_str(), Some("#Function<f/0>"));
        assert_eq!(Plain::opaque("Env").as_str(), Some("#Opaque<Env>"));
    }

    #[test]
    fn measures() {
        assert_eq!(Plain::Null.depth(), 0);
        assert_eq!(Plain::List(vec![]).depth(), 1);
        let value = map(&[
            ("ab", Plain::List(vec![Plain::List(vec![]), Plain::Int(1)])),
            ("c", Plain::Text("xyz".into())),
        ]);
        assert_eq!(value.depth(), 3);
        assert_eq!(value.count(), 5);
        assert_eq!(value.size(), 5 * Limits::VALUE_COST + 2 + 1 + 3);
    }

    #[test]
    fn json_conversion_both_ways() {
        let value = map(&[
            ("n", Plain::Int(-3)),
            ("u", Plain::UInt(u64::MAX)),
            ("f", Plain::Float(0.5)),
            ("b", Plain::Bytes(b"hi".to_vec())),
            (
                "l",
                Plain::List(vec![
                    Plain::Null,
                    Plain::Bool(true),
                    Plain::Text("t".into()),
                ]),
            ),
        ]);
        let expected = json!({
            "n": -3, "u": u64::MAX, "f": 0.5, "b": {"$bytes": "aGk="},
            "l": [null, true, "t"],
        });
        assert_eq!(value.to_json(), expected);
        assert_eq!(Plain::from(expected), value);
        assert_eq!(
            Plain::Float(f64::NAN).to_json(),
            json!("NaN"),
            "a hand-built NaN is written as text"
        );
        assert_eq!(Plain::Float(f64::NEG_INFINITY).to_json(), json!("-inf"));
        assert_eq!(value.to_string(), expected_compact());
    }

    fn expected_compact() -> String {
        r#"{"b":{"$bytes":"aGk="},"f":0.5,"l":[null,true,"t"],"n":-3,"u":18446744073709551615}"#
            .to_owned()
    }

    #[test]
    fn only_a_canonical_one_key_bytes_map_reads_as_bytes() {
        assert_eq!(Plain::from(json!({"$bytes": ""})), Plain::Bytes(Vec::new()));
        for not_bytes in [
            json!({"$bytes": "aGk"}),
            json!({"$bytes": "aGk=", "x": 1}),
            json!({"$bytes": 1}),
            json!({"bytes": "aGk="}),
        ] {
            assert!(
                matches!(Plain::from(not_bytes.clone()), Plain::Map(_)),
                "{not_bytes}"
            );
        }
    }

    #[test]
    fn from_scalars() {
        assert_eq!(Plain::from(f64::INFINITY), Plain::Text("inf".into()));
        assert_eq!(Plain::from(1.5), Plain::Float(1.5));
        assert_eq!(Plain::from("a"), Plain::Text("a".into()));
        assert_eq!(Plain::from(String::from("a")), Plain::Text("a".into()));
        assert_eq!(Plain::from(true), Plain::Bool(true));
        assert_eq!(Plain::from(-1_i64), Plain::Int(-1));
        assert_eq!(Plain::from(1_u64), Plain::UInt(1));
        assert_eq!(
            Plain::from(vec![Plain::Null]),
            Plain::List(vec![Plain::Null])
        );
        assert_eq!(Plain::from(BTreeMap::new()), Plain::Map(BTreeMap::new()));
    }
}
