// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// The checks on the arriving IP header that the stateless SIIT path
// (siit.h) and the NAT64 sessions (nat64.h) share, on either hook (the
// pull is the hook's, hook_tc.h / hook_xdp.h): a packet that fails one goes
// up unchanged to the core, which decides (and counts) what to do with it.
// Included by siit.h after the ip4 / ip6 layouts.

// RFC 7915 §5: the IPv6 header, pulled with the first L4_PEEK bytes of its
// payload, where the fast path translates it: a Payload Length within the
// frame (link-layer padding beyond it is trimmed later, as the core trims
// it) and a Hop Limit left. 0 otherwise; `*end` is the data's end.
static __always_inline struct ip6 *ip6_in(hook_ctx *ctx, void **end)
{
	void *data = hook_pull(ctx, ETH_HLEN_ + sizeof(struct ip6) + L4_PEEK, end);
	if (!data)
		return 0;
	struct ip6 *h = data + ETH_HLEN_;
	if ((void *)(h + 1) > *end)
		return 0;
	if ((h->vtc_flow[0] >> 4) != 6)
		return 0;
	__u32 plen = bpf_ntohs(h->plen);
	if (plen == 0 || ETH_HLEN_ + 40 + plen > hook_len(ctx) || h->hop_limit <= 1)
		return 0;
	return h;
}

// RFC 7915 §4: the IPv4 header, pulled with the first L4_PEEK bytes of its
// payload, where the fast path translates it: no options, a valid header
// checksum (the core drops a bad one), not a fragment, a total length within
// the frame (link-layer padding, a short frame on Ethernet, is trimmed
// later, as the core trims it) and a TTL left. 0 otherwise; `*end` is the
// data's end.
static __always_inline struct ip4 *ip4_in(hook_ctx *ctx, void **end)
{
	void *data = hook_pull(ctx, ETH_HLEN_ + sizeof(struct ip4) + L4_PEEK, end);
	if (!data)
		return 0;
	struct ip4 *h = data + ETH_HLEN_;
	if ((void *)(h + 1) > *end)
		return 0;
	if (h->ver_ihl != 0x45 || fold(words((__u8 *)h, 20)) != 0xffff)
		return 0;
	__u32 total = bpf_ntohs(h->total_len);
	__u16 flags = bpf_ntohs(h->flags_frag);
	if (total < 20 || ETH_HLEN_ + total > hook_len(ctx) || (flags & (IPV4_MF | IPV4_OFFSET)) ||
	    h->ttl <= 1)
		return 0;
	return h;
}

// RFC 7915 §5.1: the IPv4 packet (`len4` bytes) fits its 16-bit Total Length
// and the IPv4 MTU; a larger one is the core's (it answers with an ICMPv6
// Packet Too Big).
static __always_inline int ipv4_fits(const struct config *cfg, __u32 len4)
{
	return len4 <= 0xffff && !(cfg->ipv4_mtu && len4 > cfg->ipv4_mtu);
}

// RFC 7915 §4 and §4.1: the IPv6 packet (`out` bytes) fits the IPv6 MTU
// where DF is set; without DF, one above the fragmenting limit is the core's
// to fragment.
static __always_inline int ipv6_fits(const struct config *cfg, const struct ip4 *h, __u32 out)
{
	int df = bpf_ntohs(h->flags_frag) & IPV4_DF;
	if (df && cfg->ipv6_mtu && out > cfg->ipv6_mtu)
		return 0;
	return df || out <= cfg->v6_fragment_limit;
}
