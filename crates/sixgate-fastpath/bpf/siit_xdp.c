// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// sixgate's XDP fast path (docs/fastpath.md, "XDP"): the TC program's
// translation (siit.h, the same decisions, maps and counters) on the XDP
// hook, for NICs with native XDP. Its packet access is hook_xdp.h: the
// header swap by bpf_xdp_adjust_head, RFC 1624 checksums by hand, out by
// bpf_redirect or up with XDP_PASS. "xdp.frags": multi-buffer (jumbo) frames
// too, their headers in the linear part.

#include "hook_xdp.h"
#include "siit.h"

SEC("xdp.frags")
int sixgate_fastpath_xdp(struct xdp_md *ctx)
{
	return fastpath_run(ctx);
}
