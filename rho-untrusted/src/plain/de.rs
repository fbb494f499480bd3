//! `Serialize` and `Deserialize` for [`Plain`]: the natural JSON form, with
//! bytes as `{"$bytes": "<base64>"}`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{BYTES_KEY, Plain, base64_encode, non_finite_text};

impl Plain {
    /// Lists and maps nest at most this deep when read by [`Plain`]'s
    /// `Deserialize`, whatever the format; serde_json refuses deeper JSON itself
    /// (its recursion limit is 128 too), formats without such a limit are
    /// stopped here before the stack is exhausted.
    pub const MAX_DESERIALIZE_DEPTH: usize = 128;
}

/// Writes the natural form; [`Plain::Bytes`] as `{"$bytes": "<base64>"}` in
/// human-readable formats (JSON) and as native bytes in the others. A
/// non-finite [`Plain::Float`] (only when built by hand) is written as the text
/// that [`to_plain`](super::to_plain) would have made of it.
impl Serialize for Plain {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Plain::Null => serializer.serialize_unit(),
            Plain::Bool(b) => serializer.serialize_bool(*b),
            Plain::Int(n) => serializer.serialize_i64(*n),
            Plain::UInt(n) => serializer.serialize_u64(*n),
            Plain::Float(x) if x.is_finite() => serializer.serialize_f64(*x),
            Plain::Float(x) => serializer.serialize_str(non_finite_text(*x)),
            Plain::Text(text) => serializer.serialize_str(text),
            Plain::Bytes(bytes) if serializer.is_human_readable() => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(BYTES_KEY, &base64_encode(bytes))?;
                map.end()
            }
            Plain::Bytes(bytes) => serializer.serialize_bytes(bytes),
            Plain::List(list) => {
                let mut seq = serializer.serialize_seq(Some(list.len()))?;
                for value in list {
                    seq.serialize_element(value)?;
                }
                seq.end()
            }
            Plain::Map(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    out.serialize_entry(key, value)?;
                }
                out.end()
            }
        }
    }
}

/// Reads any self-describing format (JSON above all). A one-key map
/// `{"$bytes": "<canonical base64>"}` reads as [`Plain::Bytes`] (see the
/// module documentation for the ambiguity); native bytes read as bytes;
/// integers that do not fit 64 bits, and non-finite floats, read as text, as
/// [`to_plain`](super::to_plain) would make them. Map keys may be text,
/// integers or booleans (written out as text). Lists and maps nested deeper
/// than [`Plain::MAX_DESERIALIZE_DEPTH`] are refused.
impl<'de> Deserialize<'de> for Plain {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        PlainSeed { depth: 0 }.deserialize(deserializer)
    }
}

/// Reads one value nested `depth` levels deep.
#[derive(Debug, Clone, Copy)]
struct PlainSeed {
    depth: usize,
}

