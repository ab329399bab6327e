// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// The XDP hook's packet access and mutation, for the shared translation
// (siit.h and the headers it includes); the TC hook has the same functions
// in hook_tc.h. XDP has no skb: the header swap moves the packet's start
// (bpf_xdp_adjust_head ±20) with the Ethernet header rewritten in front,
// the L4 checksum is moved by hand (RFC 1624, as the kernel's
// bpf_l4_csum_replace computes it), and redirecting to an unresolved
// neighbour is impossible (no bpf_redirect_neigh): forward.h leaves such a
// packet untranslated, before anything changes.
//
// Multi-buffer frames (SEC("xdp.frags"), jumbo frames over a page): the
// headers are read and written in the linear part only, and the checksum
// update needs no payload, so the fragments are never touched; a frame
// whose headers are not all in its linear part goes up unchanged.

#ifndef SIXGATE_HOOK_H
#define SIXGATE_HOOK_H

#include "common.h"

typedef struct xdp_md hook_ctx;

#define HOOK_PASS XDP_PASS
#define HOOK_DROP XDP_DROP
#define HOOK_REDIRECT XDP_REDIRECT
#define HOOK_HAS_REDIRECT_NEIGH 0
// One translation direction per BPF subprogram: inlined together, the direct
// packet writes leave clang with more than 512 bytes of stack.
#define HOOK_PATH __attribute__((noinline))

// The whole frame, fragments included.
static __always_inline __u32 hook_len(hook_ctx *ctx)
{
	return bpf_xdp_get_buff_len(ctx);
}

static __always_inline __be16 hook_eth_proto(hook_ctx *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + ETH_HLEN_ > end)
		return 0;
	return ((__be16 *)data)[6];
}

static __always_inline __u32 hook_ingress_ifindex(hook_ctx *ctx)
{
	return ctx->ingress_ifindex;
}

// XDP sees wire frames: no GSO.
static __always_inline __u32 hook_gso_segs(hook_ctx *ctx)
{
	return 0;
}

static __always_inline __u32 hook_gso_size(hook_ctx *ctx)
{
	return 0;
}

// The first `n` bytes (at most the frame) must be in the linear part, where
// the program reads and writes them; the data's start, `*end` its end, or 0.
static __always_inline void *hook_pull(hook_ctx *ctx, __u32 n, void **end)
{
	__u32 len = bpf_xdp_get_buff_len(ctx);
	if (n > len)
		n = len;
	void *data = (void *)(long)ctx->data;
	*end = (void *)(long)ctx->data_end;
	// (n is at most the headers and L4_PEEK; the bound is the verifier's.)
	if (n > 256 || data + n > *end)
		return 0;
	return data;
}

// RFC 7915 §4.1 / §5.1: the translated header (`len` bytes, 20 or 40, in
// place of 40 or 20) behind the Ethernet header, whose MAC addresses are
// kept. The frame is cut to `keep` bytes first (link-layer padding, as the
// core trims it). 0: nothing but padding changed, pass it up; -1: the start
// moved and the header cannot be written (never seen: the head room and the
// linear part were checked), drop it as aborted; 1: written.
static __always_inline int hook_header_out(hook_ctx *ctx, __u32 keep, __u16 eth_proto,
					   const void *n, __u32 len)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 12 > end)
		return 0;
	__u8 mac[12];
	__builtin_memcpy(mac, data, 12);
	__u32 have = bpf_xdp_get_buff_len(ctx);
	if (keep < have && bpf_xdp_adjust_tail(ctx, (int)keep - (int)have))
		return 0;
	// 6 -> 4 loses 20 bytes at the front, 4 -> 6 gains them.
	if (bpf_xdp_adjust_head(ctx, len == 20 ? 20 : -20))
		return 0;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	__be16 eth_p = bpf_htons(eth_proto);
	if (len == 20) {
		if (data + ETH_HLEN_ + 20 > end)
			return -1;
		__builtin_memcpy(data + ETH_HLEN_, n, 20);
	} else {
		if (data + ETH_HLEN_ + 40 > end)
			return -1;
		__builtin_memcpy(data + ETH_HLEN_, n, 40);
	}
	__builtin_memcpy(data, mac, 12);
	__builtin_memcpy(data + 12, &eth_p, 2);
	return 1;
}

// The two bytes at offset `at` of the frame, or 0 when they are not in it.
static __always_inline __u8 *hook_two_bytes(hook_ctx *ctx, __u32 at)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	// A bounded offset for the verifier (at most the headers' end).
	if (at > 256)
		return 0;
	__u8 *p = data + at;
	if ((void *)(p + 2) > end)
		return 0;
	return p;
}

// `n` bytes (2 at most) of `from` at offset `at`. 0 on success.
static __always_inline int hook_store(hook_ctx *ctx, __u32 at, const void *from, __u32 n)
{
	__u8 *p = hook_two_bytes(ctx, at);
	if (!p)
		return -1;
	p[0] = ((const __u8 *)from)[0];
	if (n == 2)
		p[1] = ((const __u8 *)from)[1];
	return 0;
}

// RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), summed as the kernel's
// csum_replace does (the upper halves of its 32-bit words included), so the
// result is the one bpf_l4_csum_replace writes on the TC hook, bit for bit:
// the checksum at `at` follows a 16-bit change from `from` to `to` (host
// order), in the pseudo-header or in the covered data alike (a complete
// checksum: XDP has no CHECKSUM_PARTIAL). `udp`: a UDP checksum, which must
// not become 0 (RFC 768). 0 on success.
static __always_inline int hook_l4_csum(hook_ctx *ctx, __u32 at, __u16 from, __u16 to,
					int pseudo, int udp)
{
	__u8 *p = hook_two_bytes(ctx, at);
	if (!p)
		return -1;
	__u16 hc = ((__u16)p[0] << 8) | p[1];
	// As BPF_F_MARK_MANGLED_0: a UDP checksum of 0 (none) stays 0.
	if (udp && hc == 0)
		return 0;
	__u16 s = fold(0xffffULL + (__u16)~hc + 0xffffULL + (__u16)~from + to);
	__u16 c = (__u16)~s;
	if (udp && c == 0)
		c = 0xffff;
	p[0] = c >> 8;
	p[1] = (__u8)c;
	return 0;
}

// Out of `ifindex` with the next hop's and our MAC addresses (`mac`:
// destination, then source). A redirect into a veth needs an XDP program or
// GRO on its peer (docs/fastpath.md, "XDP"). 0 on success.
static __always_inline int hook_redirect(hook_ctx *ctx, const __u8 *mac, __u32 ifindex)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 12 > end)
		return -1;
	__builtin_memcpy(data, mac, 12);
	return bpf_redirect(ifindex, 0) == XDP_REDIRECT ? 0 : -1;
}

// Never called: fwd_lookup leaves a packet to an unresolved neighbour
// untranslated on this hook (HOOK_HAS_REDIRECT_NEIGH 0).
static __always_inline int hook_redirect_neigh(hook_ctx *ctx, const struct bpf_fib_lookup *p)
{
	return -1;
}

#endif
