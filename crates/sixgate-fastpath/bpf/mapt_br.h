// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// MAP-T Border Relay on the fast path (RFC 7599 §7; docs/fastpath.md): the
// Mapping Rules (RFC 7597 §5) in two LPM tries, one keyed by the rule IPv6
// prefix (6 -> 4: whose MAP address is the source?), one by the rule IPv4
// prefix (4 -> 6: which CE owns the destination and its port?). The DMR is
// pool6. The scope is sixgate_core::fastpath (mapt_source,
// mapt_destination): a packet from outside its CE's port set (RFC 7597
// §8.1), a MAP address whose interface identifier disagrees with its EA bits
// (§5.2), a port no PSID owns, or a CE-to-CE hairpin goes up to the core,
// which drops, counts or hairpins it as without the fast path.
//
// A CLAT (RFC 6877) needs nothing here: its translation is SIIT's, with the
// PLAT prefix as pool6 and its customer range as an EAM entry.
//
// Included by siit_tc.c after its address helpers (be64, put64, map_v6,
// map_v4) and struct config.

// The rules live in the configuration trie (config_maps.h, kinds XLAT_MAPT4
// and XLAT_MAPT6), swapped with the rest of the configuration.

// The rule whose IPv6 prefix is the longest match for the first 64 bits of
// `a` (r <= 64).
static __always_inline const struct mapt_rule *mapt_rule6(void *xlat, const __u8 *a)
{
	struct xlat_key k = {.prefixlen = 8 + 64, .kind = XLAT_MAPT6};
	__builtin_memcpy(k.addr, a, 8);
	union xlat_val *v = bpf_map_lookup_elem(xlat, &k);
	return v ? &v->mapt : 0;
}

// What a MAP address claims (RFC 7597 §5.2), for the port check after the
// upper-layer header has been read.
struct mapt_claim {
	__u16 psid;
	__u8 k, a, m;
};

// The port a rule reads: TCP / UDP source or destination port, or the ICMP
// Echo identifier (RFC 7599 §6). l4 has 8 readable bytes (checked).
static __always_inline __u16 mapt_port(__u8 proto, const __u8 *l4, int source)
{
	if (proto == IPPROTO_TCP_ || proto == IPPROTO_UDP_)
		return source ? ((__u16)l4[0] << 8 | l4[1]) : ((__u16)l4[2] << 8 | l4[3]);
	return (__u16)l4[4] << 8 | l4[5];
}

// RFC 7597 §5.1 (MapRule::psid_of_port): the PSID that owns port; 0 for the
// ports no PSID owns (A = 0 when a > 0).
static __always_inline int mapt_psid_of_port(__u8 k, __u8 a, __u8 m, __u16 port, __u16 *psid)
{
	if (!k) {
		*psid = 0;
		return 1;
	}
	// The loader's rules have k <= 16, a + k <= 16 and m = 16 - a - k.
	if (a && ((__u32)port >> (16 - a)) == 0)
		return 0;
	*psid = (__u16)(((__u32)port >> m) & ((1U << k) - 1));
	return 1;
}

// RFC 7599 §7, 6 -> 4: the IPv4 source of a MAP address (MapRule::decode):
// under the longest rule IPv6 prefix, its interface identifier equal to 16
// zero bits, the IPv4 address and the PSID its EA bits give. Without MAP-T:
// EAM and pool6 (map_v6).
static __always_inline int map_v6_source(const struct config *cfg, void *xlat, const __u8 *a,
					 __u32 *v4, struct mapt_claim *claim)
{
	if (!cfg->mapt_br)
		return map_v6(cfg, xlat, a, v4);
	const struct mapt_rule *r = mapt_rule6(xlat, a);
	if (!r)
		return 0;
	__u64 hi = be64(a), lo = be64(a + 8);
	__u64 ea = 0;
	if (r->ea && r->ea <= 48 && r->ea_shift < 64)
		ea = (hi >> r->ea_shift) & ((1ULL << r->ea) - 1);
	__u8 k = r->k;
	__u16 psid = (__u16)(ea & ((1U << k) - 1));
	__u32 v = r->v4 | (__u32)(ea >> k);
	if (lo != (((__u64)v << 16) | psid))
		return 0;
	*v4 = v;
	claim->psid = psid;
	claim->k = r->k;
	claim->a = r->a;
	claim->m = r->m;
	return 1;
}

// RFC 7597 §8.1: a CE sends only from its own port set. l4 has 8 readable
// bytes and is TCP, UDP or an Echo (checked).
static __always_inline int mapt_source_port_ok(const struct config *cfg,
					       const struct mapt_claim *c, __u8 proto,
					       const __u8 *l4)
{
	if (!cfg->mapt_br || !c->k)
		return 1;
	__u16 psid;
	return mapt_psid_of_port(c->k, c->a, c->m, mapt_port(proto, l4, 1), &psid) &&
	       psid == c->psid;
}

// The rule whose IPv4 prefix holds v4 (host order), if any.
static __always_inline const struct mapt_rule *mapt_rule4(void *xlat, __u32 v4)
{
	struct xlat_key k = {.prefixlen = 8 + 32, .kind = XLAT_MAPT4};
	__u32 be = bpf_htonl(v4);
	__builtin_memcpy(k.addr, &be, 4);
	union xlat_val *v = bpf_map_lookup_elem(xlat, &k);
	return v ? &v->mapt : 0;
}

// RFC 7599 §7: a BR's packet from one CE to another goes back into IPv6 in
// the core.
static __always_inline int mapt_hairpin(const struct config *cfg, void *xlat, __u32 dst4)
{
	return cfg->mapt_br && mapt_rule4(xlat, dst4);
}

// RFC 7599 §7, 4 -> 6: the destination's MAP address (RFC 7597 §5.2,
// MapRule::map_address): End-user prefix (rule prefix, then the EA bits:
// IPv4 suffix and the PSID of the destination port), then 16 zero bits, the
// IPv4 address and the PSID. Only the rules: a BR serves nothing else.
// Without MAP-T: EAM and pool6 (map_v4). l4 has 8 readable bytes.
static __always_inline int map_v4_destination(const struct config *cfg, void *xlat,
					      const __u8 *a, __u8 proto, const __u8 *l4, __u8 *v6)
{
	if (!cfg->mapt_br)
		return map_v4(cfg, xlat, a, v6);
	__u32 v4 = ((__u32)a[0] << 24) | ((__u32)a[1] << 16) | ((__u32)a[2] << 8) | a[3];
	const struct mapt_rule *r = mapt_rule4(xlat, v4);
	if (!r)
		return 0;
	__u16 psid;
	if (!mapt_psid_of_port(r->k, r->a, r->m, mapt_port(proto, l4, 0), &psid))
		return 0;
	__u32 len = r->v4_len;
	__u32 suffix = len >= 32 ? 0 : len == 0 ? v4 : v4 & (~0U >> len);
	__u64 ea = ((__u64)suffix << r->k) | psid;
	__u64 hi = r->v6;
	if (r->ea && r->ea_shift < 64)
		hi |= ea << r->ea_shift;
	put64(v6, hi);
	put64(v6 + 8, ((__u64)v4 << 16) | psid);
	return 1;
}
