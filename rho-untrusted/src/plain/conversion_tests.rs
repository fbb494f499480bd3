//! Unit tests of the conversion: every mapping rule, every limit (with the
//! exact path), hostile `Serialize`, `Drop` and `Display` impls.

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

#[test]
fn scalars() {
    assert_eq!(plain(&true), Plain::Bool(true));
    assert_eq!(plain(&-8_i8), Plain::Int(-8));
    assert_eq!(plain(&-16_i16), Plain::Int(-16));
    assert_eq!(plain(&-32_i32), Plain::Int(-32));
    assert_eq!(plain(&i64::MIN), Plain::Int(i64::MIN));
    assert_eq!(plain(&8_u8), Plain::UInt(8));
    assert_eq!(plain(&16_u16), Plain::UInt(16));
    assert_eq!(plain(&32_u32), Plain::UInt(32));
    assert_eq!(plain(&u64::MAX), Plain::UInt(u64::MAX));
    assert!(matches!(plain(&-3_i32), Plain::Int(-3)), "signed stays Int");
    assert!(
        matches!(plain(&3_u32), Plain::UInt(3)),
        "unsigned stays UInt"
    );
}

#[test]
fn big_integers_fit_or_become_decimal_text() {
    assert!(matches!(plain(&-5_i128), Plain::Int(-5)));
    assert!(matches!(plain(&i128::from(i64::MIN)), Plain::Int(i64::MIN)));
    assert_eq!(
        plain(&(i128::from(i64::MIN) - 1)),
        text("-9223372036854775809")
    );
    assert_eq!(
        plain(&i128::MIN),
        text("-170141183460469231731687303715884105728")
    );
    assert!(matches!(plain(&5_u128), Plain::UInt(5)));
    assert_eq!(
        plain(&(u128::from(u64::MAX) + 1)),
        text("18446744073709551616")
    );
    assert_eq!(
        plain(&u128::MAX),
        text("340282366920938463463374607431768211455")
    );
}

#[test]
fn floats_finite_stay_floats_and_others_become_text() {
    assert_eq!(plain(&1.5_f64), Plain::Float(1.5));
    assert_eq!(plain(&0.5_f32), Plain::Float(0.5));
    assert_eq!(plain(&f64::MAX), Plain::Float(f64::MAX));
    assert_eq!(plain(&f64::NAN), text("NaN"));
    assert_eq!(plain(&f32::NAN), text("NaN"));
    assert_eq!(plain(&f64::INFINITY), text("inf"));
    assert_eq!(plain(&f32::NEG_INFINITY), text("-inf"));
}

#[test]
fn text_bytes_and_nothing() {
    assert_eq!(plain(&'é'), text("é"));
    assert_eq!(plain("hi"), text("hi"));
    assert_eq!(plain(&String::from("hi")), text("hi"));
    assert_eq!(plain(&Bytes(&[0, 255])), Plain::Bytes(vec![0, 255]));
    assert_eq!(plain(&None::<u8>), Plain::Null);
    assert_eq!(plain(&()), Plain::Null);
    assert_eq!(plain(&Unit), Plain::Null);
    assert_eq!(plain(&Some(3_u8)), Plain::UInt(3));
    assert_eq!(plain(&Some(Some(()))), Plain::Null);
    assert_eq!(plain(&Newtype(4)), Plain::UInt(4));
}

#[test]
fn sequences_become_lists() {
    assert_eq!(plain(&vec![1_u8, 2]), plain(&[1_u8, 2]));
    assert_eq!(
        plain(&(1_u8, "a", false)),
        Plain::List(vec![Plain::UInt(1), text("a"), Plain::Bool(false)])
    );
    assert_eq!(
        plain(&TupleStruct(1, true)),
        Plain::List(vec![Plain::UInt(1), Plain::Bool(true)])
    );
    assert_eq!(plain::<[u8]>(&[]), Plain::List(vec![]));
}

#[test]
fn variants_become_their_name_or_a_one_key_map() {
    assert_eq!(plain(&Shape::Dot), text("Dot"));
    assert_eq!(
        plain(&Shape::Circle(2.0)),
        map(vec![("Circle", Plain::Float(2.0))])
    );
    assert_eq!(
        plain(&Shape::Line(1, -1)),
        map(vec![(
            "Line",
            Plain::List(vec![Plain::Int(1), Plain::Int(-1)])
        )])
    );
    assert_eq!(
        plain(&Shape::Rect { w: 1, h: 2 }),
        map(vec![(
            "Rect",
            map(vec![("w", Plain::UInt(1)), ("h", Plain::UInt(2))])
        )])
    );
}

