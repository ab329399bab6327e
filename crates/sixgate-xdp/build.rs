//! Builds the XDP program (bpf/xdp_redirect.c) with clang, like sixgate-tun's
//! steering program. Without clang the crate still builds: the object is left
//! empty and `dataplane = "xdp"` fails at start, saying why.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "bpf/xdp_redirect.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("xdp_redirect.o");
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
    // Debian keeps asm/types.h under the multiarch directory.
    let multiarch = format!(
        "-I/usr/include/{}-linux-gnu",
        env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".to_owned())
    );
    let status = Command::new(&clang)
        .args([
            "-target", "bpf", "-O2", "-g", "-Wall", "-Werror", &multiarch, "-c", src, "-o",
        ])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed on {src} ({s})"),
        Err(e) => {
            println!(
                "cargo:warning=cannot run {clang} ({e}): the XDP program is not built; \
                 dataplane = \"xdp\" will refuse to start (scripts/setup.sh installs clang)"
            );
            std::fs::write(&out, []).expect("write empty xdp_redirect.o");
        }
    }
}
