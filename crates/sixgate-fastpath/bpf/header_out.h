// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// The header-writing tail of a translation, shared by the stateless SIIT
// path (siit.h) and the NAT64 sessions (nat64.h), on either hook: the new
// IP header by RFC 7915 §4.1 / §5.1, put in place of the old one (by the
// hook's hook_header_out), and the L4 checksum moved across (hook_l4_csum).
// Included by siit.h after its helpers (next_id) and the ip4 / ip6 layouts.

// The L4 checksum's offset from the L4 header (ICMP: 2).
static __always_inline int csum_off(__u8 proto)
{
	return proto == IPPROTO_TCP_ ? 16 : proto == IPPROTO_UDP_ ? 6 : 2;
}

// RFC 7915 §5.1: the IPv4 header of a translated IPv6 packet (TOS from the
// Traffic Class, TTL from the Hop Limit, and the ID rule: a packet that
// could meet a smaller MTU gets an ID, a larger one DF). 0 when no ID can be
// given (the packet goes up unchanged).
static __always_inline int ipv4_header_5_1(struct ip4 *n, const struct config *cfg,
					   const struct ip6 *h, __u32 len4, __u8 proto4,
					   const __u8 *s4, const __u8 *d4, __u32 src4,
					   __u32 dst4)
{
	*n = (struct ip4){
		.ver_ihl = 0x45,
		.tos = cfg->reset_tos ? cfg->new_tos
				      : (__u8)(((h->vtc_flow[0] & 0x0f) << 4) | (h->vtc_flow[1] >> 4)),
		.total_len = bpf_htons(len4),
		.ttl = cfg->decrement_hop_limit ? h->hop_limit - 1 : h->hop_limit,
		.proto = proto4,
	};
	__builtin_memcpy(n->src, s4, 4);
	__builtin_memcpy(n->dst, d4, 4);
	if (len4 <= DF_THRESHOLD_V4) {
		int id = next_id(cfg, src4, dst4, proto4);
		if (id < 0)
			return 0;
		n->id = bpf_htons((__u16)id);
	} else {
		n->flags_frag = bpf_htons(IPV4_DF);
	}
	n->check = bpf_htons(~fold(words((__u8 *)n, 20)));
	return 1;
}

// RFC 7915 §4.1: the IPv6 header of a translated IPv4 packet (Traffic Class
// from the TOS, Hop Limit from the TTL, no Flow Label).
static __always_inline void ipv6_header_4_1(struct ip6 *n, const struct config *cfg,
					    const struct ip4 *h, __u32 l4_len, __u8 proto6,
					    const __u8 *src6, const __u8 *dst6)
{
	*n = (struct ip6){
		.plen = bpf_htons(l4_len),
		.nexthdr = proto6,
		.hop_limit = cfg->decrement_hop_limit ? h->ttl - 1 : h->ttl,
	};
	__u8 tc = cfg->reset_traffic_class ? 0 : h->tos;
	n->vtc_flow[0] = 0x60 | (tc >> 4);
	n->vtc_flow[1] = (__u8)(tc << 4);
	__builtin_memcpy(n->src, src6, 16);
	__builtin_memcpy(n->dst, dst6, 16);
}

// RFC 7915 §4.2 / §5.2: an ICMP Echo's new type at `l4_at` and its checksum
// moved from `old_l4` to `new_l4` (sums that already count the ICMPv6
// pseudo-header where one side has it). 0 on success.
static __always_inline int icmp_type_out(hook_ctx *ctx, __u32 l4_at, __u8 ty, __u16 old_l4,
					 __u16 new_l4)
{
	return hook_store(ctx, l4_at, &ty, 1) ||
	       hook_l4_csum(ctx, l4_at + csum_off(IPPROTO_ICMP_), old_l4, new_l4, 0, 0);
}

// RFC 7915 §4.5 / §5.5 (TCP, UDP): the checksum follows the addresses of the
// pseudo-header, from the sum `from` to `to` (RFC 1624). 0 on success.
static __always_inline int pseudo_header_out(hook_ctx *ctx, __u32 at, __u8 proto, __u16 from,
					     __u16 to)
{
	return hook_l4_csum(ctx, at, from, to, 1, proto == IPPROTO_UDP_);
}