#[test]
fn structs_and_maps_become_maps() {
    let record = Record {
        name: "child",
        tags: vec!["a"],
        parent: Some(Box::new(Record {
            name: "root",
            tags: vec![],
            parent: None,
        })),
    };
    assert_eq!(
        plain(&record),
        map(vec![
            ("name", text("child")),
            ("tags", Plain::List(vec![text("a")])),
            (
                "parent",
                map(vec![
                    ("name", text("root")),
                    ("tags", Plain::List(vec![])),
                    ("parent", Plain::Null),
                ])
            ),
        ])
    );
    let mut scores = BTreeMap::new();
    scores.insert("x", 1_u8);
    assert_eq!(plain(&scores), map(vec![("x", Plain::UInt(1))]));
}

#[test]
fn scalar_keys_become_text() {
    assert_eq!(
        plain(&BTreeMap::from([(-1_i32, 'a'), (2, 'b')])),
        map(vec![("-1", text("a")), ("2", text("b"))])
    );
    assert_eq!(
        plain(&Entries(vec![(true, 1_u8), (false, 0)])),
        map(vec![("true", Plain::UInt(1)), ("false", Plain::UInt(0))])
    );
    assert_eq!(
        plain(&Entries(vec![('k', 1_u8)])),
        map(vec![("k", Plain::UInt(1))])
    );
    assert_eq!(
        plain(&Entries(vec![(1.0_f64, 1_u8), (f64::NAN, 2), (-0.5, 3)])),
        map(vec![
            ("1.0", Plain::UInt(1)),
            ("NaN", Plain::UInt(2)),
            ("-0.5", Plain::UInt(3))
        ])
    );
    assert_eq!(
        plain(&Entries(vec![(0.1_f32, 1_u8), (f32::INFINITY, 2)])),
        map(vec![("0.1", Plain::UInt(1)), ("inf", Plain::UInt(2))])
    );
    assert_eq!(
        plain(&Entries(vec![(u128::MAX, 1_u8), (5_u128, 2)])),
        map(vec![
            ("340282366920938463463374607431768211455", Plain::UInt(1)),
            ("5", Plain::UInt(2))
        ])
    );
    assert_eq!(
        plain(&BTreeMap::from([(Color::Red, 1_u8)])),
        map(vec![("Red", Plain::UInt(1))])
    );
    assert_eq!(
        plain(&Entries(vec![(Newtype(7), 1_u8)])),
        map(vec![("7", Plain::UInt(1))])
    );
    assert_eq!(
        plain(&Entries(vec![(Some("s"), 1_u8)])),
        map(vec![("s", Plain::UInt(1))])
    );
}

#[test]
fn other_keys_are_refused_with_the_path_of_the_map() {
    #[derive(Serialize)]
    struct Grid {
        cells: Entries<(i32, i32), u8>,
    }
    let grid = Grid {
        cells: Entries(vec![((0, 0), 1)]),
    };
    assert_eq!(
        to_plain(&grid, &Limits::default()),
        Err(PlainError::Unsupported {
            what: "a map key that is a tuple".into(),
            path: "$.cells".into()
        })
    );
    let limits = Limits::default();
    let what = |result: Result<Plain, PlainError>| match result {
        Err(PlainError::Unsupported { what, path }) => {
            assert_eq!(path, "$");
            what
        }
        other => panic!("expected Unsupported, got {other:?}"),
    };
    assert_eq!(
        what(to_plain(&Entries(vec![(vec![1_u8], 1_u8)]), &limits)),
        "a map key that is a list"
    );
    assert_eq!(
        what(to_plain(
            &Entries(vec![(BTreeMap::from([(1_u8, 1_u8)]), 1_u8)]),
            &limits
        )),
        "a map key that is a map"
    );
    assert_eq!(
        what(to_plain(&Entries(vec![(Bytes(b"k"), 1_u8)]), &limits)),
        "a map key that is bytes"
    );
    assert_eq!(
        what(to_plain(&Entries(vec![(None::<u8>, 1_u8)]), &limits)),
        "a map key that is None"
    );
    assert_eq!(
        what(to_plain(&Entries(vec![((), 1_u8)]), &limits)),
        "a map key that is ()"
    );
    assert_eq!(
        what(to_plain(
            &Entries(vec![(Shape::Circle(1.0), 1_u8)]),
            &limits
        )),
        "a map key that is the enum variant Circle with data"
    );
    assert_eq!(
        what(to_plain(
            &Entries(vec![(Shape::Rect { w: 1, h: 1 }, 1_u8)]),
            &limits
        )),
        "a map key that is the enum variant Rect with data"
    );
}

