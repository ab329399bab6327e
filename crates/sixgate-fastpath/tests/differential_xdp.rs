//! The differential test of the XDP fast path (docs/fastpath.md, "XDP"): the
//! TC program's harness, vectors and generated packets
//! (tests/common/differential.rs) run through the XDP program
//! (bpf/siit_xdp.c, the same translation behind the XDP hook), which must
//! agree with the core byte for byte or return XDP_PASS with the frame
//! unchanged; and, which the TC test run cannot take, multi-buffer frames
//! over 4 KB (the program is `xdp.frags`: `BPF_PROG_TEST_RUN` puts what does
//! not fit one page in fragments).

use sixgate_fastpath::Hook;
use sixgate_testkit::{Ip4, Ip6};

const HOOK: Hook = Hook::Xdp;

#[path = "common/differential.rs"]
mod differential;

use differential::{Bed, H4, V6_AS_V4, a4, h4_as_v6, h6, pin_to_one_cpu, sample_config};

/// RFC 7915 §4.1 / §5.1 on frames over a page (multi-buffer XDP): TCP, UDP
/// and Echo both ways up to 9000 bytes (a jumbo MTU), translated as the core
/// translates them, the checksum moved without the fragments being read;
/// and over the limits the core keeps (DF=0 4→6 above the fragment limit,
/// link-layer padding in the fragments) still decided as the core decides.
#[test]
fn rfc7915_frames_over_4k_in_fragments_translate_as_the_core_does() {
    pin_to_one_cpu();
    let Some(mut bed) = Bed::new(sample_config()) else {
        return;
    };
    let p6 = || Ip6::new(h6(), h4_as_v6());
    let p4 = || Ip4::new(a4(H4), a4(V6_AS_V4));
    let mut padded = p4().tcp(80, 40000, 5000);
    padded.extend_from_slice(&[0xee; 6]);
    let mut cases: Vec<(String, Vec<u8>, bool)> = Vec::new();
    for size in [4000usize, 4097, 6000, 8952] {
        cases.push((
            format!("rfc7915_s5_1 TCP {size}"),
            p6().tcp(40000, 80, size),
            true,
        ));
        cases.push((
            format!("rfc7915_s5_1 UDP {size}"),
            p6().udp(5000, 53, size),
            true,
        ));
        cases.push((
            format!("rfc7915_s5_2 Echo {size}"),
            p6().echo_request(7, 1, size),
            true,
        ));
        cases.push((
            format!("rfc7915_s4_1 TCP {size} DF"),
            p4().tcp(80, 40000, size),
            true,
        ));
        cases.push((
            format!("rfc7915_s4_1 UDP {size} DF"),
            p4().udp(53, 5000, size),
            true,
        ));
        cases.push((
            format!("rfc7915_s4_2 Echo {size} DF"),
            p4().echo_reply(7, 1, size),
            true,
        ));
        cases.push((
            format!("rfc7915_s4 UDP {size} DF=0: fragmented by the core"),
            p4().df(false).udp(53, 5000, size),
            false,
        ));
    }
    cases.push(("rfc7915_s4 padding after 5 KB".to_owned(), padded, true));
    let mut big = 0;
    for (what, ip, fast) in &cases {
        let o = bed.check(what, ip);
        assert_eq!(
            matches!(o, differential::Outcome::Translated),
            *fast,
            "{what}: expected fast = {fast}"
        );
        big += usize::from(ip.len() + 14 > 4096);
    }
    println!(
        "{} frames, {big} over 4 KB, largest {} bytes",
        cases.len(),
        cases.iter().map(|c| c.1.len() + 14).max().unwrap_or(0)
    );
    assert!(big >= 20);
}
