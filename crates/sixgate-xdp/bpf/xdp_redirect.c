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
// takes the host's own traffic.
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

// Receive queue -> the AF_XDP socket of the worker that owns it.
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

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
		hit = v && *v;
	}
	if (!hit)
		return XDP_PASS;
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