#[test]
fn duplicate_keys_keep_the_last_value() {
    assert_eq!(
        plain(&Entries(vec![("k", 1_u8), ("k", 2)])),
        map(vec![("k", Plain::UInt(2))])
    );
    // Different keys that write out the same.
    assert_eq!(
        plain(&Entries(vec![
            (Plain::Int(1), 1_u8),
            (Plain::Text("1".into()), 2)
        ])),
        map(vec![("1", Plain::UInt(2))])
    );
}

#[test]
fn plain_data_converts_to_itself() {
    let value = map(vec![
        ("bytes", Plain::Bytes(b"\x00\x01".to_vec())),
        ("empty", Plain::Bytes(Vec::new())),
        ("n", Plain::Int(-1)),
        ("u", Plain::UInt(1)),
        ("f", Plain::Float(0.25)),
        ("l", Plain::List(vec![Plain::Null, Plain::Bool(true)])),
    ]);
    assert_eq!(plain(&value), value);
    assert_eq!(
        plain(&value).get("bytes"),
        Some(&Plain::Bytes(vec![0, 1])),
        "bytes written as the $bytes map are read back as bytes"
    );
}

#[test]
fn a_one_key_bytes_map_with_canonical_base64_becomes_bytes() {
    assert_eq!(
        plain(&BTreeMap::from([("$bytes", "aGk=")])),
        Plain::Bytes(b"hi".to_vec())
    );
    #[derive(Serialize)]
    struct Tricky {
        #[serde(rename = "$bytes")]
        b: &'static str,
    }
    assert_eq!(plain(&Tricky { b: "" }), Plain::Bytes(Vec::new()));
    assert_eq!(
        plain(&BTreeMap::from([("$bytes", "aGk")])),
        map(vec![("$bytes", text("aGk"))])
    );
}

/// Nests `0` lists, counting instead of holding a real nested structure, so
/// the test's own value costs no stack to build or drop.
struct Nest(usize);

impl Serialize for Nest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 == 0 {
            return s.serialize_unit();
        }
        let mut seq = s.serialize_seq(Some(1))?;
        seq.serialize_element(&Nest(self.0 - 1))?;
        seq.end()
    }
}

/// Wraps a unit in `0` newtype structs or `Some`s (alternately).
struct Wrap(usize);

impl Serialize for Wrap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            0 => s.serialize_unit(),
            n if n % 2 == 0 => s.serialize_newtype_struct("Wrap", &Wrap(n - 1)),
            n => s.serialize_some(&Wrap(n - 1)),
        }
    }
}

#[test]
fn depth_is_refused_at_the_level_that_exceeds_it() {
    let limits = Limits::default().with_max_depth(3);
    assert_eq!(
        to_plain(&Nest(3), &limits).map(|p| p.depth()),
        Ok(3),
        "exactly the limit is fine"
    );
    assert_eq!(
        to_plain(&Nest(4), &limits),
        limit_error(Limit::Depth, 3, "$[0][0][0]")
    );
    let limits = Limits::default().with_max_depth(0);
    assert_eq!(to_plain(&1_u8, &limits), Ok(Plain::UInt(1)));
    assert_eq!(
        to_plain(&Vec::<u8>::new(), &limits),
        limit_error(Limit::Depth, 0, "$")
    );
}

#[test]
fn variants_with_data_count_the_levels_they_make() {
    #[derive(Serialize)]
    struct Holder {
        shape: Shape,
    }
    let limits = Limits::default().with_max_depth(2);
    // Map { shape: Map { Circle: 1.0 } }: depth 2.
    assert!(
        to_plain(
            &Holder {
                shape: Shape::Circle(1.0)
            },
            &limits
        )
        .is_ok()
    );
    // Map { shape: Map { Line: List [..] } }: depth 3.
    assert_eq!(
        to_plain(
            &Holder {
                shape: Shape::Line(1, 2)
            },
            &limits
        ),
        limit_error(Limit::Depth, 2, "$.shape")
    );
    assert_eq!(
        to_plain(
            &Holder {
                shape: Shape::Rect { w: 1, h: 1 }
            },
            &limits
        ),
        limit_error(Limit::Depth, 2, "$.shape")
    );
}

