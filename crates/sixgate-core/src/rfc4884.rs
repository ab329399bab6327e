//! RFC 4884: multi-part ICMP messages, as RFC 7915 §4.2 and §5.2 ("ICMP Error
//! Payload") ask a translator to carry them.
//!
//! An ICMPv4 Destination Unreachable, Time Exceeded or Parameter Problem (type 3,
//! 11, 12), and an ICMPv6 Destination Unreachable or Time Exceeded (type 1, 3),
//! may say how long its "original datagram" field is (§4, the length attribute:
//! 32-bit words on ICMPv4, 64-bit words on ICMPv6). The field is zero-padded to
//! that length, at least 128 bytes when an extension structure follows it (§5).
//! Translation changes the quoted packet's header size, so the field is padded
//! anew, its length attribute recomputed in the other family's unit, and the
//! extension structure (opaque here, its own checksum untouched) moved after it.
//! Where the result would not fit the error size limit (576 or 1280 bytes) the
//! extension is removed rather than cut (a cut one would fail its checksum).
//!
//! A message with length attribute zero is an ordinary error (or an RFC 4884
//! §5.4 "non-compliant" multi-part one): everything after the ICMP header is the
//! quoted packet, as before.

/// RFC 4884 §5.1, §5.2: the original datagram field is at least this long when
/// an extension structure follows it.
pub const MIN_ORIGINAL_DATAGRAM: usize = 128;
/// RFC 4884 §7: the extension header (version, reserved, checksum).
const EXT_HEADER_LEN: usize = 4;

/// Where the length attribute of an ICMP error lives: its byte in the 8-byte
/// ICMP header and its unit in bytes. `None` for types without one.
pub fn length_attribute(v6: bool, ty: u8) -> Option<(usize, usize)> {
    match (v6, ty) {
        // ICMPv4 Destination Unreachable, Time Exceeded, Parameter Problem: byte 5.
        (false, 3 | 11 | 12) => Some((5, 4)),
        // ICMPv6 Destination Unreachable, Time Exceeded: byte 4.
        (true, 1 | 3) => Some((4, 8)),
        _ => None,
    }
}

/// An incoming error split per its length attribute (offsets from the start of
/// the bytes after the ICMP header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    /// Bytes of the quoted datagram, padding excluded.
    pub quote_len: usize,
    /// The extension structure: offset and length.
    pub ext: Option<(usize, usize)>,
}

/// Split the `payload_len` bytes after an ICMP header whose length attribute is
/// `attr` (in `unit`-byte words), quoting a datagram that claims `datagram_len`
/// bytes. No attribute, one that overruns the message, or an extension
/// structure too short to be one: the whole payload is the quote (§5.4).
pub fn split(payload_len: usize, attr: u8, unit: usize, datagram_len: usize) -> Parts {
    let whole = Parts {
        quote_len: payload_len,
        ext: None,
    };
    let orig = usize::from(attr) * unit;
    if attr == 0 || orig > payload_len {
        return whole;
    }
    let ext_len = payload_len - orig;
    let ext =
        (orig >= MIN_ORIGINAL_DATAGRAM && ext_len >= EXT_HEADER_LEN).then_some((orig, ext_len));
    Parts {
        quote_len: orig.min(datagram_len),
        ext,
    }
}

/// [`split`] in absolute offsets, for a message whose original datagram field
/// starts at `inner_at` and whose bytes end at `end`; `hdr_len` is the quoted
/// packet's header length (a field shorter than that is ignored). Returns the
/// quote's end and the extension (start, length).
#[cold]
#[inline(never)]
pub(crate) fn bounds(
    inner_at: usize,
    end: usize,
    attr: u8,
    unit: usize,
    datagram_len: usize,
    hdr_len: usize,
) -> (usize, Option<(usize, usize)>) {
    let parts = split(end - inner_at, attr, unit, datagram_len);
    if parts.quote_len < hdr_len {
        return (end, None);
    }
    let ext = parts.ext.map(|(off, len)| (inner_at + off, len));
    (inner_at + parts.quote_len, ext)
}

/// The translated original datagram field for a quote of `quote_len` bytes:
/// padded to the outgoing `unit` and to 128 bytes (§5).
pub fn padded_len(quote_len: usize, unit: usize) -> usize {
    quote_len.max(MIN_ORIGINAL_DATAGRAM).next_multiple_of(unit)
}

/// Lay out the translated message in place: `buf[body_end..]` follows the
/// translated quote; the extension (`ext_at`, `ext_len`, where it was in `buf`)
/// moves to `icmp_at + 8 + padded`, the gap is zeroed. `limit` is the end the
/// message may reach (error size limit, buffer size). Returns the original
/// datagram field's length, or `None` (nothing moved) when it does not fit.
pub(crate) fn place(
    buf: &mut [u8],
    icmp_at: usize,
    body_end: usize,
    (ext_at, ext_len): (usize, usize),
    unit: usize,
    limit: usize,
) -> Option<usize> {
    let padded = padded_len(body_end - (icmp_at + 8), unit);
    let to = icmp_at + 8 + padded;
    if to + ext_len > limit.min(buf.len()) || padded / unit > usize::from(u8::MAX) {
        return None;
    }
    // The source may overlap the padding: copy first, then zero the gap.
    buf.copy_within(ext_at..ext_at + ext_len, to);
    buf[body_end..to].fill(0);
    Some(padded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4884_s4_length_attribute_positions() {
        assert_eq!(length_attribute(false, 3), Some((5, 4)));
        assert_eq!(length_attribute(false, 11), Some((5, 4)));
        assert_eq!(length_attribute(false, 12), Some((5, 4)));
        assert_eq!(length_attribute(false, 4), None);
        assert_eq!(length_attribute(true, 1), Some((4, 8)));
        assert_eq!(length_attribute(true, 3), Some((4, 8)));
        assert_eq!(length_attribute(true, 2), None, "Packet Too Big has none");
        assert_eq!(
            length_attribute(true, 4),
            None,
            "Parameter Problem: 32-bit pointer"
        );
    }

    #[test]
    fn rfc4884_s5_split_and_pad() {
        // 128-byte field (32 words) quoting a 48-byte datagram, 12-byte extension.
        assert_eq!(
            split(140, 32, 4, 48),
            Parts {
                quote_len: 48,
                ext: Some((128, 12))
            }
        );
        // Attribute zero: §5.4 compatibility, the whole is the quote.
        assert_eq!(split(140, 0, 4, 48).ext, None);
        // Overrunning attribute: the whole is the quote.
        assert_eq!(split(100, 32, 4, 48).quote_len, 100);
        // A field under 128 bytes cannot precede an extension.
        assert_eq!(split(80, 16, 4, 48).ext, None);
        assert_eq!(padded_len(48, 8), 128);
        assert_eq!(padded_len(130, 8), 136);
        assert_eq!(padded_len(130, 4), 132);
    }
}
