//! Builds the fast path's two programs with clang: the TC one
//! (bpf/siit_tc.c) and the XDP one (bpf/siit_xdp.c), one translation
//! (bpf/siit.h and the headers it includes) behind each hook's primitives
//! (bpf/hook_tc.h, bpf/hook_xdp.h). Without clang the objects are empty and
//! the daemon runs without the fast path, saying why.

fn main() {
    // The headers both include (siit.h, common.h, config_maps.h, mapt_br.h,
    // nat64.h, forward.h, header_in.h, header_out.h, hook_*.h).
    println!("cargo:rerun-if-changed=bpf");
    sixgate_bpf_build::compile(
        "bpf/siit_tc.c",
        "siit_tc.o",
        "the TC fast path is not available (every packet takes the TUN data plane)",
    );
    sixgate_bpf_build::compile(
        "bpf/siit_xdp.c",
        "siit_xdp.o",
        "the XDP fast path is not available (fastpath = \"xdp\" falls back to TC)",
    );
}
