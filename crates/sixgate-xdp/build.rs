//! Builds the XDP program (bpf/xdp_redirect.c) with clang. Without clang the
//! object is empty and `dataplane = "xdp"` fails at start, saying why.

fn main() {
    sixgate_bpf_build::compile(
        "bpf/xdp_redirect.c",
        "xdp_redirect.o",
        "dataplane = \"xdp\" will refuse to start",
    );
}