impl PlainSeed {
    fn deeper<E: de::Error>(self) -> Result<PlainSeed, E> {
        if self.depth >= Plain::MAX_DESERIALIZE_DEPTH {
            return Err(E::custom(format_args!(
                "plain data nested deeper than {} levels",
                Plain::MAX_DESERIALIZE_DEPTH
            )));
        }
        Ok(PlainSeed {
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for PlainSeed {
    type Value = Plain;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Plain, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PlainSeed {
    type Value = Plain;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("plain data (null, a boolean, a number, text, bytes, a list or a map)")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Plain, E> {
        Ok(Plain::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Plain, E> {
        Ok(Plain::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Plain, E> {
        Ok(Plain::UInt(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Plain, E> {
        Ok(match i64::try_from(v) {
            Ok(v) => Plain::Int(v),
            Err(_) => Plain::Text(v.to_string()),
        })
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Plain, E> {
        Ok(match u64::try_from(v) {
            Ok(v) => Plain::UInt(v),
            Err(_) => Plain::Text(v.to_string()),
        })
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Plain, E> {
        Ok(Plain::from_f64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Plain, E> {
        Ok(Plain::Text(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Plain, E> {
        Ok(Plain::Text(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Plain, E> {
        Ok(Plain::Bytes(v.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Plain, E> {
        Ok(Plain::Bytes(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Plain, E> {
        Ok(Plain::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Plain, E> {
        Ok(Plain::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Plain, D::Error> {
        self.deeper()?.deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Plain, D::Error> {
        self.deeper()?.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Plain, A::Error> {
        let inner = self.deeper()?;
        // The size hint is not trusted: nothing is allocated for it.
        let mut list = Vec::new();
        while let Some(value) = seq.next_element_seed(inner)? {
            list.push(value);
        }
        Ok(Plain::List(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Plain, A::Error> {
        let inner = self.deeper()?;
        let mut map = BTreeMap::new();
        while let Some(key) = access.next_key_seed(KeySeed)? {
            let value = access.next_value_seed(inner)?;
            map.insert(key, value);
        }
        Ok(Plain::from_map(map))
    }
}

/// Reads a map key as text.
#[derive(Debug, Clone, Copy)]
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key that is text, an integer or a boolean")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(json: &str) -> Plain {
        serde_json::from_str(json).expect("valid plain JSON")
    }

    #[test]
    fn json_form_is_the_natural_one_with_bytes_as_a_map() {
        let value = Plain::Map(BTreeMap::from([
            ("b".to_owned(), Plain::Bytes(b"foob".to_vec())),
            (
                "l".to_owned(),
                Plain::List(vec![
                    Plain::Null,
                    Plain::Bool(false),
                    Plain::Int(-1),
                    Plain::UInt(7),
                    Plain::Float(2.5),
                    Plain::Text("t".into()),
                ]),
            ),
        ]));
        let text = serde_json::to_string(&value).expect("plain data always serializes");
        assert_eq!(
            text,
            r#"{"b":{"$bytes":"Zm9vYg=="},"l":[null,false,-1,7,2.5,"t"]}"#
        );
        assert_eq!(read(&text), value);
        assert_eq!(serde_json::to_value(&value).ok(), Some(value.to_json()));
    }

    #[test]
    fn a_canonical_one_key_bytes_map_reads_back_as_bytes() {
        assert_eq!(read(r#"{"$bytes":"aGk="}"#), Plain::Bytes(b"hi".to_vec()));
        // Anything else stays a map.
        for text in [
            r#"{"$bytes":"aGk"}"#,
            r#"{"$bytes":"aGk=","x":1}"#,
            r#"{"$bytes":["aGk="]}"#,
        ] {
            assert!(matches!(read(text), Plain::Map(_)), "{text}");
        }
    }

    #[test]
    fn non_finite_floats_built_by_hand_are_written_as_text() {
        let text = serde_json::to_string(&Plain::Float(f64::INFINITY)).expect("serializes");
        assert_eq!(text, r#""inf""#);
        assert_eq!(read(&text), Plain::Text("inf".into()));
    }

    #[test]
    fn numbers_read_as_json_gives_them() {
        assert_eq!(read("-5"), Plain::Int(-5));
        assert_eq!(read("18446744073709551615"), Plain::UInt(u64::MAX));
        // serde_json reads integers beyond 64 bits as floats.
        assert_eq!(read("123456789012345678901234567890").kind(), "float");
        assert_eq!(read("1.0"), Plain::Float(1.0));
    }

    #[test]
    fn deep_input_is_refused_without_exhausting_the_stack() {
        // serde_json's own limit (128) stops JSON text.
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(serde_json::from_str::<Plain>(&deep).is_err());
        // Our own limit stops a deserializer that has none: a
        // `serde_json::Value` built by hand.
        let mut value = json!(null);
        for _ in 0..(Plain::MAX_DESERIALIZE_DEPTH + 1) {
            value = json!([value]);
        }
        let error = Plain::deserialize(value).expect_err("too deep");
        assert!(error.to_string().contains("deeper than 128"), "{error}");
        let mut value = json!(null);
        for _ in 0..Plain::MAX_DESERIALIZE_DEPTH {
            value = json!({ "k": value });
        }
        assert_eq!(
            Plain::deserialize(value).map(|p| p.depth()).ok(),
            Some(Plain::MAX_DESERIALIZE_DEPTH)
        );
    }

    #[test]
    fn integer_and_boolean_keys_read_as_text() {
        use serde::de::value::{Error, MapDeserializer};
        let entries: MapDeserializer<'_, _, Error> =
            MapDeserializer::new(vec![(1_u32, "a"), (2_u32, "b")].into_iter());
        let value = Plain::deserialize(entries).expect("integer keys are read");
        assert_eq!(value.get("2"), Some(&Plain::Text("b".into())));
    }
}
