// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// The TC (tcx / clsact ingress) hook's packet access and mutation, for the
// shared translation (siit.h and the headers it includes): the skb helpers,
// which keep GSO super-packets (bpf_skb_change_proto adjusts gso_size) and
// CHECKSUM_PARTIAL / CHECKSUM_COMPLETE packets right. The XDP hook has the
// same functions in hook_xdp.h; nothing else differs between the two.

#ifndef SIXGATE_HOOK_H
#define SIXGATE_HOOK_H

#include <linux/pkt_cls.h>
#include "common.h"

typedef struct __sk_buff hook_ctx;

#define HOOK_PASS TC_ACT_OK
#define HOOK_DROP TC_ACT_SHOT
#define HOOK_REDIRECT TC_ACT_REDIRECT
// bpf_redirect_neigh: the kernel resolves an unresolved next hop.
#define HOOK_HAS_REDIRECT_NEIGH 1
// One translation direction is inlined into the program (the TC program's
// code as it always was).
#define HOOK_PATH __always_inline

// The frame's length, its EtherType (network order) and where it came in.
static __always_inline __u32 hook_len(hook_ctx *skb)
{
	return skb->len;
}

static __always_inline __be16 hook_eth_proto(hook_ctx *skb)
{
	return skb->protocol;
}

static __always_inline __u32 hook_ingress_ifindex(hook_ctx *skb)
{
	return skb->ingress_ifindex;
}

// A GSO super-packet's segment count and payload size (0: not GSO).
static __always_inline __u32 hook_gso_segs(hook_ctx *skb)
{
	return skb->gso_segs;
}

static __always_inline __u32 hook_gso_size(hook_ctx *skb)
{
	return skb->gso_size;
}

// The first `n` bytes (at most the frame) in the linear area; the data's
// start, `*end` its end, or 0.
static __always_inline void *hook_pull(hook_ctx *skb, __u32 n, void **end)
{
	if (n > skb->len)
		n = skb->len;
	if (bpf_skb_pull_data(skb, n))
		return 0;
	*end = (void *)(long)skb->data_end;
	return (void *)(long)skb->data;
}

// RFC 7915 §4.1 / §5.1: the translated header in place of the old one. The
// frame is cut to `keep` bytes (link-layer padding beyond the IP length goes,
// as the core trims it), then the protocol changes and the EtherType and
// header (`len` bytes) are written. 0: only padding gone, a refusal leaves
// the same packet to pass up; -1: past change_proto the packet is half
// translated, so a failure leaves it broken and it is dropped and counted as
// aborted (never seen: the writes are within what change_proto left); 1:
// written.
static __always_inline int hook_header_out(hook_ctx *skb, __u32 keep, __u16 eth_proto,
					   const void *n, __u32 len)
{
	if (keep < skb->len && bpf_skb_change_tail(skb, keep, 0))
		return 0;
	// change_proto clears the flow hash; the translated packet is the same
	// flow, so it keeps it, and the egress device's queue choice (and RPS
	// behind it) does not dissect and hash the packet again.
	__u32 hash = skb->hash;
	if (bpf_skb_change_proto(skb, bpf_htons(eth_proto), 0))
		return 0;
	if (hash)
		bpf_set_hash(skb, hash);
	__be16 eth_p = bpf_htons(eth_proto);
	if (bpf_skb_store_bytes(skb, 12, &eth_p, 2, 0) ||
	    bpf_skb_store_bytes(skb, ETH_HLEN_, n, len, BPF_F_RECOMPUTE_CSUM))
		return -1;
	return 1;
}

// `n` bytes of `from` at offset `at`. 0 on success.
static __always_inline int hook_store(hook_ctx *skb, __u32 at, const void *from, __u32 n)
{
	return bpf_skb_store_bytes(skb, at, from, n, 0) ? -1 : 0;
}

// RFC 1624: the L4 checksum at `at` follows a 16-bit change from `from` to
// `to` (host order): in the pseudo-header (`pseudo`, RFC 7915 §4.5 / §5.5)
// or in the covered data (a port, an ICMP type). `udp`: a UDP checksum,
// which must not become 0 (RFC 768). 0 on success.
static __always_inline int hook_l4_csum(hook_ctx *skb, __u32 at, __u16 from, __u16 to,
					int pseudo, int udp)
{
	__u64 f = 2 | (pseudo ? BPF_F_PSEUDO_HDR : 0) | (udp ? BPF_F_MARK_MANGLED_0 : 0);
	return bpf_l4_csum_replace(skb, at, bpf_htons(from), bpf_htons(to), f) ? -1 : 0;
}

// Out of `ifindex` with the next hop's and our MAC addresses (`mac`:
// destination, then source). 0 on success.
static __always_inline int hook_redirect(hook_ctx *skb, const __u8 *mac, __u32 ifindex)
{
	// Flags 0: the MAC header is outside the checksum complete covers.
	if (bpf_skb_store_bytes(skb, 0, mac, 12, 0))
		return -1;
	return bpf_redirect(ifindex, 0) == TC_ACT_REDIRECT ? 0 : -1;
}

// Out of the FIB's interface, the kernel resolving the next hop the FIB left
// in the destination field (the gateway, or the destination on-link; an
// IPv4 route may have an IPv6 gateway, RFC 8950). 0 on success.
static __always_inline int hook_redirect_neigh(hook_ctx *skb, const struct bpf_fib_lookup *p)
{
	struct bpf_redir_neigh nh = {.nh_family = p->family};
	if (p->family == 10)
		__builtin_memcpy(nh.ipv6_nh, p->ipv6_dst, 16);
	else
		nh.ipv4_nh = p->ipv4_dst;
	return bpf_redirect_neigh(p->ifindex, &nh, sizeof(nh), 0) == TC_ACT_REDIRECT ? 0 : -1;
}

#endif
