//! Builds the TUN steering program (bpf/steer.c) with clang.
//!
//! Without clang the crate still builds: the object is left empty, loading it
//! fails at run time and the daemon falls back to one worker, saying why.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "bpf/steer.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("steer.o");
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
                "cargo:warning=cannot run {clang} ({e}): the TUN steering program is not built; \
                 nat64 with several workers will fall back to one (scripts/setup.sh installs clang)"
            );
            std::fs::write(&out, []).expect("write empty steer.o");
        }
    }
}
