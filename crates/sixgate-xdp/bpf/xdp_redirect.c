// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// sixgate's XDP program (docs/xdp.md). Attached to the IPv6-side and the
// IPv4-side interface; it decides, for every frame the interface receives,
// whether sixgate translates it:
//
//   IPv6, destination in dst6 (pool6, EAM IPv6 prefixes, the CLAT's prefix)
//   IPv4, destination in dst4 (EAM IPv4 prefixes, pool4; clat: 0.0.0.0/0)
//       -> redirected to the AF_XDP socket of the receiving queue (xsks)
//   anything else (ARP, Neighbour Discovery, traffic to the host itself)
//       -> XDP_PASS, the kernel handles it as if sixgate were not there
//
// The tries' value says which: 1 translate, 0 pass. The interfaces' own
// addresses are in them with 0, so a wide prefix (a CLAT's 0.0.0.0/0) never
// takes the host's own traffic. 2 (IPv4 only) is the default pool4, the host's
// own address: translate only what is for the pool4's ports (pool4_ports): TCP
// and UDP destination ports, Echo Replies' identifiers, the source port or
// identifier an ICMP error quotes (RFC 6146 §3.4: the error goes to the
// port's owner); pass the rest, the host's own connections. A non-first
// fragment carries no port: it follows its first fragment (map pool4_frags),
// or goes to the kernel if that was not redirected.
//
// A queue without a socket in xsks also passes (bpf_redirect_map's fallback
// action), so nothing is lost while sixgate starts or stops. The daemon fills
// both tries from the configuration before attaching the program.

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_HLEN_ 14
#define ETH_P_IP_ 0x0800
#define ETH_P_IPV6_ 0x86DD
#define ETH_P_8021Q_ 0x8100

struct lpm4_key {
	__u32 prefixlen;
	__u32 addr; // network order
};

struct lpm6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm4_key);
	__type(value, __u8);
} dst4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm6_key);
	__type(value, __u8);
} dst6 SEC(".maps");

// The default pool4's ports and ICMP identifiers: FIRST << 16 | LAST.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} pool4_ports SEC(".maps");

// RFC 6146 §3.4: datagrams to the default pool4 whose first fragment was
// redirected, so that their later fragments, which carry no port, follow it.
// Bounded: the least recently used entry makes room.
struct frag_key {
	__u32 saddr;
	__u32 daddr;
	__u16 id;
	__u8 proto;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct frag_key);
	__type(value, __u8);
} pool4_frags SEC(".maps");

// Receive queue -> the AF_XDP socket of the worker that owns it.
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

static __always_inline __u16 be16(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

// Trie value 2: is this IPv4 packet for one of the default pool4's ports?
static __always_inline int for_pool4_port(__u8 *ip, void *end)
{
	__u32 zero = 0;
	__u32 *range = bpf_map_lookup_elem(&pool4_ports, &zero);
	if (!range)
		return 0;
	struct frag_key fk = {.proto = ip[9], .pad = 0};
	__builtin_memcpy(&fk.saddr, ip + 12, 4);
	__builtin_memcpy(&fk.daddr, ip + 16, 4);
	__builtin_memcpy(&fk.id, ip + 4, 2);
	// Non-first fragments (offset != 0) carry no port: they follow their
	// first fragment.
	if ((ip[6] & 0x1f) | ip[7])
		return bpf_map_lookup_elem(&pool4_frags, &fk) != 0;
	__u32 ihl = (ip[0] & 0x0f) * 4;
	if (ihl < 20)
		return 0;
	__u8 *l4 = ip + ihl;
	__u16 port;
	if (ip[9] == 6 || ip[9] == 17) {
		if ((void *)(l4 + 4) > end)
			return 0;
		port = be16(l4 + 2);
	} else if (ip[9] == 1) {
		if ((void *)(l4 + 8) > end)
			return 0;
		if (l4[0] == 0) {
			port = be16(l4 + 4); // Echo Reply: identifier
		} else if (l4[0] == 3 || l4[0] == 11 || l4[0] == 12) {
			// The quoted header: 20 bytes (what sixgate sends has no options).
			__u8 *q = l4 + 8;
			if ((void *)(q + 28) > end)
				return 0;
			if (q[9] == 6 || q[9] == 17)
				port = be16(q + 20); // its source port
			else if (q[9] == 1)
				port = be16(q + 24); // its Echo's identifier
			else
				return 0;
		} else {
			return 0;
		}
	} else {
		return 0;
	}
	if (port < (*range >> 16) || port > (*range & 0xffff))
		return 0;
	// A first fragment (MF set): remember its datagram.
	if (ip[6] & 0x20) {
		__u8 one = 1;
		bpf_map_update_elem(&pool4_frags, &fk, &one, BPF_ANY);
	}
	return 1;
}

SEC("xdp")
int sixgate_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data;

	if ((void *)(eth + ETH_HLEN_) > end)
		return XDP_PASS;
	__u16 proto = ((__u16)eth[12] << 8) | eth[13];
	__u8 *ip = eth + ETH_HLEN_;
	int hit = 0;

	if (proto == ETH_P_IPV6_) {
		// Destination: bytes 24..40 of the IPv6 header.
		if ((void *)(ip + 40) > end)
			return XDP_PASS;
		struct lpm6_key k = { .prefixlen = 128 };
		__builtin_memcpy(k.addr, ip + 24, 16);
		__u8 *v = bpf_map_lookup_elem(&dst6, &k);
		hit = v && *v;
	} else if (proto == ETH_P_IP_) {
		// Destination: bytes 16..20 of the IPv4 header.
		if ((void *)(ip + 20) > end)
			return XDP_PASS;
		struct lpm4_key k = { .prefixlen = 32 };
		__builtin_memcpy(&k.addr, ip + 16, 4);
		__u8 *v = bpf_map_lookup_elem(&dst4, &k);
		hit = v && (*v == 1 || (*v == 2 && for_pool4_port(ip, end)));
	}
	if (!hit)
		return XDP_PASS;
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
