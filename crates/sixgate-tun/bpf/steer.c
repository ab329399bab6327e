// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// sixgate's TUN steering program (stateful NAT64, docs/architecture.md,
// "Multi-core without a shared table"; and the MAP-T BR, mode 1). Attached with TUNSETSTEERINGEBPF as a
// BPF_PROG_TYPE_SOCKET_FILTER program: the kernel runs it on every packet it
// routes into the TUN device and takes its return value (modulo the number of
// queues) as the queue, that is the worker, to hand the packet to.
//
// It must pick the same worker as the Rust definitions in
// sixgate_core::nat64::steering (a test runs both over random packets):
//
//   IPv6: subscriber_worker(source)        ICMPv6 error: of the inner destination
//   IPv4: port_owner(destination port)     ICMP query: of the identifier
//                                          ICMPv4 error: of the inner source port
//                                          or identifier
//   IPv4 to a static BIB entry: the worker of its IPv6 side (map static_bib)
//   IPv4 later fragment: where its first fragment went (map fragments), else
//                        Identification % workers
//
// On a TUN device (IFF_TUN) the packet starts with the IP header. Socket
// filters have no direct packet access: everything is read with
// bpf_skb_load_bytes. Anything too short or unknown goes to queue 0.
//
// Mode 1 (flow, the MAP-T BR, docs/mapt.md): every fragment of a datagram,
// first and later, to one worker (by source, destination, Identification,
// protocol), so that the BR's per-worker fragment table sees them all; anything
// else by its 5-tuple. Same as sixgate_core::mapt::steering.

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Set at load time (EbpfLoader::set_global); the values here are placeholders.
const volatile __u32 workers = 1;
// 0: nat64 (by state owner), 1: flow (MAP-T BR: fragments of a datagram together).
const volatile __u32 mode = 0;
// IPv6 prefix length that makes one subscriber (subscriber_prefix_len).
const volatile __u32 subscriber_prefix_len = 128;
// Ports per group: 2, or the port-block size (port_owner).
const volatile __u32 port_group = 2;
// RFC 7422 deterministic NAT (sixgate_core::nat64::Deterministic::worker): a
// source under det_hi:det_lo/det_len is subscriber i = its bits det_len ..
// subscriber_prefix_len, on worker (det_first_group + i / det_addrs) % workers,
// the owner of its block's ports. det_addrs = 0: off.
const volatile __u64 det_hi = 0;
const volatile __u64 det_lo = 0;
const volatile __u32 det_len = 0;
const volatile __u32 det_first_group = 0;
const volatile __u32 det_addrs = 0;

// Static BIB entries, by their IPv4 transport address: the worker of their
// IPv6 side. Filled by the daemon before the program is attached.
struct static_bib_key {
	__u32 addr;  // IPv4 address, network order
	__u16 port;  // port or ICMP identifier, host order
	__u8 proto;  // 6, 17 or 1
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct static_bib_key);
	__type(value, __u32);
} static_bib SEC(".maps");

// IPv4 datagrams whose first fragment this program steered: the queue it
// picked, so that the later fragments, which carry no port, follow it to the
// worker that holds the datagram's mapping (RFC 6146 §3.4). Bounded: the
// least recently used entry makes room (a datagram's fragments come within
// moments of each other). A later fragment with no entry (its first not seen
// yet, or pushed out) goes by its Identification, as before.
struct frag_key {
	__u32 saddr; // network order
	__u32 daddr; // network order
	__u16 id;    // network order
	__u8 proto;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct frag_key);
	__type(value, __u32);
} fragments SEC(".maps");

#define IPPROTO_ICMP_ 1
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17
#define IPPROTO_ICMPV6_ 58

static __always_inline __u32 port_owner(__u32 port)
{
	__u32 w = workers ? workers : 1;
	__u32 g = port_group ? port_group : 1;
	return (port / g) % w;
}

static __always_inline __u64 mask64(__u32 len)
{
	if (len == 0)
		return 0;
	if (len >= 64)
		return ~0ULL;
	return ~0ULL << (64 - len);
}

