// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// Stateful NAT64 (RFC 6146) established sessions on the fast path, either
// hook (docs/fastpath.md, "NAT64 established sessions"). Included by siit.h
// after its helpers; used when the configuration says mode nat64, in place
// of the stateless SIIT mapping.
//
// The Rust core stays the only RFC 6146 authority (allocation, the TCP
// state machine, filtering, limits, expiry, logging). The data plane
// installs a session it has settled (TCP ESTABLISHED, UDP, ICMP query) as
// two entries, one per direction, made by sixgate_core::fastpath::nat64::
// entries: the key is the packet as it arrives (addresses, ports or Echo
// identifier, protocol), the value what it leaves with and the two address
// sums its L4 checksum moves between. A packet that matches, with the SIIT
// header rules of siit.h and no TCP SYN, FIN or RST (they change the
// session's state, §3.5.2.2), is translated here and marks the entry's
// coarse last-seen, which the data plane hands back to the core before the
// session would expire. Anything else goes up unchanged to the core.

#define NAT64_ENTRIES 65536
// Last-seen is written at most once a second per entry: the data plane only
// needs to know that the session lived, and fewer writes keep the cache line
// shared between CPUs.
#define NAT64_SEEN_NS 1000000000ULL
// TCP FIN, SYN, RST.
#define TCP_STATE_FLAGS 0x07

// sixgate_core::fastpath::nat64::Key6 (ICMP: the identifier in both ports).
struct nat64_key6 {
	__u8 src[16];
	__u8 dst[16];
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 _pad[3];
};

// sixgate_core::fastpath::nat64::Key4.
struct nat64_key4 {
	__u8 src[4];
	__u8 dst[4];
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 _pad[3];
};

// sixgate_core::fastpath::nat64::To4.
struct nat64_to4 {
	__u8 src[4];
	__u8 dst[4];
	__be16 sport;
	__be16 dport;
	__u16 sum6;     // the packet's IPv6 address sum
	__u16 sum4;     // the translation's IPv4 address sum
	__u64 last_seen_ns;
};

// sixgate_core::fastpath::nat64::To6.
struct nat64_to6 {
	__u8 src[16];
	__u8 dst[16];
	__be16 sport;
	__be16 dport;
	__u16 sum4;
	__u16 sum6;
	__u64 last_seen_ns;
};

// Preallocated hash maps (no BPF_F_NO_PREALLOC, no LRU): an entry goes only
// when the data plane removes it; a full map leaves the session on the slow
// path, counted by the data plane.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NAT64_ENTRIES);
	__type(key, struct nat64_key6);
	__type(value, struct nat64_to4);
} nat64_6to4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NAT64_ENTRIES);
	__type(key, struct nat64_key4);
	__type(value, struct nat64_to6);
} nat64_4to6 SEC(".maps");

static __always_inline void nat64_seen(__u64 *last)
{
	__u64 now = bpf_ktime_get_ns();
	if (now - *last > NAT64_SEEN_NS)
		*last = now;
}

// The key's ports: TCP / UDP source and destination port, or the Echo
// identifier twice (RFC 6146 §3.5.3).
static __always_inline void nat64_ports(__u8 proto, __u8 icmp, const __u8 *l4, __be16 *sport,
					__be16 *dport)
{
	if (proto == icmp) {
		__builtin_memcpy(sport, l4 + 4, 2);
		__builtin_memcpy(dport, l4 + 4, 2);
	} else {
		__builtin_memcpy(sport, l4, 2);
		__builtin_memcpy(dport, l4 + 2, 2);
	}
}

