//! Builds the TC fast path (bpf/siit_tc.c, which includes bpf/nat64.h) with
//! clang. Without clang the object is empty and the daemon runs without the
//! fast path, saying why.

fn main() {
    // The headers siit_tc.c includes (config_maps.h, mapt_br.h, nat64.h,
    // forward.h, header_in.h, header_out.h).
    println!("cargo:rerun-if-changed=bpf");
    sixgate_bpf_build::compile(
        "bpf/siit_tc.c",
        "siit_tc.o",
        "the TC fast path is not available (every packet takes the TUN data plane)",
    );
}
