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
//
// On the XDP hook (hook_xdp.h) there is no bpf_redirect_neigh: a packet whose
// next hop is unresolved is left untranslated by fwd_lookup, before anything
// changes, and goes up to the core and the kernel, which resolve it; so
// redirected_neigh stays 0 there. "kernel" is XDP_PASS of the translated
// frame: the kernel's IP input routes it, as TC_ACT_OK does on the TC hook.

#ifndef SIXGATE_FORWARD_H
#define SIXGATE_FORWARD_H

// hook_ctx and the hook_* primitives (hook_tc.h or hook_xdp.h) come first.

#define FWD_AF_INET 2
#define FWD_AF_INET6 10
#define FWD_ICMP 1
#define FWD_TCP 6
#define FWD_ICMPV6 58

// fwd_finish's results, > 0 (translated): the hook's action is fwd_action's.
#define FWD_KERNEL 1
#define FWD_REDIRECT 2

enum {
	F_REDIRECTED,       // bpf_redirect with the FIB's MAC addresses
	F_REDIRECTED_NEIGH, // bpf_redirect_neigh: the kernel resolves the next hop
	F_KERNEL,           // TC_ACT_OK / XDP_PASS: the kernel routes it
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
// until_ns (FastPath::hand_over): a stopped daemon left this program running
// for the next start to take over (docs/restart.md, "With the fast path");
// past this CLOCK_MONOTONIC time it translates nothing, so that a stop with
// no start after it ends. 0: no end (the daemon runs).
struct fwd_config {
	__u32 redirect_only;
	__u32 _pad;
	__u64 until_ns;
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
// not fit the egress MTU, past a handover's end (fwd_config.until_ns),
// with redirect_only when the program could not forward it, or on XDP when
// its next hop is unresolved: the caller passes it up untranslated.
static __always_inline int fwd_lookup(hook_ctx *ctx, struct fwd *f, __u32 iif,
				      int family, const __u8 *src, const __u8 *dst, __u32 len,
				      __u8 proto, const __u8 *l4, const void *end,
				      const __u8 *ports)
{
	__u32 zero = 0;
	const struct fwd_config *c = bpf_map_lookup_elem(&fwd_config, &zero);
	if (!c || (c->until_ns && bpf_ktime_get_coarse_ns() > c->until_ns))
		return 0;
	__builtin_memset(f, 0, sizeof(*f));
	struct bpf_fib_lookup *p = &f->p;
	p->ifindex = iif ? iif : hook_ingress_ifindex(ctx);
	p->family = family;
	p->l4_protocol = proto;
	// A GSO packet leaves as segments of gso_size payload bytes behind the
	// headers (bpf_skb_change_proto keeps gso_size): the MTU applies to those.
	__u32 gso_size = hook_gso_size(ctx);
	if (gso_size) {
		__u32 l4h = 8;
		if (proto == FWD_TCP) {
			if ((const void *)(l4 + 13) > end)
				return 0;
			l4h = (l4[12] >> 4) * 4;
		}
		__u32 seg = (family == FWD_AF_INET6 ? 40 : 20) + l4h + gso_size;
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
	f->ret = bpf_fib_lookup(ctx, p, sizeof(*p), 0);
	if (f->ret == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return 0;
	if (!HOOK_HAS_REDIRECT_NEIGH && f->ret == BPF_FIB_LKUP_RET_NO_NEIGH)
		return 0;
	if (f->ret != BPF_FIB_LKUP_RET_SUCCESS && f->ret != BPF_FIB_LKUP_RET_NO_NEIGH) {
		// Looked up again: one pointer fewer kept across the FIB call.
		const struct fwd_config *r = bpf_map_lookup_elem(&fwd_config, &zero);
		if (r && r->redirect_only)
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
static __always_inline int fwd_finish(hook_ctx *ctx, const struct fwd *f)
{
	if (f->ret == BPF_FIB_LKUP_RET_SUCCESS) {
		// The Ethernet header: destination, then source.
		__u8 mac[12];
		__builtin_memcpy(mac, f->p.dmac, 6);
		__builtin_memcpy(mac + 6, f->p.smac, 6);
		if (hook_redirect(ctx, mac, f->p.ifindex))
			return -1;
		fwd_count(F_REDIRECTED);
		return FWD_REDIRECT;
	}
	if (HOOK_HAS_REDIRECT_NEIGH && f->ret == BPF_FIB_LKUP_RET_NO_NEIGH) {
		// The FIB left the next hop (the gateway, or the destination
		// on-link; an IPv4 route may have an IPv6 gateway, RFC 8950) in the
		// destination field, and its family in family.
		if (hook_redirect_neigh(ctx, &f->p))
			return -1;
		fwd_count(F_REDIRECTED_NEIGH);
		return FWD_REDIRECT;
	}
	fwd_count(F_KERNEL);
	return FWD_KERNEL;
}

// The hook's action for a translated packet (fwd_finish's result).
static __always_inline int fwd_action(int r)
{
	return r == FWD_REDIRECT ? HOOK_REDIRECT : HOOK_PASS;
}

#endif
