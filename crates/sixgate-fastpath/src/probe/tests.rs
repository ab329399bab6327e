//! docs/fastpath.md, "Kernel requirements".

use super::*;

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/siit_tc.o"));
static OBJECT_XDP: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/siit_xdp.o"));

fn root() -> bool {
    // SAFETY: no arguments, no side effects.
    unsafe { libc::geteuid() == 0 }
}

/// The helper ids the object's code calls (`BPF_JMP | BPF_CALL` with
/// `src_reg` 0; 1 is a BPF-to-BPF call, 2 a kfunc), from its executable
/// ELF64 sections.
fn helpers_called(elf: &[u8]) -> Vec<u32> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    assert_eq!(&elf[..4], b"\x7fELF");
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c));
    const SHF_EXECINSTR: usize = 4;
    let mut ids = Vec::new();
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        let (flags, off, size) = (u64_at(sh + 8), u64_at(sh + 24), u64_at(sh + 32));
        if flags & SHF_EXECINSTR == 0 {
            continue;
        }
        for (j, insn) in elf[off..off + size].chunks_exact(8).enumerate() {
            if insn[0] == 0x85 && insn[1] >> 4 == 0 {
                ids.push(u32_at(off + 8 * j + 4));
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Every helper the built programs call is probed: a helper added to
/// bpf/siit_tc.c (or to the shared code) without a line in `HELPERS` fails
/// here, and one the XDP object calls without a line in `HELPERS_XDP`.
#[test]
fn helpers_cover_the_object() {
    for (object, helpers, name) in [
        (OBJECT, HELPERS, "bpf/siit_tc.c"),
        (OBJECT_XDP, HELPERS_XDP, "bpf/siit_xdp.c"),
    ] {
        if object.is_empty() {
            println!("skipped: the fast path was not built (no clang)");
            return;
        }
        let called = helpers_called(object);
        assert!(!called.is_empty());
        let probed: Vec<u32> = helpers.iter().map(|(h, _)| *h as u32).collect();
        let unprobed: Vec<u32> = called
            .iter()
            .filter(|c| !probed.contains(c))
            .copied()
            .collect();
        assert!(
            unprobed.is_empty(),
            "{name} calls helpers {unprobed:?} (bpf_func_id) that probe.rs does not probe"
        );
        // And nothing probed that it does not call (a probe that could
        // leave the fast path off for nothing).
        let uncalled: Vec<&str> = helpers
            .iter()
            .filter(|(h, _)| !called.contains(&(*h as u32)))
            .map(|(_, n)| *n)
            .collect();
        assert!(uncalled.is_empty(), "{name} does not call {uncalled:?}");
    }
}

#[test]
fn every_feature_has_a_distinct_name() {
    for names in [
        features().collect::<Vec<&str>>(),
        xdp_features().collect::<Vec<&str>>(),
    ] {
        let mut names = names;
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}

/// The development machine's kernel runs the fast path (the e2e tests load
/// it), so it must pass every probe; needs root.
#[test]
fn this_kernel_passes() {
    if !root() {
        println!("skipped: not root");
        return;
    }
    assert_eq!(kernel_pretending(&[]), Ok(()));
    assert_eq!(
        probe_pretending((ProgramType::Xdp, PROGRAM_TYPE_XDP), HELPERS_XDP, &["none"]),
        Ok(())
    );
}

/// The test hook reports what it names, and only that, in probing order.
#[test]
fn pretended_features_are_missing() {
    if !root() {
        println!("skipped: not root");
        return;
    }
    let r = kernel_pretending(&[LPM_IN_ARRAY_OF_MAPS, "bpf_skb_change_proto"]);
    assert_eq!(
        r,
        Err(Unsupported::Missing(vec![
            "bpf_skb_change_proto",
            LPM_IN_ARRAY_OF_MAPS
        ]))
    );
    let line = r.unwrap_err().to_string();
    assert!(line.contains("lacks"), "{line}");
}