// subscriber_worker: (fold(addr & mask(len)) * 0x9E3779B97F4A7C15 >> 32) % workers,
// fold(x) = high 64 bits ^ low 64 bits.
static __always_inline __u32 deterministic_worker(__u64 hi, __u64 lo, __u32 *out)
{
	__u32 plen = det_len, slen = subscriber_prefix_len;
	__u32 w = workers ? workers : 1;
	if (det_addrs == 0 || plen > 128 || slen > 128 || slen < plen || slen - plen > 32)
		return 0;
	if ((hi & mask64(plen)) != det_hi)
		return 0;
	if (plen > 64 && (lo & mask64(plen - 64)) != det_lo)
		return 0;
	// The address >> (128 - slen), low 32 bits.
	__u32 sh = 128 - slen;
	__u64 v;
	if (sh == 0)
		v = lo;
	else if (sh < 64)
		v = (lo >> sh) | (hi << (64 - sh));
	else if (sh < 128)
		v = hi >> (sh - 64);
	else
		v = 0;
	__u32 bits = slen - plen;
	__u64 i = bits >= 32 ? (v & 0xffffffffULL) : (v & ((1ULL << bits) - 1));
	*out = (__u32)((det_first_group + i / det_addrs) % w);
	return 1;
}

static __always_inline __u32 subscriber_worker(__u64 hi, __u64 lo)
{
	__u32 len = subscriber_prefix_len;
	__u32 w = workers ? workers : 1;
	__u32 det;
	if (deterministic_worker(hi, lo, &det))
		return det;
	if (len > 128)
		len = 128;
	hi &= mask64(len);
	lo &= len > 64 ? mask64(len - 64) : 0;
	__u64 h = (hi ^ lo) * 0x9E3779B97F4A7C15ULL;
	return (__u32)((h >> 32) % w);
}

static __always_inline int load_be16(struct __sk_buff *skb, __u32 off, __u32 *out)
{
	__u16 v;
	if (bpf_skb_load_bytes(skb, off, &v, sizeof(v)) < 0)
		return -1;
	*out = bpf_ntohs(v);
	return 0;
}

// An IPv6 address at off, as two host-order 64-bit halves.
static __always_inline int load_addr6(struct __sk_buff *skb, __u32 off, __u64 *hi, __u64 *lo)
{
	__u64 a[2];
	if (bpf_skb_load_bytes(skb, off, a, sizeof(a)) < 0)
		return -1;
	*hi = bpf_be64_to_cpu(a[0]);
	*lo = bpf_be64_to_cpu(a[1]);
	return 0;
}

static __always_inline int is_ext6(__u8 nh)
{
	// Hop-by-Hop, Routing, Fragment, Destination Options (RFC 8200 §4).
	return nh == 0 || nh == 43 || nh == 44 || nh == 60;
}

static __always_inline __u32 steer6(struct __sk_buff *skb)
{
	__u8 hdr[8];
	__u64 hi, lo;

	if (bpf_skb_load_bytes(skb, 0, hdr, 8) < 0)
		return 0;
	__u8 nh = hdr[6];
	__u32 off = 40;
	// Walk at most four extension headers to find ICMPv6.
#pragma unroll
	for (int i = 0; i < 4; i++) {
		if (!is_ext6(nh))
			break;
		__u8 ext[2];
		if (bpf_skb_load_bytes(skb, off, ext, 2) < 0)
			goto by_source;
		if (nh == 44) {
			// Only a first fragment (offset 0) carries the ICMPv6 header.
			__u32 fo;
			if (load_be16(skb, off + 2, &fo) < 0 || (fo & 0xfff8) != 0)
				goto by_source;
			off += 8;
		} else {
			off += ((__u32)ext[1] + 1) * 8;
		}
		nh = ext[0];
	}
	if (nh == IPPROTO_ICMPV6_) {
		__u8 type;
		if (bpf_skb_load_bytes(skb, off, &type, 1) < 0)
			goto by_source;
		// Error messages (types 0-127) carry the packet we sent towards a
		// subscriber: its destination is the subscriber.
		if (type < 128 && load_addr6(skb, off + 8 + 24, &hi, &lo) == 0)
			return subscriber_worker(hi, lo);
	}
by_source:
	if (load_addr6(skb, 8, &hi, &lo) < 0)
		return 0;
	return subscriber_worker(hi, lo);
}

