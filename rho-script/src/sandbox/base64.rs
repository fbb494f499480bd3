//! Base64 as scripts write it: image data a script hands back as text.
//!
//! Scripts get base64 from many places (`btoa`, a web API, a file), so the
//! reading is lenient where that is harmless: standard or URL-safe
//! alphabet, padding optional, line breaks and blanks ignored. The
//! decoding itself is the `base64` crate's; what goes back out is rho's
//! one strict form ([`base64_encode`]).

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
pub(crate) use rho_tool_core::untrusted::plain::base64_encode;

/// Padding optional, as either alphabet is written in the wild.
const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// The bytes of standard or URL-safe base64 text (padding optional,
/// whitespace ignored), or `None` when it is not base64 (one alphabet
/// throughout).
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text: String = text
        .chars()
        .filter(|c| !matches!(c, ' ' | '\t' | '\r' | '\n'))
        .collect();
    let engine = if text.contains(['-', '_']) {
        &URL_SAFE
    } else {
        &STANDARD
    };
    engine.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_and_url_safe_text_is_read_with_or_without_padding() {
        assert_eq!(base64_decode("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_decode("aGVsbG8").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_decode("aGVs\nbG8h").as_deref(), Some(&b"hello!"[..]));
        assert_eq!(base64_decode("-_8=").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(base64_decode("+/8=").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(base64_decode("").as_deref(), Some(&[][..]));
    }

    #[test]
    fn what_is_not_base64_is_refused() {
        for text in ["a", "ab=c", "ab*c", "ab===", "+_8="] {
            assert_eq!(base64_decode(text), None, "{text}");
        }
    }

    #[test]
    fn what_goes_out_reads_back() {
        for bytes in [&b""[..], b"h", b"he", b"hel", b"hello", &[0, 255, 128, 7]] {
            let text = base64_encode(bytes);
            assert_eq!(base64_decode(&text).as_deref(), Some(bytes), "{text}");
        }
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
    }
}
