// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// sixgate's TC fast path (docs/fastpath.md): a tc/tcx ingress program that
// translates the common packets in the kernel and passes everything else up
// unchanged (TC_ACT_OK) to the data plane that runs the Rust core, the exact
// slow path. The translation is siit.h's, shared with the XDP program
// (siit_xdp.c); this hook's packet access is hook_tc.h.

#include "hook_tc.h"
#include "siit.h"

SEC("classifier")
int sixgate_fastpath(struct __sk_buff *skb)
{
	return fastpath_run(skb);
}
