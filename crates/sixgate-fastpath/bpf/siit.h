// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// sixgate's fast path (docs/fastpath.md), the part both hooks share: the
// TC ingress program (siit_tc.c, hook_tc.h) and the XDP one (siit_xdp.c,
// hook_xdp.h) include it after their hook's packet access and mutation
// primitives, and are this code with those. It translates the common
// stateless SIIT packets in the kernel and passes everything else up
// unchanged (HOOK_PASS) to the data plane that runs the Rust core, the exact
// slow path.
//
// The scope is sixgate_core::fastpath::is_fast_path_candidate, and the
// translation is the core's, byte for byte (tests/differential.rs checks both
// with BPF_PROG_TEST_RUN, on both hooks): EAM (RFC 7757, LPM tries), then pool6 /96
// (RFC 6052 §2.2) for both addresses, no hairpin (RFC 7757 §4), no
// IPv4 options or IPv6 extension headers, no fragments, TTL / hop limit > 1,
// link-layer padding trimmed,
// TCP, UDP with a checksum, or ICMP Echo / Echo Reply; RFC 7915 §4.1 / §5.1
// header mapping, RFC 1624 incremental checksums, the core's IPv4
// Identification rule (DF=0 up to 1260 bytes with a per-flow counter).
//
// A MAP-T BR (RFC 7599 §7) is the same translation with the addresses on the
// domain side from the Mapping Rules and the ports (mapt_br.h); a CLAT
// (RFC 6877) is SIIT with the PLAT prefix as pool6.
//
// Nothing here drops a packet: a packet the core would drop, answer with an
// ICMP error, fragment or keep state for is not a candidate and goes up.

#ifndef SIXGATE_HOOK_H
#error "include hook_tc.h or hook_xdp.h first"
#endif

#include "forward.h"

#define IPV4_DF 0x4000
#define IPV4_MF 0x2000
#define IPV4_OFFSET 0x1fff
// RFC 7915 §5.1 Flags: a translated IPv4 packet up to this size has DF=0
// (sixgate_core::rfc7915::v6_to_v4::DF_THRESHOLD_V4).
#define DF_THRESHOLD_V4 1260
#define ID_SLOTS 1024

// The configuration, written by the loader (sixgate_fastpath::BpfConfig),
// read from the current configuration trie (config_maps.h).
struct config {
	__u64 ipv4_id_key;      // for the Identification hash (RFC 6864)
	__u8 pool6[12];         // the /96 prefix
	__u8 has_pool6;
	__u8 wkp_nonglobal;     // RFC 6052 §3.1: refuse non-global IPv4 addresses
	__u8 decrement_hop_limit;
	__u8 reset_tos;         // 6 -> 4: TOS = new_tos
	__u8 new_tos;
	__u8 reset_traffic_class; // 4 -> 6: Traffic Class = 0
	__u8 mapt_br;           // RFC 7599 §7: a MAP-T BR (mapt_br.h)
	__u8 nat64;             // mode nat64: installed sessions only (nat64.h)
	__u16 ipv4_mtu;         // 0: unset
	__u16 ipv6_mtu;         // 0: unset
	__u16 v6_fragment_limit;
	__u16 _pad1;
	// The slow path's device (the TUN device): only a packet the kernel
	// would route there is the translator's. 0: no check (BPF_PROG_TEST_RUN).
	__u32 slow_ifindex;
};

// The configuration and the EAM entries, one trie swapped whole (config_maps.h).
#include "config_maps.h"
// The route check's answers, per CPU and routing generation.
#include "route_cache.h"

// RFC 6864 per-flow IPv4 ID counters, one table per CPU as the core keeps one
// per worker (sixgate_core::ipv4_id), seeded with the same start values.
struct ids {
	__u16 c[ID_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ids);
} ids SEC(".maps");

// Per-CPU counters, one per verdict:
// received = translated (both ways) + passed + aborted.
enum {
	C_RECEIVED,
	C_TRANSLATED_6TO4,
	C_TRANSLATED_4TO6,
	C_PASSED,
	C_ABORTED,
	C_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		*c += 1;
}

