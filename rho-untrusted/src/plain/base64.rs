//! Standard base64 (RFC 4648, section 4: `A-Z a-z 0-9 + /`, `=` padding),
//! by the `base64` crate's standard engine, whose decoding is already as
//! strict as rho needs (canonical padding, no trailing bits): these two
//! functions only name that choice once for every crate of rho.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Encodes `bytes` as standard base64 with padding (RFC 4648, section 4).
///
/// ```
/// use rho::untrusted::plain::base64_encode;
/// assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
/// ```
pub fn base64_encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes standard base64 with padding; `None` when `text` is not the
/// canonical encoding of some bytes.
///
/// Strict on purpose: the length must be a multiple of four, only the
/// alphabet and trailing `=` padding may occur (no whitespace, no URL-safe
/// alphabet, no missing padding), and the unused bits before the padding must
/// be zero. So every accepted text is exactly what [`base64_encode`] gives for
/// the decoded bytes, which keeps the `{"$bytes": ...}` form of
/// [`Plain::Bytes`](super::Plain::Bytes) unambiguous to read back.
///
/// ```
/// use rho::untrusted::plain::base64_decode;
/// assert_eq!(base64_decode("Zm9vYg==").as_deref(), Some(&b"foob"[..]));
/// assert_eq!(base64_decode("Zm9vYg"), None); // padding missing
/// ```
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648, section 10.
    const VECTORS: [(&str, &str); 7] = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ];

    #[test]
    fn encodes_the_rfc_4648_test_vectors() {
        for (plain, encoded) in VECTORS {
            assert_eq!(base64_encode(plain.as_bytes()), encoded, "{plain:?}");
        }
    }

    #[test]
    fn decodes_the_rfc_4648_test_vectors() {
        for (plain, encoded) in VECTORS {
            assert_eq!(
                base64_decode(encoded).as_deref(),
                Some(plain.as_bytes()),
                "{encoded:?}"
            );
        }
    }

    #[test]
    fn uses_the_whole_alphabet_and_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let encoded = base64_encode(&all);
        assert_eq!(base64_decode(&encoded), Some(all));
        assert_eq!(base64_encode(&[0xfb, 0xff, 0xbf]), "+/+/");
        assert_eq!(base64_decode("+/+/"), Some(vec![0xfb, 0xff, 0xbf]));
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&bytes)), Some(bytes));
        }
    }

    #[test]
    fn refuses_what_is_not_canonical_base64() {
        for bad in [
            "Zg",       // no padding
            "Zg=",      // short padding
            "Z===",     // too much padding
            "Zh==",     // unused bits set
            "Zm9=",     // unused bits set
            "Zg==Zg==", // padding before the end
            "Zm9v\n",   // whitespace
            "Zm-_",     // URL-safe alphabet
            "=Zm9",     // padding first
            "Zm=v",     // padding inside
            "é===",     // not ASCII
        ] {
            assert_eq!(base64_decode(bad), None, "{bad:?}");
        }
    }
}
