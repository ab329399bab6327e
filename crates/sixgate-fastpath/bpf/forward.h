// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// Forwarding from the fast path (docs/fastpath.md, "Forwarding"): the
// program sends the packet it translated out of the egress interface itself
// (bpf_redirect, or bpf_redirect_neigh while the next hop's neighbour is
// unresolved) instead of handing it back to the kernel's IP input, which would
// route it a second time (and apply rp_filter to a source routed elsewhere).
//
// Two steps, both for one translated packet:
//  - fwd_lookup, before the packet changes: the FIB lookup of the translated
//    header. A packet whose translation would not fit the egress MTU is not
//    translated (0: pass it up unchanged), so the core answers it exactly as
//    without the fast path (RFC 7915 §4 / §5: fragments, Packet Too Big or
//    Fragmentation Needed through the kernel).
//  - fwd_finish, after the translation: redirect, or hand it to the kernel
//    when the FIB gave no answer the program can act on (local, unreachable,
//    prohibited, forwarding disabled, ...): the kernel decides, as before.
//
// How translated packets left is counted per CPU in fwd_counters:
// translated_6to4 + translated_4to6 = redirected + redirected_neigh + kernel.

#ifndef SIXGATE_FORWARD_H
#define SIXGATE_FORWARD_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define FWD_AF_INET 2
#define FWD_AF_INET6 10
#define FWD_ICMP 1
#define FWD_TCP 6
#define FWD_ICMPV6 58

// fwd_finish's results, > 0 (translated): the TC action is fwd_action's.
#define FWD_KERNEL 1
#define FWD_REDIRECT 2

enum {
	F_REDIRECTED,       // bpf_redirect with the FIB's MAC addresses
	F_REDIRECTED_NEIGH, // bpf_redirect_neigh: the kernel resolves the next hop
	F_KERNEL,           // TC_ACT_OK: the kernel routes it
	F_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, F_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fwd_counters SEC(".maps");

// Written by the loader (FastPath::set_redirect_only). redirect_only: translate
// only what the program forwards itself, and pass up untranslated what the
// FIB has no forwarding answer for: with strict rp_filter on the ingress
// interface the kernel would drop such a translated packet, whose source is
// routed into the slow path's device. Set once at start, from the host's
// sysctl: outside the configuration trie (config_maps.h), so a reload's swap
// neither needs nor changes it.
struct fwd_config {
	__u32 redirect_only;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fwd_config);
} fwd_config SEC(".maps");

// One translated packet's way out, from fwd_lookup to fwd_finish.
struct fwd {
	struct bpf_fib_lookup p;
	long ret;
};

