//! `[xdp]`: the section, its keys and `dataplane = "xdp"`.

use crate::tests::{err_at, ok};

#[test]
fn xdp_dataplane_needs_its_section_and_checks_it() {
    let base = "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n";
    let l = ok(&format!(
        "{base}[daemon]\ndataplane = \"xdp\"\n[xdp]\nipv6_interface = \"eth6\"\nipv4_interface = \"eth4\"\n"
    ));
    assert_eq!(l.daemon.dataplane, crate::Dataplane::Xdp);
    assert_eq!(l.xdp.ipv6_interface, "eth6");
    assert_eq!(l.xdp.attach_mode, crate::XdpAttach::Auto);
    assert_eq!(l.xdp.frames, crate::DEFAULT_XDP_FRAMES);
    assert_eq!(ok(base).daemon.dataplane, crate::Dataplane::Tun);
    err_at(
        &format!("{base}[daemon]\ndataplane = \"xdp\"\n"),
        5,
        13,
        &["needs an [xdp] section"],
    );
    err_at(
        &format!("{base}[daemon]\ndataplane = \"dpdk\"\n"),
        5,
        13,
        &["\"tun\" or \"xdp\""],
    );
    err_at(
        &format!("{base}[xdp]\nipv6_interface = \"eth6\"\n"),
        4,
        1,
        &["needs ipv4_interface"],
    );
    err_at(
        &format!("{base}[xdp]\nipv6_interface = \"eth6\"\nipv4_interface = \"eth6\"\n"),
        6,
        18,
        &["same interface"],
    );
    err_at(
        &format!("{base}[xdp]\nipv6_interface = \"a\"\nipv4_interface = \"b\"\nframes = 1000\n"),
        7,
        10,
        &["power of two"],
    );
    err_at(
        &format!(
            "{base}[xdp]\nipv6_interface = \"a\"\nipv4_interface = \"b\"\nattach_mode = \"hw\"\n"
        ),
        7,
        15,
        &["\"native\""],
    );
}
