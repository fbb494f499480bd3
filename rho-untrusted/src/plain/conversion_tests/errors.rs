//! Errors of the value's own `Serialize`: kept, cut, given a path, and
//! never lost when the value swallows them.

use super::*;

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