// --- sixgate_core::hash::keyed over one word, and the IPv4 ID rule ---

#define HASH_K 0x9e3779b97f4a7c15ULL

static __always_inline __u64 folded_multiply(__u64 a, __u64 b)
{
	__u64 a0 = a & 0xffffffff, a1 = a >> 32;
	__u64 b0 = b & 0xffffffff, b1 = b >> 32;
	__u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	__u64 mid = (p00 >> 32) + (p01 & 0xffffffff) + (p10 & 0xffffffff);
	__u64 lo = (p00 & 0xffffffff) | (mid << 32);
	__u64 hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
	return lo ^ hi;
}

static __always_inline __u64 keyed1(__u64 key, __u64 w)
{
	const __u64 m = ((HASH_K << 23) | (HASH_K >> 41)) | 1;
	return folded_multiply((key ^ HASH_K) ^ w, m);
}

// sixgate_core::ipv4_id::Ipv4IdGenerator::next. Returns -1 without a table.
static __always_inline int next_id(const struct config *cfg, __u32 src, __u32 dst,
				   __u8 proto)
{
	__u32 zero = 0;
	struct ids *t = bpf_map_lookup_elem(&ids, &zero);
	if (!t)
		return -1;
	__u64 flow = ((__u64)src << 32) | dst;
	__u64 h = keyed1(cfg->ipv4_id_key, flow ^ (((__u64)proto << 57) | proto));
	__u32 slot = (__u32)(h % ID_SLOTS) & (ID_SLOTS - 1);
	__u16 c = t->c[slot] + 1;
	t->c[slot] = c;
	return (__u16)(c + (__u16)(h >> 48));
}

// --- would the kernel hand this packet to the slow path? ---

#define AF_INET_ 2
#define AF_INET6_ 10

// The slow path only sees what the kernel routes into its device: the
// translator's prefixes, not the host's own addresses (which pool6 can
// embed) nor anything else. Ask the kernel's FIB, policy rules included, or
// the answer it gave this flow in the same routing generation
// (route_cache.h). A packet too big for the device
// (BPF_FIB_LKUP_RET_FRAG_NEEDED) goes up too: the kernel answers it as it
// would without the fast path. `addrs`: the source address and the
// destination right after it, as both headers have them.
static __always_inline int routed_to_slow_path(hook_ctx *ctx, const struct config *cfg, int v6,
					  const __u8 *addrs, __u32 ip_len)
{
	__u32 slow = cfg->slow_ifindex;
	if (!slow)
		return 1;
	__u32 zero = 0;
	struct route_question *q = bpf_map_lookup_elem(&route_question, &zero);
	if (!q)
		return 0;
	// Everything in q: only ctx and q stay live across the calls below.
	q->ifindex = hook_ingress_ifindex(ctx);
	q->v6 = v6;
	// A GSO super-packet is segmented for the device: its length says
	// nothing about the MTU.
	q->len = hook_gso_segs(ctx) > 1 ? 0 : ip_len;
	route_words(v6, addrs, q->src);
	route_words(v6, addrs + (v6 ? 16 : 4), q->dst);
	q->gen = route_generation();
	struct route_entry *e = route_slot(q);
	if (route_known(e, q)) {
		route_count(R_KEPT);
		return 1;
	}
	route_count(R_ASKED);
	struct bpf_fib_lookup *p = &q->fib;
	__builtin_memset(p, 0, sizeof(*p));
	p->ifindex = q->ifindex;
	p->tot_len = q->len;
	if (v6) {
		p->family = AF_INET6_;
		__builtin_memcpy(p->ipv6_src, q->src, 16);
		__builtin_memcpy(p->ipv6_dst, q->dst, 16);
	} else {
		p->family = AF_INET_;
		p->ipv4_src = (__u32)q->src[0];
		p->ipv4_dst = (__u32)q->dst[0];
	}
	long r = bpf_fib_lookup(ctx, p, sizeof(*p), BPF_FIB_LOOKUP_SKIP_NEIGH);
	if (r != BPF_FIB_LKUP_RET_SUCCESS || p->ifindex != slow)
		return 0;
	route_keep(e, q);
	return 1;
}

