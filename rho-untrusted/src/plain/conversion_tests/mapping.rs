//! Every mapping rule: scalars, text, bytes, lists, variants, structs, maps
//! and their keys.

use super::*;

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
