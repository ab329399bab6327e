//! RFC 7915 §4 and §1.2: an IPv4 packet with DF=0 that would exceed the IPv6 side's
//! MTU is fragmented by the translator, so every IPv6 packet fits `lowest_ipv6_mtu`.
//! And §5.1 / RFC 791: a translated IPv4 packet with DF=0 (an IPv6 fragment, or a
//! packet of at most 1260 bytes) larger than `ipv4_mtu` is fragmented as any
//! IPv4 router would ([`split_v4`]).

use crate::packet::Scratch;
use crate::packet::ipv4::{self, Ipv4Header, MF};
use crate::packet::ipv6::{self, FRAGMENT_HEADER_LEN, FragmentHeader, HEADER_LEN, Ipv6Header};
use crate::verdict::DropReason;
use zerocopy::{FromBytes, IntoBytes};

/// Split `packet` (an IPv6 header, a Fragment header, then the fragmentable part)
/// into fragments of at most `mtu` bytes in `scratch`. Offsets continue from the
/// Fragment header's, so an IPv4 fragment is split into IPv6 fragments of it.
#[cold]
#[inline(never)]
pub fn split(packet: &[u8], mtu: usize, scratch: &mut Scratch) -> Result<u8, DropReason> {
    const HDRS: usize = HEADER_LEN + FRAGMENT_HEADER_LEN;
    let (Ok((hdr, _)), Some(Ok((fh, _)))) = (
        Ipv6Header::read_from_prefix(packet),
        packet
            .get(HEADER_LEN..)
            .map(FragmentHeader::read_from_prefix),
    ) else {
        return Err(DropReason::Malformed);
    };
    let payload = &packet[HDRS..];
    // Non-final fragments carry a multiple of 8 bytes (RFC 8200 §4.5).
    let chunk = (mtu.saturating_sub(HDRS) / 8) * 8;
    if chunk == 0 {
        return Err(DropReason::PacketTooBig);
    }
    // The 13-bit offset field cannot express data past 65535.
    if fh.offset() + payload.len() > usize::from(u16::MAX) {
        return Err(DropReason::Malformed);
    }
    let n = payload.len().div_ceil(chunk);
    for (i, part) in payload.chunks(chunk).enumerate() {
        let more = i + 1 < n || fh.more();
        let Some(out) = scratch.push(HDRS + part.len()) else {
            return Err(DropReason::PacketTooBig);
        };
        let h = ipv6::header(
            hdr.traffic_class(),
            (FRAGMENT_HEADER_LEN + part.len()) as u16,
            hdr.next_header,
            hdr.hop_limit,
            hdr.src,
            hdr.dst,
        );
        out[..HEADER_LEN].copy_from_slice(h.as_bytes());
        let f = ipv6::fragment_header(fh.next_header, fh.offset() + i * chunk, more, fh.id.get());
        out[HEADER_LEN..HDRS].copy_from_slice(f.as_bytes());
        out[HDRS..].copy_from_slice(part);
    }
    Ok(n as u8)
}

/// Split `packet` (a 20-byte IPv4 header with DF=0, then its payload) into IPv4
/// fragments of at most `mtu` bytes in `scratch` (RFC 791 §3.2). Offsets continue
/// from the header's, and the last piece keeps its MF, so a fragment is split
/// into fragments of it.
#[cold]
#[inline(never)]
pub fn split_v4(packet: &[u8], mtu: usize, scratch: &mut Scratch) -> Result<u8, DropReason> {
    const HDR: usize = ipv4::HEADER_LEN;
    let Ok((h, _)) = Ipv4Header::read_from_prefix(packet) else {
        return Err(DropReason::Malformed);
    };
    let payload = &packet[HDR..];
    let chunk = (mtu.saturating_sub(HDR) / 8) * 8;
    if chunk == 0 || h.header_len() != HDR {
        return Err(DropReason::PacketTooBig);
    }
    let n = payload.len().div_ceil(chunk);
    for (i, part) in payload.chunks(chunk).enumerate() {
        let more = i + 1 < n || h.mf();
        let offset = h.frag_offset() + i * chunk;
        let Some(out) = scratch.push(HDR + part.len()) else {
            return Err(DropReason::PacketTooBig);
        };
        let f = ipv4::header(
            h.tos,
            (HDR + part.len()) as u16,
            h.id.get(),
            if more { MF } else { 0 } | (offset / 8) as u16,
            h.ttl,
            h.proto,
            h.src,
            h.dst,
        );
        out[..HDR].copy_from_slice(f.as_bytes());
        out[HDR..].copy_from_slice(part);
    }
    Ok(n as u8)
}