#[test]
fn wrappers_count_as_levels_so_a_chain_of_them_is_bounded_too() {
    let limits = Limits::default().with_max_depth(4);
    assert_eq!(to_plain(&Wrap(4), &limits), Ok(Plain::Null));
    assert_eq!(
        to_plain(&Wrap(5), &limits),
        limit_error(Limit::Depth, 4, "$")
    );
    assert_eq!(
        to_plain(&Wrap(1_000_000), &Limits::default()),
        limit_error(Limit::Depth, 64, "$")
    );
    // Keys too.
    assert_eq!(
        to_plain(&Entries(vec![(Wrap(9), 1_u8)]), &limits),
        limit_error(Limit::Depth, 4, "$")
    );
}

#[test]
fn a_million_levels_deep_value_is_refused_without_exhausting_the_stack() {
    let expected_path = format!("${}", "[0]".repeat(64));
    assert_eq!(
        to_plain(&Nest(1_000_000), &Limits::default()),
        limit_error(Limit::Depth, 64, &expected_path)
    );
}

#[test]
fn element_count_is_refused_where_it_crosses_the_limit() {
    let limits = Limits::default().with_max_elements(3);
    assert_eq!(to_plain(&[1_u8, 2], &limits).map(|p| p.count()), Ok(3));
    assert_eq!(
        to_plain(&[1_u8, 2, 3], &limits),
        limit_error(Limit::Elements, 3, "$[2]")
    );
    // Struct fields and map keys: the value under the key is counted.
    #[derive(Serialize)]
    struct Two {
        a: u8,
        b: Vec<u8>,
    }
    assert_eq!(
        to_plain(
            &Two { a: 1, b: vec![] },
            &limits.clone().with_max_elements(2)
        ),
        limit_error(Limit::Elements, 2, "$.b")
    );
}

/// A sequence of `0` zeros, produced one at a time.
struct Many(usize);

impl Serialize for Many {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(std::iter::repeat_n(0_u8, self.0))
    }
}

#[test]
fn a_huge_sequence_is_refused_before_it_is_all_made() {
    // The root counts as one value, so element 999,999 is value 1,000,001.
    assert_eq!(
        to_plain(&Many(usize::MAX), &Limits::default()),
        limit_error(Limit::Elements, 1_000_000, "$[999999]")
    );
}

#[test]
fn total_size_is_refused_where_it_crosses_the_limit() {
    // Root list: 8; each "abcd": 8 + 4.
    let limits = Limits::default().with_max_bytes(8 + 2 * 12);
    assert_eq!(
        to_plain(&["abcd", "abcd"], &limits).map(|p| p.size()),
        Ok(8 + 2 * 12)
    );
    assert_eq!(
        to_plain(&["abcd", "abcd", ""], &limits),
        limit_error(Limit::Bytes, 32, "$[2]")
    );
    // Keys are counted where they are met: the map's path.
    let limits = Limits::default().with_max_bytes(8 + 3);
    assert_eq!(
        to_plain(&BTreeMap::from([("long", 1_u8)]), &limits),
        limit_error(Limit::Bytes, 11, "$")
    );
    // 16 strings of 1 MiB pass 16 MiB with their per-value cost.
    let mib = "x".repeat(1 << 20);
    let strings = vec![mib.as_str(); 16];
    assert_eq!(
        to_plain(&strings, &Limits::default()),
        limit_error(Limit::Bytes, 16 << 20, "$[15]")
    );
}

#[test]
fn string_length_is_refused_before_the_string_is_copied() {
    let limits = Limits::default().with_max_string(3);
    assert_eq!(to_plain("abc", &limits), Ok(text("abc")));
    assert_eq!(
        to_plain("abcd", &limits),
        limit_error(Limit::StringLength, 3, "$")
    );
    assert_eq!(
        to_plain(&Bytes(b"abcd"), &limits),
        limit_error(Limit::StringLength, 3, "$")
    );
    assert_eq!(
        to_plain(
            &BTreeMap::from([("a b", BTreeMap::from([("c", "long")]))]),
            &limits
        ),
        limit_error(Limit::StringLength, 3, "$[\"a b\"].c")
    );
    assert_eq!(
        to_plain(&BTreeMap::from([("long", 1_u8)]), &limits),
        limit_error(Limit::StringLength, 3, "$")
    );
    // A variant's name is a string too.
    assert_eq!(
        to_plain(&Shape::Circle(1.0), &limits),
        limit_error(Limit::StringLength, 3, "$")
    );
    assert_eq!(
        to_plain(&u128::MAX, &limits),
        limit_error(Limit::StringLength, 3, "$")
    );
}