// RFC 6146 §3.5 + RFC 7915 §5: an IPv6 packet of an installed session.
static HOOK_PATH int nat64_v6_to_v4(hook_ctx *ctx, const struct config *cfg)
{
	void *end;
	struct ip6 *h = ip6_in(ctx, &end);
	if (!h)
		return 0;
	__u32 plen = bpf_ntohs(h->plen);
	__u32 len4 = 20 + plen;
	if (!ipv4_fits(cfg, len4))
		return 0;
	__u8 *l4 = (__u8 *)(h + 1);
	if ((void *)(l4 + 8) > end)
		return 0;
	__u8 proto6 = h->nexthdr;
	if (!l4_ok(proto6, IPPROTO_ICMPV6_, 128, 129, l4, plen))
		return 0;
	if (proto6 == IPPROTO_TCP_) {
		if ((void *)(l4 + 20) > end || (l4[13] & TCP_STATE_FLAGS))
			return 0;
	}
	struct nat64_key6 k = {};
	__builtin_memcpy(k.src, h->src, 16);
	__builtin_memcpy(k.dst, h->dst, 16);
	k.proto = proto6;
	nat64_ports(proto6, IPPROTO_ICMPV6_, l4, &k.sport, &k.dport);
	struct nat64_to4 *e = bpf_map_lookup_elem(&nat64_6to4, &k);
	if (!e)
		return 0;
	// A copy: the data plane may remove the entry meanwhile.
	struct nat64_to4 v = *e;
	if (!routed_to_slow_path(ctx, cfg, 1, h->src, 40 + plen))
		return 0;
	__u8 proto4 = proto6 == IPPROTO_ICMPV6_ ? IPPROTO_ICMP_ : proto6;
	// Where the translation goes (forward.h), by its own header and ports;
	// one that would not fit the egress MTU goes up unchanged.
	__u8 ports[4];
	__builtin_memcpy(ports, &v.sport, 2);
	__builtin_memcpy(ports + 2, &v.dport, 2);
	struct fwd fwd;
	if (!fwd_lookup(ctx, &fwd, cfg->slow_ifindex, AF_INET_, v.src, v.dst, len4, proto4, l4, end,
			ports))
		return 0;
	nat64_seen(&e->last_seen_ns);

	__u32 src4 = ((__u32)v.src[0] << 24) | ((__u32)v.src[1] << 16) | ((__u32)v.src[2] << 8) | v.src[3];
	__u32 dst4 = ((__u32)v.dst[0] << 24) | ((__u32)v.dst[1] << 16) | ((__u32)v.dst[2] << 8) | v.dst[3];
	__u16 old_l4 = 0, new_l4 = 0;
	__u8 ty4 = 0;
	if (proto6 == IPPROTO_ICMPV6_) {
		// RFC 7915 §5.2: the pseudo-header goes and the type changes;
		// RFC 6146 §3.5.3: the identifier becomes the BIB's IPv4 one.
		__u16 pseudo = add16(add16(v.sum6, fold(plen)), IPPROTO_ICMPV6_);
		ty4 = l4[0] == 128 ? 8 : 0;
		old_l4 = add16(add16(pseudo, (__u16)l4[0] << 8 | l4[1]), bpf_ntohs(k.sport));
		new_l4 = add16(add16(0, (__u16)ty4 << 8 | l4[1]), bpf_ntohs(v.sport));
	}
	struct ip4 n;
	if (!ipv4_header_5_1(&n, cfg, h, len4, proto4, v.src, v.dst, src4, dst4))
		return 0;
	int w = hook_header_out(ctx, ETH_HLEN_ + 40 + plen, ETH_P_IP_, &n, 20);
	if (w <= 0)
		return w;
	__u32 l4_at = ETH_HLEN_ + 20;
	if (proto4 == IPPROTO_ICMP_) {
		// The checksum move (old_l4 -> new_l4) covers the identifier too.
		if (hook_store(ctx, l4_at + 4, &v.sport, 2) ||
		    icmp_type_out(ctx, l4_at, ty4, old_l4, new_l4))
			return -1;
	} else {
		__u32 at = l4_at + csum_off(proto4);
		// The addresses in the pseudo-header, then the source port (RFC
		// 1624; the port is data, not pseudo-header).
		if (pseudo_header_out(ctx, at, proto4, v.sum6, v.sum4) ||
		    hook_store(ctx, l4_at, &v.sport, 2) ||
		    hook_l4_csum(ctx, at, bpf_ntohs(k.sport), bpf_ntohs(v.sport), 0,
				 proto4 == IPPROTO_UDP_))
			return -1;
	}
	return fwd_finish(ctx, &fwd);
}

