//! Builds the TUN steering program (bpf/steer.c) with clang. Without clang the
//! object is empty and the daemon falls back to one worker, saying why.

fn main() {
    sixgate_bpf_build::compile(
        "bpf/steer.c",
        "steer.o",
        "nat64 and mapt-br with several workers will fall back to one",
    );
}