// --- address checks, as sixgate_core::fastpath ---

// RFC 1812 §5.3.7, RFC 3927 §7 (sixgate_core::packet::ipv4::is_never_forwarded).
// Strict whatever [translator] class_e says: a packet from or to 240.0.0.0/4
// is passed up, and the core translates or drops it as configured.
static __always_inline int never_forwarded(const __u8 *a)
{
	return a[0] == 0 || a[0] == 127 || (a[0] == 169 && a[1] == 254) || a[0] >= 224;
}

// RFC 6052 §3.1 (sixgate_core::addr::ipv4_scope::is_non_global).
static __always_inline int non_global(const __u8 *a)
{
	switch (a[0]) {
	case 0: case 10: case 127: return 1;
	case 100: return (a[1] & 0xc0) == 64;
	case 169: return a[1] == 254;
	case 172: return (a[1] & 0xf0) == 16;
	case 192:
		if (a[1] == 0 && a[2] == 0)
			return !(a[3] == 9 || a[3] == 10);
		return (a[1] == 0 && a[2] == 2) || a[1] == 168;
	case 198: return (a[1] & 0xfe) == 18 || (a[1] == 51 && a[2] == 100);
	case 203: return a[1] == 0 && a[2] == 113;
	default: return a[0] >= 224;
	}
}


static __always_inline __u64 be64(const __u8 *p)
{
	__u64 x = 0;
#pragma unroll
	for (int i = 0; i < 8; i++)
		x = (x << 8) | p[i];
	return x;
}

static __always_inline void put64(__u8 *p, __u64 x)
{
#pragma unroll
	for (int i = 7; i >= 0; i--) {
		p[i] = (__u8)x;
		x >>= 8;
	}
}

// The IPv4 address of an IPv6 one: EAM, then pool6 (sixgate_core Mapper::map_v6).
// 0 when it has none (or pool6 embeds one RFC 6052 §3.1 refuses).
static __always_inline int map_v6(const struct config *cfg, void *xlat, const __u8 *a,
				  __u32 *v4)
{
	const struct eam6_val *e = eam6_lookup(xlat, a);
	if (e) {
		__u64 hi = be64(a), lo = be64(a + 8);
		__u32 host = 128 - e->v6_len, s = e->shift;
		// The suffix: the host bits of the IPv6 side.
		if (host <= 64) {
			lo &= host == 64 ? ~0ULL : host ? (~0ULL >> (64 - host)) : 0;
			hi = 0;
		} else if (host < 128) {
			hi &= ~0ULL >> (128 - host);
		}
		__u64 x;
		if (s >= 128)
			x = 0;
		else if (s >= 64)
			x = hi >> (s - 64);
		else if (s == 0)
			x = lo;
		else
			x = (lo >> s) | (hi << (64 - s));
		*v4 = e->v4 | (__u32)x;
		return 1;
	}
	if (!cfg->has_pool6)
		return 0;
#pragma unroll
	for (int i = 0; i < 12; i++)
		if (a[i] != cfg->pool6[i])
			return 0;
	if (cfg->wkp_nonglobal && non_global(a + 12))
		return 0;
	*v4 = ((__u32)a[12] << 24) | ((__u32)a[13] << 16) | ((__u32)a[14] << 8) | a[15];
	return 1;
}

// Is the IPv4 address inside an EAM entry's IPv4 prefix?
static __always_inline int eam_has_v4(void *xlat, __u32 v4)
{
	__u32 be = bpf_htonl(v4);
	return eam4_lookup(xlat, (const __u8 *)&be) != 0;
}