// RFC 6146 §3.5 + RFC 7915 §4: an IPv4 packet of an installed session.
static HOOK_PATH int nat64_v4_to_v6(hook_ctx *ctx, const struct config *cfg)
{
	void *end;
	struct ip4 *h = ip4_in(ctx, &end);
	if (!h)
		return 0;
	__u32 total = bpf_ntohs(h->total_len);
	__u32 l4_len = total - 20;
	__u32 out = 40 + l4_len;
	if (!ipv6_fits(cfg, h, out))
		return 0;
	__u8 *l4 = (__u8 *)(h + 1);
	if ((void *)(l4 + 8) > end)
		return 0;
	__u8 proto4 = h->proto;
	if (!l4_ok(proto4, IPPROTO_ICMP_, 8, 0, l4, l4_len))
		return 0;
	if (proto4 == IPPROTO_TCP_) {
		if ((void *)(l4 + 20) > end || (l4[13] & TCP_STATE_FLAGS))
			return 0;
	}
	struct nat64_key4 k = {};
	__builtin_memcpy(k.src, h->src, 4);
	__builtin_memcpy(k.dst, h->dst, 4);
	k.proto = proto4;
	nat64_ports(proto4, IPPROTO_ICMP_, l4, &k.sport, &k.dport);
	struct nat64_to6 *e = bpf_map_lookup_elem(&nat64_4to6, &k);
	if (!e)
		return 0;
	struct nat64_to6 v = *e;
	if (!routed_to_slow_path(ctx, cfg, 0, h->src, total))
		return 0;
	__u8 proto6 = proto4 == IPPROTO_ICMP_ ? IPPROTO_ICMPV6_ : proto4;
	__u8 ports[4];
	__builtin_memcpy(ports, &v.sport, 2);
	__builtin_memcpy(ports + 2, &v.dport, 2);
	struct fwd fwd;
	if (!fwd_lookup(ctx, &fwd, cfg->slow_ifindex, AF_INET6_, v.src, v.dst, out, proto6, l4, end,
			ports))
		return 0;
	nat64_seen(&e->last_seen_ns);

	struct ip6 n;
	ipv6_header_4_1(&n, cfg, h, l4_len, proto6, v.src, v.dst);
	__u16 old_l4 = 0, new_l4 = 0;
	__u8 ty6 = 0;
	if (proto4 == IPPROTO_ICMP_) {
		// RFC 7915 §4.2: the type changes and the pseudo-header comes;
		// RFC 6146 §3.5.3: the identifier becomes the IPv6 host's.
		__u16 pseudo = add16(add16(v.sum6, fold(l4_len)), IPPROTO_ICMPV6_);
		ty6 = l4[0] == 8 ? 128 : 129;
		old_l4 = add16(add16(0, (__u16)l4[0] << 8 | l4[1]), bpf_ntohs(k.dport));
		new_l4 = add16(add16(pseudo, (__u16)ty6 << 8 | l4[1]), bpf_ntohs(v.dport));
	}

	int w = hook_header_out(ctx, ETH_HLEN_ + total, ETH_P_IPV6_, &n, 40);
	if (w <= 0)
		return w;
	__u32 l4_at = ETH_HLEN_ + 40;
	if (proto6 == IPPROTO_ICMPV6_) {
		if (hook_store(ctx, l4_at + 4, &v.dport, 2) ||
		    icmp_type_out(ctx, l4_at, ty6, old_l4, new_l4))
			return -1;
	} else {
		__u32 at = l4_at + csum_off(proto6);
		if (pseudo_header_out(ctx, at, proto6, v.sum4, v.sum6) ||
		    hook_store(ctx, l4_at + 2, &v.dport, 2) ||
		    hook_l4_csum(ctx, at, bpf_ntohs(k.dport), bpf_ntohs(v.dport), 0,
				 proto6 == IPPROTO_UDP_))
			return -1;
	}
	return fwd_finish(ctx, &fwd);
}

// Mode nat64: only installed sessions; `which` gets the counter of the
// direction.
static __always_inline int nat64_translate(hook_ctx *ctx, const struct config *cfg,
					   __be16 eth_proto, __u32 *which)
{
	if (eth_proto == bpf_htons(ETH_P_IPV6_)) {
		*which = C_TRANSLATED_6TO4;
		return nat64_v6_to_v4(ctx, cfg);
	}
	if (eth_proto == bpf_htons(ETH_P_IP_)) {
		*which = C_TRANSLATED_4TO6;
		return nat64_v4_to_v6(ctx, cfg);
	}
	return 0;
}