// The owner of IPv4 transport address (addr, port, proto): a static BIB entry's
// worker, or port_owner.
static __always_inline __u32 owner4(__u32 addr, __u32 port, __u8 proto)
{
	struct static_bib_key k = {
		.addr = addr,
		.port = (__u16)port,
		.proto = proto,
		.pad = 0,
	};
	__u32 *w = bpf_map_lookup_elem(&static_bib, &k);
	if (w)
		return *w;
	return port_owner(port);
}

static __always_inline int icmp4_is_query(__u8 type)
{
	return type == 0 || type == 8; // Echo Reply, Echo Request
}

static __always_inline int icmp4_is_error(__u8 type)
{
	// Destination Unreachable, Time Exceeded, Parameter Problem.
	return type == 3 || type == 11 || type == 12;
}

static __always_inline __u32 by_ports4(struct __sk_buff *skb, const __u8 *h);

static __always_inline __u32 steer4(struct __sk_buff *skb)
{
	__u8 h[20];

	if (bpf_skb_load_bytes(skb, 0, h, 20) < 0)
		return 0;
	__u32 ihl = (__u32)(h[0] & 15) * 4;
	__u32 flags_frag = (__u32)h[6] << 8 | h[7];
	struct frag_key k = {.proto = h[9], .pad = 0};
	__builtin_memcpy(&k.saddr, &h[12], 4);
	__builtin_memcpy(&k.daddr, &h[16], 4);
	__builtin_memcpy(&k.id, &h[4], 2);
	// A non-first fragment carries no port: it follows its first fragment,
	// or, if that was not seen, goes by its ID.
	if ((flags_frag & 0x1fff) != 0 || ihl < 20) {
		__u32 *q = bpf_map_lookup_elem(&fragments, &k);
		if (q)
			return *q;
		return (((__u32)h[4] << 8) | h[5]) % (workers ? workers : 1);
	}
	__u32 q = by_ports4(skb, h);
	// A first fragment (MF set): remember where its datagram goes.
	if (flags_frag & 0x2000)
		bpf_map_update_elem(&fragments, &k, &q, BPF_ANY);
	return q;
}

// An IPv4 packet with its transport header: the owner of its pool4 port.
static __always_inline __u32 by_ports4(struct __sk_buff *skb, const __u8 *h)
{
	__u32 port;
	__u32 ihl = (__u32)(h[0] & 15) * 4;
	__u8 proto = h[9];
	__u32 daddr;
	__builtin_memcpy(&daddr, &h[16], 4);

	if (proto == IPPROTO_TCP_ || proto == IPPROTO_UDP_) {
		if (load_be16(skb, ihl + 2, &port) < 0)
			return 0;
		return owner4(daddr, port, proto);
	}
	if (proto != IPPROTO_ICMP_)
		return 0;

	__u8 type;
	if (bpf_skb_load_bytes(skb, ihl, &type, 1) < 0)
		return 0;
	if (icmp4_is_query(type)) {
		if (load_be16(skb, ihl + 4, &port) < 0)
			return 0;
		return owner4(daddr, port, IPPROTO_ICMP_);
	}
	if (!icmp4_is_error(type))
		return 0;

	// The inner packet is one we sent: its source is our pool4 address and port.
	__u32 in = ihl + 8;
	__u8 ih[20];
	if (bpf_skb_load_bytes(skb, in, ih, 20) < 0)
		return 0;
	__u32 iihl = (__u32)(ih[0] & 15) * 4;
	__u8 iproto = ih[9];
	__u32 saddr;
	__builtin_memcpy(&saddr, &ih[12], 4);
	if (iihl < 20)
		return 0;
	if (iproto == IPPROTO_TCP_ || iproto == IPPROTO_UDP_) {
		if (load_be16(skb, in + iihl, &port) < 0)
			return 0;
		return owner4(saddr, port, iproto);
	}
	if (iproto == IPPROTO_ICMP_) {
		__u8 itype;
		if (bpf_skb_load_bytes(skb, in + iihl, &itype, 1) < 0 || !icmp4_is_query(itype))
			return 0;
		if (load_be16(skb, in + iihl + 4, &port) < 0)
			return 0;
		return owner4(saddr, port, IPPROTO_ICMP_);
	}
	return 0;
}