// Where the translated packet goes (family: of the translated header; src,
// dst: its addresses; len: its IP length; proto, l4, end: its transport
// header, read for a GSO packet's segment size; ports: the translated
// packet's source and destination ports, 4 bytes: NAT64 changes them, SIIT
// does not). `iif`: the interface the lookup runs for: the slow path's
// device, where the core's translations enter the kernel, so policy routing
// and the per-device forwarding switch answer as for them; 0: the ingress
// interface.
// Returns 0 when the translated packet (a GSO packet: each segment) would
// not fit the egress MTU, or with redirect_only when the program could not
// forward it: the caller passes it up untranslated.
static __always_inline int fwd_lookup(struct __sk_buff *skb, struct fwd *f, __u32 iif,
				      int family, const __u8 *src, const __u8 *dst, __u32 len,
				      __u8 proto, const __u8 *l4, const void *end,
				      const __u8 *ports)
{
	__builtin_memset(f, 0, sizeof(*f));
	struct bpf_fib_lookup *p = &f->p;
	p->ifindex = iif ? iif : skb->ingress_ifindex;
	p->family = family;
	p->l4_protocol = proto;
	// A GSO packet leaves as segments of gso_size payload bytes behind the
	// headers (bpf_skb_change_proto keeps gso_size): the MTU applies to those.
	if (skb->gso_size) {
		__u32 l4h = 8;
		if (proto == FWD_TCP) {
			if ((const void *)(l4 + 13) > end)
				return 0;
			l4h = (l4[12] >> 4) * 4;
		}
		__u32 seg = (family == FWD_AF_INET6 ? 40 : 20) + l4h + skb->gso_size;
		if (seg < len)
			len = seg;
	}
	// tot_len is 16 bits: a larger translation (4 -> 6 near 64 KiB) is
	// the core's.
	if (len > 0xffff)
		return 0;
	p->tot_len = len;
	// The ports, for policy rules and multipath hashing by L4 (ICMP: none).
	if (proto != FWD_ICMP && proto != FWD_ICMPV6) {
		if ((const void *)(l4 + 4) > end)
			return 0;
		__builtin_memcpy(&p->sport, ports, 2);
		__builtin_memcpy(&p->dport, ports + 2, 2);
	}
	if (family == FWD_AF_INET6) {
		__builtin_memcpy(p->ipv6_src, src, 16);
		__builtin_memcpy(p->ipv6_dst, dst, 16);
	} else {
		__builtin_memcpy(&p->ipv4_src, src, 4);
		__builtin_memcpy(&p->ipv4_dst, dst, 4);
	}
	f->ret = bpf_fib_lookup(skb, p, sizeof(*p), 0);
	if (f->ret == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return 0;
	if (f->ret != BPF_FIB_LKUP_RET_SUCCESS && f->ret != BPF_FIB_LKUP_RET_NO_NEIGH) {
		__u32 zero = 0;
		const struct fwd_config *c = bpf_map_lookup_elem(&fwd_config, &zero);
		if (c && c->redirect_only)
			return 0;
	}
	return 1;
}

static __always_inline void fwd_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&fwd_counters, &which);
	if (c)
		*c += 1;
}

// After the translation: send it on. FWD_REDIRECT, FWD_KERNEL, or -1 when a
// helper failed (the translated packet is dropped as aborted).
static __always_inline int fwd_finish(struct __sk_buff *skb, const struct fwd *f)
{
	if (f->ret == BPF_FIB_LKUP_RET_SUCCESS) {
		// The Ethernet header: destination, then source.
		__u8 mac[12];
		__builtin_memcpy(mac, f->p.dmac, 6);
		__builtin_memcpy(mac + 6, f->p.smac, 6);
		// Flags 0: the MAC header is outside the checksum complete covers.
		if (bpf_skb_store_bytes(skb, 0, mac, 12, 0))
			return -1;
		if (bpf_redirect(f->p.ifindex, 0) != TC_ACT_REDIRECT)
			return -1;
		fwd_count(F_REDIRECTED);
		return FWD_REDIRECT;
	}
	if (f->ret == BPF_FIB_LKUP_RET_NO_NEIGH) {
		// The FIB left the next hop (the gateway, or the destination
		// on-link; an IPv4 route may have an IPv6 gateway, RFC 8950) in the
		// destination field, and its family in family.
		struct bpf_redir_neigh nh = {.nh_family = f->p.family};
		if (f->p.family == FWD_AF_INET6)
			__builtin_memcpy(nh.ipv6_nh, f->p.ipv6_dst, 16);
		else
			nh.ipv4_nh = f->p.ipv4_dst;
		if (bpf_redirect_neigh(f->p.ifindex, &nh, sizeof(nh), 0) != TC_ACT_REDIRECT)
			return -1;
		fwd_count(F_REDIRECTED_NEIGH);
		return FWD_REDIRECT;
	}
	fwd_count(F_KERNEL);
	return FWD_KERNEL;
}

// The TC action for a translated packet (fwd_finish's result).
static __always_inline int fwd_action(int r)
{
	return r == FWD_REDIRECT ? TC_ACT_REDIRECT : TC_ACT_OK;
}

#endif
