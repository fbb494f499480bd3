//! Hostile `Serialize` and `Drop` impls: contained, and the answer made an
//! error.

use super::*;

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
