// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// The fast path's configuration as one swappable map (docs/fastpath.md,
// "Configuration changes"). A configuration is one LPM trie holding
// everything a packet's translation reads from the loader:
//
//   kind 0   the struct config element (key: the kind byte alone, /8);
//   kind 4   RFC 7757 EAM entries by their IPv4 prefix;
//   kind 6   the same entries by their IPv6 prefix;
//   kind 14  MAP-T BR Mapping Rules (RFC 7597 §5) by their IPv4 prefix;
//   kind 16  the same rules by their IPv6 prefix (mapt_br.h).
//
// The program reaches the trie through the single slot of `xlat`, an
// ARRAY_OF_MAPS. The loader builds a new trie for every change and installs
// it with one update of that slot; a packet looks the slot up once and reads
// its config and both EAM sides from the trie it got, so it is translated
// wholly under the old configuration or wholly under the new one. The kernel
// keeps a replaced trie alive (RCU) until the packets reading it are done.
// An empty slot, or a trie without a config element, passes everything up.
//
// Needs struct config (siit_tc.c) defined before it is included.

#ifndef SIXGATE_CONFIG_MAPS_H
#define SIXGATE_CONFIG_MAPS_H

// One EAM side at most this many entries, and at most MAPT_RULES_MAX rules
// (sixgate_core::fastpath::MAPT_RULES_MAX); the trie holds the config
// element and both sides of each (sixgate_fastpath::xlat::XLAT_MAX_ENTRIES).
#define EAM_MAX_ENTRIES 4096
#define MAPT_RULES_MAX 1024
#define XLAT_MAX_ENTRIES (1 + 2 * EAM_MAX_ENTRIES + 2 * MAPT_RULES_MAX)

enum xlat_kind {
	XLAT_CONFIG = 0,
	XLAT_EAM4 = 4,
	XLAT_EAM6 = 6,
	XLAT_MAPT4 = 14,
	XLAT_MAPT6 = 16,
};

// prefixlen counts the kind byte's 8 bits, then the address's.
struct xlat_key {
	__u32 prefixlen;
	__u8 kind;
	__u8 addr[16];
	__u8 _pad[3];
};

// RFC 7757 EAM, both sides (sixgate_core::addr::eam): the longest match on
// one side gives the other side's prefix and the shift that places the
// suffix: IPv4 = prefix | (IPv6 suffix >> shift), IPv6 = prefix | (IPv4
// suffix << shift).
struct eam6_val {
	__u32 v4;       // host order
	__u32 v6_len;
	__u32 shift;
};

struct eam4_val {
	__u64 hi, lo;   // the IPv6 prefix, host order halves
	__u32 v4_len;
	__u32 shift;
};

// One MAP-T Mapping Rule (sixgate_core::mapt::MapRule), as the loader
// writes it (sixgate_fastpath::xlat, MaptRuleVal).
struct mapt_rule {
	__u64 v6;	// the rule IPv6 prefix's upper 64 bits (r + o <= 64), host order
	__u32 v4;	// the rule IPv4 prefix, host order
	__u8 v4_len;
	__u8 ea;	// EA-bits length o (<= 48)
	__u8 k;		// PSID length (§5.1)
	__u8 a;		// PSID offset (0 when k = 0)
	__u8 m;		// 16 - a - k
	__u8 ea_shift;	// where the EA bits end in the upper 64 bits: 64 - (r + o)
	__u8 _pad[6];
};

union xlat_val {
	struct config config;
	struct eam6_val eam6;
	struct eam4_val eam4;
	struct mapt_rule mapt;
};

// Sizes rather than __type: clang emits the key and value types of an inner
// map definition only as forward declarations, which have no size.
struct xlat_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XLAT_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct xlat_key));
	__uint(value_size, sizeof(union xlat_val));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct xlat_trie);
} xlat SEC(".maps");

// The configuration this packet runs under (NULL: none, pass it up). Looked
// up once per packet: every later lookup goes to the same trie.
static __always_inline void *xlat_current(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&xlat, &zero);
}

static __always_inline const struct config *xlat_config(void *trie)
{
	struct xlat_key k = {.prefixlen = 8, .kind = XLAT_CONFIG};
	union xlat_val *v = bpf_map_lookup_elem(trie, &k);
	return v ? &v->config : 0;
}

// The EAM entry whose IPv6 prefix is the longest match for `a`.
static __always_inline const struct eam6_val *eam6_lookup(void *trie, const __u8 *a)
{
	struct xlat_key k = {.prefixlen = 8 + 128, .kind = XLAT_EAM6};
	__builtin_memcpy(k.addr, a, 16);
	union xlat_val *v = bpf_map_lookup_elem(trie, &k);
	return v ? &v->eam6 : 0;
}

// The EAM entry whose IPv4 prefix is the longest match for `a`
// (network order).
static __always_inline const struct eam4_val *eam4_lookup(void *trie, const __u8 *a)
{
	struct xlat_key k = {.prefixlen = 8 + 32, .kind = XLAT_EAM4};
	__builtin_memcpy(k.addr, a, 4);
	union xlat_val *v = bpf_map_lookup_elem(trie, &k);
	return v ? &v->eam4 : 0;
}

#endif