#[test]
fn a_100_mib_string_is_refused() {
    #[derive(Serialize)]
    struct Answer<'a> {
        body: &'a str,
    }
    let big = "y".repeat(100 << 20);
    assert_eq!(
        to_plain(&Answer { body: &big }, &Limits::default()),
        limit_error(Limit::StringLength, 4 << 20, "$.body")
    );
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

/// Serializes with `collect_str`.
struct Collected<D>(D);

impl<D: fmt::Display> Serialize for Collected<D> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

#[test]
fn collected_strings_are_written_only_up_to_the_limit() {
    let limits = Limits::default().with_max_string(20);
    assert_eq!(to_plain(&Collected(42), &limits), Ok(text("42")));
    assert_eq!(
        to_plain(&[Collected(Endless)], &limits),
        limit_error(Limit::StringLength, 20, "$[0]")
    );
    assert_eq!(
        to_plain(&Entries(vec![(Collected(Endless), 1_u8)]), &limits),
        limit_error(Limit::StringLength, 20, "$")
    );
    assert_eq!(
        to_plain(&Entries(vec![(Collected('k'), 1_u8)]), &limits),
        Ok(map(vec![("k", Plain::UInt(1))]))
    );
}

/// Fails with a custom error.
struct Refuses(&'static str);

impl Serialize for Refuses {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(S::Error::custom(self.0))
    }
}

#[test]
fn custom_errors_keep_their_message_and_get_a_path() {
    assert_eq!(
        to_plain(&Refuses("nope"), &Limits::default()),
        Err(PlainError::Custom {
            message: "nope".into(),
            path: "$".into()
        })
    );
    let nested = BTreeMap::from([("a", BTreeMap::from([("b", vec![Refuses("bad")])]))]);
    assert_eq!(
        to_plain(&nested, &Limits::default()),
        Err(PlainError::Custom {
            message: "bad".into(),
            path: "$.a.b[0]".into()
        })
    );
    // serde's own: a map whose iterator lies about its length.
    let error = to_plain(&Entries(vec![(Refuses("key"), 1_u8)]), &Limits::default());
    assert_eq!(
        error,
        Err(PlainError::Custom {
            message: "key".into(),
            path: "$".into()
        })
    );
}

#[test]
fn custom_messages_are_cut() {
    struct Long;
    impl Serialize for Long {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(S::Error::custom(Endless))
        }
    }
    match to_plain(&Long, &Limits::default()) {
        Err(PlainError::Custom { message, .. }) => {
            assert!(message.ends_with('…'));
            assert_eq!(message.len(), 4096 + '…'.len_utf8());
        }
        other => panic!("expected Custom, got {other:?}"),
    }
}

#[test]
fn an_error_swallowed_by_the_value_is_still_the_result() {
    /// Ignores the errors of its elements.
    struct Swallows;
    impl Serialize for Swallows {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(None)?;
            let _ = seq.serialize_element("too long");
            let _ = seq.serialize_element("ok");
            seq.end()
        }
    }
    assert_eq!(
        to_plain(&Swallows, &Limits::default().with_max_string(3)),
        limit_error(Limit::StringLength, 3, "$[0]")
    );
}

#[test]
fn a_map_used_out_of_order_is_refused() {
    struct ValueFirst;
    impl Serialize for ValueFirst {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(None)?;
            map.serialize_value(&1)?;
            map.end()
        }
    }
    struct KeyOnly;
    impl Serialize for KeyOnly {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(None)?;
            map.serialize_key("k")?;
            map.end()
        }
    }
    assert!(matches!(
        to_plain(&ValueFirst, &Limits::default()),
        Err(PlainError::Unsupported { .. })
    ));
    assert!(matches!(
        to_plain(&KeyOnly, &Limits::default()),
        Err(PlainError::Unsupported { .. })
    ));
}

/// Panics in `Serialize` with the payload it is given.
struct Panics<P: Clone + Send + 'static>(P);

impl<P: Clone + Send + 'static> Serialize for Panics<P> {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        std::panic::panic_any(self.0.clone())
    }
}