// The IPv6 address of an IPv4 one: EAM, then pool6 (Mapper::map_v4).
static __always_inline int map_v4(const struct config *cfg, void *xlat, const __u8 *a,
				  __u8 *v6)
{
	const struct eam4_val *e = eam4_lookup(xlat, a);
	if (e) {
		__u32 v4 = ((__u32)a[0] << 24) | ((__u32)a[1] << 16) | ((__u32)a[2] << 8) | a[3];
		__u32 host = 32 - e->v4_len, s = e->shift;
		__u64 suffix = host >= 32 ? v4 : (v4 & ((1U << host) - 1));
		__u64 hi = e->hi, lo = e->lo;
		if (s >= 128)
			;
		else if (s >= 64)
			hi |= suffix << (s - 64);
		else if (s == 0)
			lo |= suffix;
		else {
			lo |= suffix << s;
			hi |= suffix >> (64 - s);
		}
		put64(v6, hi);
		put64(v6 + 8, lo);
		return 1;
	}
	if (!cfg->has_pool6 || (cfg->wkp_nonglobal && non_global(a)))
		return 0;
	__builtin_memcpy(v6, cfg->pool6, 12);
	__builtin_memcpy(v6 + 12, a, 4);
	return 1;
}

// RFC 8200: a multicast, unspecified or loopback IPv6 address.
static __always_inline int v6_special(const __u8 *a)
{
	if (a[0] == 0xff)
		return 1;
	__u8 x = 0;
#pragma unroll
	for (int i = 0; i < 15; i++)
		x |= a[i];
	return x == 0 && a[15] <= 1;
}

#include "mapt_br.h"

// TCP (whole header), UDP (non-zero checksum), ICMP Echo / Echo Reply code 0.
static __always_inline int l4_ok(__u8 proto, __u8 icmp, __u8 echo_req, __u8 echo_rep,
				 const __u8 *l4, __u32 l4_len)
{
	if (proto == IPPROTO_TCP_)
		return l4_len >= 20;
	if (proto == IPPROTO_UDP_)
		return l4_len >= 8 && (l4[6] | l4[7]) != 0;
	if (proto == icmp)
		return l4_len >= 8 && (l4[0] == echo_req || l4[0] == echo_rep) && l4[1] == 0;
	return 0;
}

// Pulled into the linear area: the headers and 20 bytes of TCP.
#define L4_PEEK 20

struct ip6 {
	__u8 vtc_flow[4];
	__be16 plen;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 src[16];
	__u8 dst[16];
};

struct ip4 {
	__u8 ver_ihl;
	__u8 tos;
	__be16 total_len;
	__be16 id;
	__be16 flags_frag;
	__u8 ttl;
	__u8 proto;
	__be16 check;
	__u8 src[4];
	__u8 dst[4];
};

#include "header_in.h"
#include "header_out.h"

