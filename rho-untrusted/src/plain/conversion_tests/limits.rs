//! Every limit, refused where it is crossed and with the exact path.

use super::*;

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
