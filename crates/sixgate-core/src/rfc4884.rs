//! RFC 4884: multi-part ICMP messages, as RFC 7915 §4.2 and §5.2 ("ICMP Error
//! Payload") ask a translator to carry them.
//!
//! An ICMPv4 Destination Unreachable, Time Exceeded or Parameter Problem (type 3,
//! 11, 12; RFC 4884 §4.1, §4.2, §4.3), and an ICMPv6 Destination Unreachable or
//! Time Exceeded (type 1, 3; §4.4, §4.5), may say how long its "original
//! datagram" field is (the length attribute: byte 5 of the ICMPv4 header in
//! 32-bit words, byte 4 of the ICMPv6 header in 64-bit words). The field is
//! zero-padded to that length, at least 128 bytes when an extension structure
//! follows it (§4). Translation changes the quoted packet's header
//! size, so the field is laid out anew in the other family's unit, its length
//! attribute recomputed, and the extension structure (opaque here, its own
//! checksum, §7, untouched) moved after it.
//!
//! RFC 7915 §4.2/§5.2: "the ICMP error message ... needs to be truncated"
//! to fit 1280 / 576 bytes: what is cut is the original datagram field (RFC
//! 4884 §4 lets a sender shorten it, never below 128 bytes), so the
//! extension survives whole; only when not even a 128-byte field leaves room
//! for it is the extension removed (a cut one would fail its checksum).
//!
//! A message with length attribute zero is an ordinary error (or an RFC 4884
//! §5.4 "non-compliant" multi-part one): everything after the ICMP header is the
//! quoted packet, as before.

/// RFC 4884 §4: the original datagram field is at least this long when
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
    /// The quote is the whole datagram (its zero padding, if any, follows);
    /// otherwise the sender cut it at the field's end.
    pub whole: bool,
    /// The extension structure: offset and length.
    pub ext: Option<(usize, usize)>,
}

/// Split the `payload_len` bytes after an ICMP header whose length attribute is
/// `attr` (in `unit`-byte words), quoting a datagram that claims `datagram_len`
/// bytes. No attribute, one that overruns the message, or an extension
/// structure too short to be one: the whole payload is the quote (§5.4).
pub fn split(payload_len: usize, attr: u8, unit: usize, datagram_len: usize) -> Parts {
    let orig = usize::from(attr) * unit;
    if attr == 0 || orig > payload_len {
        return Parts {
            quote_len: payload_len,
            whole: datagram_len <= payload_len,
            ext: None,
        };
    }
    let ext_len = payload_len - orig;
    let ext =
        (orig >= MIN_ORIGINAL_DATAGRAM && ext_len >= EXT_HEADER_LEN).then_some((orig, ext_len));
    Parts {
        quote_len: orig.min(datagram_len),
        whole: datagram_len <= orig,
        ext,
    }
}

/// The incoming message in absolute offsets (see [`bounds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Where the quote ends (its padding and any extension follow).
    pub end: usize,
    /// The quote is the whole datagram.
    pub whole: bool,
    /// The extension structure: start and length.
    pub ext: Option<(usize, usize)>,
}

/// [`split`] in absolute offsets, for a message whose original datagram field
/// starts at `inner_at` and whose bytes end at `end`; `hdr_len` is the quoted
/// packet's header length (a field shorter than that is ignored).
#[cold]
#[inline(never)]
pub(crate) fn bounds(
    inner_at: usize,
    end: usize,
    attr: u8,
    unit: usize,
    datagram_len: usize,
    hdr_len: usize,
) -> Bounds {
    let parts = split(end - inner_at, attr, unit, datagram_len);
    if parts.quote_len < hdr_len {
        return Bounds {
            end,
            whole: false,
            ext: None,
        };
    }
    Bounds {
        end: inner_at + parts.quote_len,
        whole: parts.whole,
        ext: parts.ext.map(|(off, len)| (inner_at + off, len)),
    }
}

