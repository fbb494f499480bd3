//! Standard base64 (RFC 4648, section 4: `A-Z a-z 0-9 + /`, `=` padding).

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes `bytes` as standard base64 with padding (RFC 4648, section 4).
///
/// ```
/// use rho_untrusted::plain::base64_encode;
/// assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
/// ```
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = chunk.first().copied().unwrap_or(0);
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let n = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        out.push(sextet(n >> 18));
        out.push(sextet(n >> 12));
        out.push(if chunk.len() > 1 { sextet(n >> 6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(n) } else { '=' });
    }
    out
}

/// The alphabet character for the low six bits of `n`.
fn sextet(n: u32) -> char {
    // The mask keeps the index below 64, the alphabet's length.
    char::from(ALPHABET[(n & 63) as usize])
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
/// use rho_untrusted::plain::base64_decode;
/// assert_eq!(base64_decode("Zm9vYg==").as_deref(), Some(&b"foob"[..]));
/// assert_eq!(base64_decode("Zm9vYg"), None); // padding missing
/// ```
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let input = text.as_bytes();
    if input.len() % 4 != 0 {
        return None;
    }
    let groups = input.len() / 4;
    let mut out = Vec::with_capacity(groups * 3);
    for (index, group) in input.chunks_exact(4).enumerate() {
        let last = index + 1 == groups;
        let padding = match (last, group) {
            (true, [.., b'=', b'=']) => 2,
            (true, [.., b'=']) => 1,
            _ => 0,
        };
        let mut n: u32 = 0;
        for (position, &c) in group.iter().enumerate() {
            let value = if position >= 4 - padding {
                0
            } else {
                value_of(c)?
            };
            n = (n << 6) | value;
        }
        // Bits that the padding leaves unused must be zero (canonical form).
        let unused = match padding {
            2 => n & 0xFFFF,
            1 => n & 0xFF,
            _ => 0,
        };
        if unused != 0 {
            return None;
        }
        // The shifts keep each value within a byte; `as u8` takes those bits.
        out.push((n >> 16) as u8);
        if padding < 2 {
            out.push((n >> 8) as u8);
        }
        if padding < 1 {
            out.push(n as u8);
        }
    }
    Some(out)
}

/// The six-bit value of an alphabet character.
fn value_of(c: u8) -> Option<u32> {
    let value = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
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
