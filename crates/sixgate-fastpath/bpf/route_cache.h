// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// The route check's answers, kept per CPU (siit.h, routed_to_slow_path): a
// flow's packets do not each ask the FIB "would the kernel route you into
// the slow path's device?", the dearest part of the program on a 64-byte
// packet (docs/PERFORMANCE.md, "The route check's cost").
//
// An answer holds for one generation of the kernel's routing. The daemon
// (src/route_watch.rs) starts a new generation for every rtnetlink message
// that can change an answer (routes, rules, addresses, links, nexthops,
// forwarding netconf) and once a second for what rtnetlink does not
// announce (PMTU exceptions); an answer of an older generation is not used,
// nor one of a generation over 3 s old (a watcher that stopped). Generation
// 0 is no cache: every packet asks the FIB, as BPF_PROG_TEST_RUN does and as
// a daemon without the watcher would.
//
// Only "yes, into the device, at this length" is kept; every other answer
// passes the packet up and is asked again next time.

#ifndef SIXGATE_ROUTE_CACHE_H
#define SIXGATE_ROUTE_CACHE_H

#include "common.h"

#define ROUTE_SLOTS 256

// The question (addresses, ingress interface, family) and the answer's
// reach: the longest IP packet the FIB let through (0: only GSO
// super-packets, which the FIB checks against no MTU, were seen).
struct route_entry {
	__u64 gen;
	__u64 src[2];
	__u64 dst[2];
	__u32 ifindex;
	__u32 v6;
	__u32 ok_len;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ROUTE_SLOTS);
	__type(key, __u32);
	__type(value, struct route_entry);
} route_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} route_gen SEC(".maps");

// The question being asked, per CPU (the program's stack has no room for
// it): the cache's key, the generation it is asked in, and the FIB's form
// of it for a miss.
struct route_question {
	__u64 src[2];
	__u64 dst[2];
	__u64 gen;
	__u32 ifindex;
	__u32 v6;
	__u32 len;
	__u32 pad;
	struct bpf_fib_lookup fib;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct route_question);
} route_question SEC(".maps");

// How the route check answered, per CPU: from a kept answer, or by asking
// the FIB (FastPath::counters: route_kept, route_asked).
enum {
	R_KEPT,
	R_ASKED,
	R_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, R_MAX);
	__type(key, __u32);
	__type(value, __u64);
} route_counters SEC(".maps");

static __always_inline void route_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&route_counters, &which);
	if (c)
		*c += 1;
}

// A generation stands for at most this long without a new one (the daemon
// starts one a second): if its thread stops, or its writes fail, the kept
// answers age out and every packet asks the FIB again.
#define ROUTE_GEN_MAX_AGE_NS 3000000000LL

// The routing generation now (0: no cache). The daemon writes
// CLOCK_MONOTONIC at each new one, the clock bpf_ktime_get_coarse_ns reads
// (up to a tick behind: a generation a little "in the future" is current).
static __always_inline __u64 route_generation(void)
{
	__u32 zero = 0;
	__u64 *g = bpf_map_lookup_elem(&route_gen, &zero);
	if (!g || !*g)
		return 0;
	__u64 gen = *g;
	if ((__s64)(bpf_ktime_get_coarse_ns() - gen) > ROUTE_GEN_MAX_AGE_NS)
		return 0;
	return gen;
}

// An address as two words (IPv4: the first word's low half, the rest 0).
static __always_inline void route_words(int v6, const __u8 *a, __u64 w[2])
{
	w[0] = 0;
	w[1] = 0;
	if (v6) {
		__builtin_memcpy(w, a, 16);
	} else {
		__u32 x;
		__builtin_memcpy(&x, a, 4);
		w[0] = x;
	}
}

// The question's slot: a multiplicative hash of the addresses' words.
static __always_inline struct route_entry *route_slot(const struct route_question *q)
{
	__u64 x = (q->src[0] ^ q->src[1]) * 0x9e3779b97f4a7c15ULL ^ (q->dst[0] ^ q->dst[1]) ^
		  q->ifindex;
	__u32 slot = (__u32)((x * 0x9e3779b97f4a7c15ULL) >> 56) & (ROUTE_SLOTS - 1);
	return bpf_map_lookup_elem(&route_cache, &slot);
}

// The entry holds this question (its answer in any generation, any length).
static __always_inline int route_same(const struct route_entry *e,
				      const struct route_question *q)
{
	return e->src[0] == q->src[0] && e->src[1] == q->src[1] && e->dst[0] == q->dst[0] &&
	       e->dst[1] == q->dst[1] && e->ifindex == q->ifindex && e->v6 == q->v6;
}

// 1: this generation already said "into the device" for the question at
// its length (0: a GSO super-packet) or longer.
static __always_inline int route_known(const struct route_entry *e,
				       const struct route_question *q)
{
	return e && q->gen && e->gen == q->gen && route_same(e, q) && q->len <= e->ok_len;
}

// Keep the FIB's "into the device" for the question, in the generation read
// before the FIB was asked: a change since has a newer one and retires it.
// The slot is written whole: it held another question or generation, or
// this one at a shorter length (route_known missed), so `len` is its reach.
static __always_inline void route_keep(struct route_entry *e, const struct route_question *q)
{
	if (!e || !q->gen)
		return;
	// The generation last: a half-written entry never matches.
	e->gen = 0;
	e->src[0] = q->src[0];
	e->src[1] = q->src[1];
	e->dst[0] = q->dst[0];
	e->dst[1] = q->dst[1];
	e->ifindex = q->ifindex;
	e->v6 = q->v6;
	e->ok_len = q->len;
	e->gen = q->gen;
}

#endif