/// The translated original datagram field for a quote of `quote_len` bytes in
/// the outgoing `unit` (§3, §4.1, §4.4: 32-bit words on ICMPv4, 64-bit on
/// ICMPv6; §4: at least 128 bytes). A whole datagram is zero-padded up to the
/// unit; a quote its sender already cut is cut down to the unit instead, so
/// that no zeros stand where the datagram had other bytes.
pub fn field_len(quote_len: usize, unit: usize, whole: bool) -> usize {
    let field = if whole {
        quote_len.next_multiple_of(unit)
    } else {
        quote_len / unit * unit
    };
    field.max(MIN_ORIGINAL_DATAGRAM)
}

/// Lay out the translated message in place: the translated quote starts at
/// `icmp_at + 8` and ends at `body_end`; the extension (`ext_at`, `ext_len`,
/// where it was in `buf`) moves to `icmp_at + 8 + field`. `limit` is the end
/// the message may reach (error size limit, buffer size): the field is cut
/// (to a whole unit, never below 128 bytes) until the extension fits after it
/// (RFC 7915 §4.2/§5.2, RFC 4884 §4). Returns the field's length, or `None`
/// (nothing moved) when even a 128-byte field leaves no room.
pub(crate) fn place(
    buf: &mut [u8],
    icmp_at: usize,
    body_end: usize,
    (ext_at, ext_len): (usize, usize),
    unit: usize,
    whole: bool,
    limit: usize,
) -> Option<usize> {
    let at = icmp_at + 8;
    let room = limit.min(buf.len()).checked_sub(at + ext_len)? / unit * unit;
    let field = field_len(body_end - at, unit, whole)
        .min(room)
        .min(usize::from(u8::MAX) * unit);
    if field < MIN_ORIGINAL_DATAGRAM {
        return None;
    }
    let to = at + field;
    // The source may overlap the padding or the cut quote: copy first, then
    // zero the padding (if any).
    buf.copy_within(ext_at..ext_at + ext_len, to);
    buf[body_end.min(to)..to].fill(0);
    Some(field)
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
                whole: true,
                ext: Some((128, 12))
            }
        );
        // Attribute zero: §5.4 compatibility, the whole is the quote.
        assert_eq!(split(140, 0, 4, 48).ext, None);
        // Overrunning attribute: the whole is the quote.
        assert_eq!(split(100, 32, 4, 48).quote_len, 100);
        // A field under 128 bytes cannot precede an extension.
        assert_eq!(split(80, 16, 4, 48).ext, None);
        // A datagram longer than the field: the sender cut it.
        assert!(!split(140, 32, 4, 1000).whole);
        assert_eq!(field_len(48, 8, true), 128);
        assert_eq!(field_len(130, 8, true), 136);
        assert_eq!(field_len(130, 4, true), 132);
        // A cut quote is cut to the unit, not padded past the bytes it had.
        assert_eq!(field_len(148, 8, false), 144);
        assert_eq!(field_len(108, 4, false), 128);
    }

    /// RFC 7915 §4.2/§5.2 ("truncated" to the minimum MTU) with RFC 4884 §4:
    /// the field is cut to a whole unit so that the extension fits whole.
    #[test]
    fn rfc7915_s4_2_place_cuts_the_field_not_the_extension() {
        const EXT: [u8; 12] = [0x20, 0, 0, 0, 0, 8, 1, 1, 9, 9, 9, 9];
        // ICMP header at 0, a 200-byte cut quote, the extension right after.
        let mut buf = [0u8; 400];
        buf[8..208].fill(0xaa);
        buf[208..220].copy_from_slice(&EXT);
        // A limit of 180 bytes: 8 + 160 + 12.
        assert_eq!(place(&mut buf, 0, 208, (208, 12), 8, false, 180), Some(160));
        assert_eq!(&buf[168..180], &EXT);
        assert!(buf[8..168].iter().all(|&b| b == 0xaa), "quote kept, cut");
        // 8 + 128 + 12 > 140: nothing moves.
        assert_eq!(place(&mut buf, 0, 208, (208, 12), 8, false, 140), None);
        // A whole 100-byte datagram: zero-padded to 128, extension after.
        let mut buf = [0u8; 400];
        buf[8..108].fill(0xaa);
        buf[108..120].copy_from_slice(&EXT);
        assert_eq!(place(&mut buf, 0, 108, (108, 12), 4, true, 400), Some(128));
        assert!(buf[108..136].iter().all(|&b| b == 0), "zero padding");
        assert_eq!(&buf[136..148], &EXT);
    }
}