// Mode 1: sixgate_core::mapt::steering. h = 0; for each word x: h = (h ^ x) * K;
// queue = (h >> 32) % workers.
#define FLOW_MULTIPLIER 0x9E3779B97F4A7C15ULL

static __always_inline __u64 mix(__u64 h, __u64 x)
{
	return (h ^ x) * FLOW_MULTIPLIER;
}

static __always_inline __u32 pick(__u64 h)
{
	__u32 w = workers ? workers : 1;
	return (__u32)((h >> 32) % w);
}

// src_port << 24 | dst_port << 8 | protocol; ports 0 unless TCP or UDP.
static __always_inline __u64 ports_word(struct __sk_buff *skb, __u32 off, __u8 proto)
{
	__u32 sp = 0, dp = 0;
	if (proto == IPPROTO_TCP_ || proto == IPPROTO_UDP_) {
		if (load_be16(skb, off, &sp) < 0 || load_be16(skb, off + 2, &dp) < 0)
			sp = dp = 0;
	}
	return (__u64)sp << 24 | (__u64)dp << 8 | proto;
}

static __always_inline __u32 flow4(struct __sk_buff *skb)
{
	__u8 h[20];
	if (bpf_skb_load_bytes(skb, 0, h, 20) < 0)
		return 0;
	__u32 ihl = (__u32)(h[0] & 15) * 4;
	__u8 proto = h[9];
	__u64 a = (__u64)h[12] << 56 | (__u64)h[13] << 48 | (__u64)h[14] << 40 |
		  (__u64)h[15] << 32 | (__u64)h[16] << 24 | (__u64)h[17] << 16 |
		  (__u64)h[18] << 8 | h[19];
	// MF or a fragment offset: a fragment (RFC 791 §3.2), named by its ID.
	if ((((__u32)h[6] << 8) | h[7]) & 0x3fff) {
		__u64 id = ((__u32)h[4] << 8) | h[5];
		return pick(mix(mix(0, a), id << 8 | proto));
	}
	if (ihl < 20)
		return pick(mix(mix(0, a), proto));
	return pick(mix(mix(0, a), ports_word(skb, ihl, proto)));
}

static __always_inline __u32 flow6(struct __sk_buff *skb)
{
	__u8 hdr[8];
	__u64 shi, slo, dhi, dlo;
	if (bpf_skb_load_bytes(skb, 0, hdr, 8) < 0 || load_addr6(skb, 8, &shi, &slo) < 0 ||
	    load_addr6(skb, 24, &dhi, &dlo) < 0)
		return 0;
	__u64 h = mix(mix(0, shi ^ slo), dhi ^ dlo);
	__u8 nh = hdr[6];
	__u32 off = 40;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		if (!is_ext6(nh))
			break;
		// Every extension header is at least 8 bytes long.
		__u8 ext[8];
		if (bpf_skb_load_bytes(skb, off, ext, 8) < 0)
			return pick(mix(h, nh));
		if (nh == 44) {
			// A Fragment header (RFC 8200 §4.5): its ID and next header.
			__u64 id = (__u32)ext[4] << 24 | (__u32)ext[5] << 16 | (__u32)ext[6] << 8 | ext[7];
			return pick(mix(h, id << 8 | ext[0]));
		}
		off += ((__u32)ext[1] + 1) * 8;
		nh = ext[0];
	}
	return pick(mix(h, ports_word(skb, off, nh)));
}

SEC("socket")
int sixgate_steer(struct __sk_buff *skb)
{
	__u8 v;
	if (bpf_skb_load_bytes(skb, 0, &v, 1) < 0)
		return 0;
	switch (v >> 4) {
	case 4:
		return mode == 1 ? flow4(skb) : steer4(skb);
	case 6:
		return mode == 1 ? flow6(skb) : steer6(skb);
	default:
		return 0;
	}
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
