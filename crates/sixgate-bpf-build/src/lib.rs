//! Compiles one of sixgate's eBPF programs (C) with clang from a build script,
//! so that sixgate-tun (TUN steering) and sixgate-xdp (XDP redirect) build
//! theirs the same way. Without clang the crate using it still builds: the
//! object is left empty, and loading it fails at run time with the reason the
//! caller gives.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// Compile `src` (relative to the crate) into `$OUT_DIR/{object}`. `missing`
/// says what the daemon does without the program; it is printed as a cargo
/// warning when clang cannot be run. A program that does not compile fails the
/// build.
pub fn compile(src: &str, object: &str, missing: &str) {
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join(object);
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
                "cargo:warning=cannot run {clang} ({e}): {src} is not built; {missing} \
                 (scripts/setup.sh installs clang)"
            );
            std::fs::write(&out, []).unwrap_or_else(|e| panic!("write empty {object}: {e}"));
        }
    }
}