#[derive(Clone)]
struct CustomPayload;

#[test]
fn a_panicking_serialize_is_contained_and_its_text_kept_only_if_text() {
    let limits = Limits::default();
    assert_eq!(
        plain_owned(Panics(String::from("owned")), &limits),
        Err(PlainError::Panicked {
            message: Some("owned".into())
        })
    );
    assert_eq!(
        plain_owned(Panics("static"), &limits),
        Err(PlainError::Panicked {
            message: Some("static".into())
        })
    );
    assert_eq!(
        plain_owned(Panics(CustomPayload), &limits),
        Err(PlainError::Panicked { message: None })
    );
    assert_eq!(
        plain_owned(vec![Panics(1_u8)], &limits),
        Err(PlainError::Panicked { message: None })
    );
}

static SECOND_PAYLOAD_DROPS: AtomicUsize = AtomicUsize::new(0);

/// A panic payload whose `Drop` panics again; that second payload must be
/// forgotten.
struct PayloadThatPanics;

impl Drop for PayloadThatPanics {
    fn drop(&mut self) {
        std::panic::panic_any(SecondPayload);
    }
}

struct SecondPayload;

impl Drop for SecondPayload {
    fn drop(&mut self) {
        SECOND_PAYLOAD_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// An answer whose `Drop` panics with `PayloadThatPanics`, or with text.
struct DropBomb {
    value: u8,
    text: bool,
}

impl Serialize for DropBomb {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.value)
    }
}

impl Drop for DropBomb {
    fn drop(&mut self) {
        if self.text {
            panic!("drop failed");
        }
        std::panic::panic_any(PayloadThatPanics);
    }
}

#[test]
fn a_panicking_drop_makes_the_answer_an_error_even_after_a_good_conversion() {
    let before = SECOND_PAYLOAD_DROPS.load(Ordering::SeqCst);
    assert_eq!(
        plain_owned(
            DropBomb {
                value: 1,
                text: false
            },
            &Limits::default()
        ),
        Err(PlainError::DropPanicked { message: None })
    );
    assert_eq!(
        SECOND_PAYLOAD_DROPS.load(Ordering::SeqCst),
        before,
        "the payload's own panic payload is forgotten, never dropped"
    );
    assert_eq!(
        plain_owned(
            DropBomb {
                value: 1,
                text: true
            },
            &Limits::default()
        ),
        Err(PlainError::DropPanicked {
            message: Some("drop failed".into())
        })
    );
}

#[test]
fn the_value_is_dropped_also_when_the_conversion_fails() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Counted(Vec<u8>);
    impl Serialize for Counted {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.serialize(s)
        }
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    let limits = Limits::default().with_max_elements(2);
    assert!(matches!(
        plain_owned(Counted(vec![1, 2, 3]), &limits),
        Err(PlainError::LimitExceeded { .. })
    ));
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    // A conversion error wins over a panicking drop.
    assert_eq!(
        plain_owned(
            DropBomb {
                value: 1,
                text: true
            },
            &Limits::default().with_max_elements(0)
        ),
        limit_error(Limit::Elements, 0, "$")
    );
}

#[test]
fn foreign_converts_or_drops_its_value_contained() {
    let foreign = Foreign::new(Shape::Dot);
    assert_eq!(format!("{foreign:?}"), "Foreign(..)");
    assert_eq!(foreign.into_plain(&Limits::default()), Ok(text("Dot")));

    let foreign = Foreign::new(DropBomb {
        value: 2,
        text: true,
    });
    assert_eq!(
        foreign.into_plain(&Limits::default()),
        Err(PlainError::DropPanicked {
            message: Some("drop failed".into())
        })
    );

    // Dropped unconverted: the value's panicking Drop does not unwind here.
    let before = SECOND_PAYLOAD_DROPS.load(Ordering::SeqCst);
    drop(Foreign::new(DropBomb {
        value: 3,
        text: false,
    }));
    drop(Foreign::new(DropBomb {
        value: 4,
        text: true,
    }));
    assert_eq!(SECOND_PAYLOAD_DROPS.load(Ordering::SeqCst), before);

    let foreign = Foreign::new(Panics(String::from("in serialize")));
    assert_eq!(
        foreign.into_plain(&Limits::default()),
        Err(PlainError::Panicked {
            message: Some("in serialize".into())
        })
    );
}

#[test]
fn foreign_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    assert_send(&Foreign::new(1_u8));
}