// RFC 7915 §5: IPv6 -> IPv4.
static HOOK_PATH int v6_to_v4(hook_ctx *ctx, const struct config *cfg,
				    void *xlat)
{
	void *end;
	struct ip6 *h = ip6_in(ctx, &end);
	if (!h)
		return 0;
	__u32 plen = bpf_ntohs(h->plen);
	if (v6_special(h->src) || h->dst[0] == 0xff)
		return 0;
	__u32 src4, dst4;
	struct mapt_claim claim = {};
	if (!map_v6_source(cfg, xlat, h->src, &src4, &claim) || !map_v6(cfg, xlat, h->dst, &dst4))
		return 0;
	__u8 s4[4], d4[4];
	__u32 s4be = bpf_htonl(src4), d4be = bpf_htonl(dst4);
	__builtin_memcpy(s4, &s4be, 4);
	__builtin_memcpy(d4, &d4be, 4);
	if (never_forwarded(s4) || never_forwarded(d4))
		return 0;
	// RFC 7757 §4: a hairpin (an IPv4 destination that EAM maps back into
	// our IPv6 side) is the core's.
	if (eam_has_v4(xlat, dst4) && !eam6_lookup(xlat, h->dst))
		return 0;
	if (mapt_hairpin(cfg, xlat, dst4))
		return 0;
	__u32 len4 = 20 + plen;
	if (!ipv4_fits(cfg, len4))
		return 0;
	// The checks read at most the first 8 bytes of the L4 header.
	__u8 *l4 = (__u8 *)(h + 1);
	if ((void *)(l4 + 8) > end)
		return 0;
	if (!l4_ok(h->nexthdr, IPPROTO_ICMPV6_, 128, 129, l4, plen) ||
	    !mapt_source_port_ok(cfg, &claim, h->nexthdr, l4))
		return 0;
	// RFC 7915 §5.1 per segment: a super-packet leaves as segments of
	// gso_size bytes that all carry its one IPv4 header (DF=1). A segment
	// (a full one, or the shorter last one) that translates to
	// DF_THRESHOLD_V4 bytes or less must have DF=0 and an Identification of
	// its own: such a super-packet is the core's (the TUN plane cuts it in
	// software and translates each segment; tests/differential.rs, GSO).
	__u32 gso = hook_gso_size(ctx);
	if (gso && hook_gso_segs(ctx) > 1) {
		__u32 l4h = 8;
		if (h->nexthdr == IPPROTO_TCP_) {
			if ((void *)(l4 + 13) > end)
				return 0;
			l4h = (l4[12] >> 4) * 4;
		}
		if (plen < l4h)
			return 0;
		__u32 tail = (plen - l4h) % gso;
		if (20 + l4h + gso <= DF_THRESHOLD_V4 ||
		    (tail && 20 + l4h + tail <= DF_THRESHOLD_V4))
			return 0;
	}
	// Last, being the dearest check.
	if (!routed_to_slow_path(ctx, cfg, 1, h->src, 40 + plen))
		return 0;
	struct fwd fwd;
	if (!fwd_lookup(ctx, &fwd, cfg->slow_ifindex, AF_INET_, s4, d4, len4,
			h->nexthdr == IPPROTO_ICMPV6_ ? IPPROTO_ICMP_ : h->nexthdr, l4, end, l4))
		return 0;

	// Everything decided; from here the packet is translated.
	__u8 proto6 = h->nexthdr;
	__u8 proto4 = proto6 == IPPROTO_ICMPV6_ ? IPPROTO_ICMP_ : proto6;
	__u16 v6sum = fold(words(h->src, 32));
	__u16 v4sum = fold((__u64)src4 + dst4);
	__u16 old_l4 = 0, new_l4 = 0;
	if (proto6 == IPPROTO_ICMPV6_) {
		// §5.2: the checksum loses the ICMPv6 pseudo-header, and the type
		// changes (sixgate_core::rfc7915::icmp_informational::retype).
		__u16 pseudo = add16(add16(v6sum, fold(plen)), IPPROTO_ICMPV6_);
		__u8 ty4 = l4[0] == 128 ? 8 : 0;
		old_l4 = add16(pseudo, (__u16)l4[0] << 8 | l4[1]);
		new_l4 = add16(0, (__u16)ty4 << 8 | l4[1]);
	}
	struct ip4 n;
	if (!ipv4_header_5_1(&n, cfg, h, len4, proto4, s4, d4, src4, dst4))
		return 0;
	int w = hook_header_out(ctx, ETH_HLEN_ + 40 + plen, ETH_P_IP_, &n, 20);
	if (w <= 0)
		return w;
	__u32 l4_at = ETH_HLEN_ + 20;
	if (proto4 == IPPROTO_ICMP_ ? icmp_type_out(ctx, l4_at, (__u8)(new_l4 >> 8), old_l4, new_l4)
				    : pseudo_header_out(ctx, l4_at + csum_off(proto4), proto4, v6sum,
							v4sum))
		return -1;
	return fwd_finish(ctx, &fwd);
}

