// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// What every part of the fast path shares, whatever the hook: the protocol
// numbers and the RFC 1071 / RFC 1624 arithmetic (as sixgate_core::checksum).
// Included first, by hook_tc.h and hook_xdp.h.

#ifndef SIXGATE_COMMON_H
#define SIXGATE_COMMON_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_HLEN_ 14
#define ETH_P_IP_ 0x0800
#define ETH_P_IPV6_ 0x86DD
#define IPPROTO_ICMP_ 1
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17
#define IPPROTO_ICMPV6_ 58

static __always_inline __u16 fold(__u64 acc)
{
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	return (__u16)acc;
}

static __always_inline __u16 add16(__u16 a, __u16 b)
{
	return fold((__u64)a + b);
}

static __always_inline __u64 words(const __u8 *p, int n)
{
	__u64 acc = 0;
#pragma unroll
	for (int i = 0; i < n; i += 2)
		acc += ((__u64)p[i] << 8) | p[i + 1];
	return acc;
}

#endif