// RFC 7915 §4: IPv4 -> IPv6.
static HOOK_PATH int v4_to_v6(hook_ctx *ctx, const struct config *cfg,
				    void *xlat)
{
	void *end;
	struct ip4 *h = ip4_in(ctx, &end);
	if (!h)
		return 0;
	__u32 total = bpf_ntohs(h->total_len);
	if (never_forwarded(h->src) || never_forwarded(h->dst))
		return 0;
	// Read before the addresses: a MAP-T BR's destination depends on its port.
	__u8 *l4 = (__u8 *)(h + 1);
	if ((void *)(l4 + 8) > end)
		return 0;
	__u8 src6[16], dst6[16];
	if (!map_v4(cfg, xlat, h->src, src6) ||
	    !map_v4_destination(cfg, xlat, h->dst, h->proto, l4, dst6))
		return 0;
	__u32 l4_len = total - 20;
	__u32 out = 40 + l4_len;
	if (!ipv6_fits(cfg, h, out))
		return 0;
	if (!l4_ok(h->proto, IPPROTO_ICMP_, 8, 0, l4, l4_len))
		return 0;
	// Last, being the dearest check.
	if (!routed_to_slow_path(ctx, cfg, 0, h->src, total))
		return 0;
	struct fwd fwd;
	if (!fwd_lookup(ctx, &fwd, cfg->slow_ifindex, AF_INET6_, src6, dst6, out,
			h->proto == IPPROTO_ICMP_ ? IPPROTO_ICMPV6_ : h->proto, l4, end, l4))
		return 0;

	__u8 proto4 = h->proto;
	__u8 proto6 = proto4 == IPPROTO_ICMP_ ? IPPROTO_ICMPV6_ : proto4;
	struct ip6 n;
	ipv6_header_4_1(&n, cfg, h, l4_len, proto6, src6, dst6);
	__u16 v4sum = fold(words(h->src, 8));
	__u16 v6sum = fold(words(n.src, 32));
	__u16 old_l4 = 0, new_l4 = 0;
	__u8 ty6 = 0;
	if (proto4 == IPPROTO_ICMP_) {
		// §4.2: the type changes and the checksum gains the ICMPv6
		// pseudo-header.
		__u16 pseudo = add16(add16(v6sum, fold(l4_len)), IPPROTO_ICMPV6_);
		ty6 = l4[0] == 8 ? 128 : 129;
		old_l4 = add16(0, (__u16)l4[0] << 8 | l4[1]);
		new_l4 = add16(pseudo, (__u16)ty6 << 8 | l4[1]);
	}

	int w = hook_header_out(ctx, ETH_HLEN_ + total, ETH_P_IPV6_, &n, 40);
	if (w <= 0)
		return w;
	__u32 l4_at = ETH_HLEN_ + 40;
	if (proto6 == IPPROTO_ICMPV6_ ? icmp_type_out(ctx, l4_at, ty6, old_l4, new_l4)
				      : pseudo_header_out(ctx, l4_at + csum_off(proto6), proto6, v4sum,
							  v6sum))
		return -1;
	return fwd_finish(ctx, &fwd);
}

#include "nat64.h"

// One packet, either hook: its verdict counted, and the hook's action
// (HOOK_PASS unchanged for the slow path, or the translated packet's way
// out; HOOK_DROP only for one a helper left half translated).
static __always_inline int fastpath_run(hook_ctx *ctx)
{
	count(C_RECEIVED);
	// One configuration for the whole packet: the trie looked up here
	// (config_maps.h), whatever the loader swaps in meanwhile.
	void *xlat = xlat_current();
	const struct config *cfg = xlat ? xlat_config(xlat) : 0;
	__be16 eth_proto = hook_eth_proto(ctx);
	int r = 0;
	__u32 which = C_PASSED;
	if (cfg && cfg->nat64) {
		r = nat64_translate(ctx, cfg, eth_proto, &which);
	} else if (cfg && eth_proto == bpf_htons(ETH_P_IPV6_)) {
		r = v6_to_v4(ctx, cfg, xlat);
		which = C_TRANSLATED_6TO4;
	} else if (cfg && eth_proto == bpf_htons(ETH_P_IP_)) {
		r = v4_to_v6(ctx, cfg, xlat);
		which = C_TRANSLATED_4TO6;
	}
	if (r > 0) {
		count(which);
		return fwd_action(r);
	}
	if (r < 0) {
		count(C_ABORTED);
		return HOOK_DROP;
	}
	count(C_PASSED);
	return HOOK_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";
