//! DUT presets: configure and start the device under test in the bed's DUT
//! namespace(s), say exactly what was configured, and undo it afterwards.
//!
//! | preset | what runs in the DUT | traffic (left → right) |
//! |---|---|---|
//! | `kernel-v6` | IPv6 forwarding (the limit) | IPv6 → IPv6 |
//! | `kernel-v4` | IPv4 forwarding | IPv4 → IPv4 |
//! | `nat44` | nft masquerade out of the right link | IPv4 → IPv4, stateful |
//! | `tayga` | TAYGA, pool6 + EAM (stateless) | IPv6 → IPv4 |
//! | `tayga-nat44` | TAYGA dynamic pool + nft masquerade | IPv6 → IPv4, stateful |
//! | `sixgate` | `sixgate run --config FILE` | IPv6 → IPv4; stateful if `mode = "nat64"` |
//!
//! The dual-DUT bed (RFC 8219 §4.2) takes `kernel-v4`, `tayga` and `sixgate`:
//! the first DUT maps the left IPv4 link into IPv6, the second maps it back.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sixgate_netns::{
    Background, Netns, RunningDut as RunningSixgate, ScratchDir, start_sixgate_with_config,
};

use crate::bed::{self, Bed, DUT_MIDDLE_IF, DUT_RIGHT_IF, Kind, addr};

/// The presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    KernelV6,
    KernelV4,
    Nat44,
    Tayga,
    TaygaNat44,
    Sixgate,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::KernelV6 => "kernel-v6",
            Preset::KernelV4 => "kernel-v4",
            Preset::Nat44 => "nat44",
            Preset::Tayga => "tayga",
            Preset::TaygaNat44 => "tayga-nat44",
            Preset::Sixgate => "sixgate",
        }
    }
}

/// How to start a preset.
#[derive(Debug, Clone)]
pub struct DutOptions {
    pub preset: Preset,
    /// `sixgate`: the configuration file (in the dual bed: the second DUT's).
    pub config: Option<PathBuf>,
    /// The `sixgate` binary to run.
    pub sixgate: PathBuf,
    /// Pin every DUT process to this CPU.
    pub cpu: Option<usize>,
}

/// Addresses the tester uses with a DUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Traffic {
    /// Left → right frames: source and destination.
    pub forward: (IpAddr, IpAddr),
    /// Right → left frames (for a stateful DUT the destination is learned
    /// from what phase 1 delivered; this is its first guess).
    pub reverse: (IpAddr, IpAddr),
    /// The DUT keeps per-connection state: the right side may only answer
    /// connections the left side opened (RFC 9693).
    pub stateful: bool,
    /// MAP-T BR (RFC 7599): the left tester is one CE, so the forward frames'
    /// source ports and the answers' destination ports are its port set, and
    /// its address is fixed (no pseudorandom hosts).
    pub ce_ports: Option<(u16, u16)>,
}

/// A started DUT: stopped and undone by [`RunningDut::stop`] (or on drop).
pub struct RunningDut<'a> {
    pub preset: Preset,
    pub traffic: Traffic,
    /// What was configured, for the report.
    pub description: Vec<String>,
    sixgates: Vec<RunningSixgate<'a>>,
    processes: Vec<Background>,
    /// Commands that undo the set-up, run in reverse order.
    undo: Vec<(&'a Netns, Vec<String>)>,
    _scratch: ScratchDir,
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn v4(s: &str) -> IpAddr {
    s.parse().expect("a literal address")
}

impl<'a> RunningDut<'a> {
    /// Configure and start `opts.preset` in `bed`.
    pub fn start(bed: &'a Bed, opts: &DutOptions) -> Result<RunningDut<'a>, String> {
        let scratch = ScratchDir::new("sgbdut").map_err(text)?;
        let traffic = traffic(bed.kind, opts.preset, opts.config.as_deref())?;
        let mut dut = RunningDut {
            preset: opts.preset,
            traffic,
            description: Vec::new(),
            sixgates: Vec::new(),
            processes: Vec::new(),
            undo: Vec::new(),
            _scratch: scratch,
        };
        if let (Kind::Single, Preset::Sixgate, Some(path)) =
            (bed.kind, opts.preset, opts.config.as_deref())
        {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if let Some(workers) = xdp_workers(&text) {
                dut.xdp_queues(bed, workers)?;
            }
        }
        match bed.kind {
            Kind::Loop => {
                dut.description
                    .push("no DUT: the tester's ports are joined directly".into());
            }
            Kind::Single => dut.start_single(&bed.duts[0], opts)?,
            Kind::Dual => dut.start_dual(&bed.duts[0], &bed.duts[1], opts)?,
        }
        if let Some(cpu) = opts.cpu {
            for ns in &bed.duts {
                for pid in ns.pids() {
                    let out = std::process::Command::new("taskset")
                        .args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()])
                        .output()
                        .map_err(|e| format!("taskset: {e}"))?;
                    if !out.status.success() {
                        return Err(format!(
                            "taskset -a -p -c {cpu} {pid}: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        ));
                    }
                }
            }
            dut.description
                .push(format!("DUT processes pinned to CPU {cpu}"));
        }
        Ok(dut)
    }

    /// `ip …` in `ns`, remembered in the description, with its undo.
    fn ip(&mut self, ns: &'a Netns, args: &[&str], undo: Option<&[&str]>) -> Result<(), String> {
        ns.ip(args).map_err(text)?;
        self.description
            .push(format!("{}: ip {}", ns.name(), args.join(" ")));
        if let Some(u) = undo {
            self.undo
                .push((ns, u.iter().map(|s| (*s).to_owned()).collect()));
        }
        Ok(())
    }

    /// sixgate's XDP data plane binds one socket per queue for `workers`
    /// queues; a frame on a queue with no socket would go to the kernel
    /// untranslated. So the queues in use on the four veth ends of the bed
    /// are the workers (at most [`bed::QUEUES`]) for the run, and all of
    /// them again after it.
    fn xdp_queues(&mut self, bed: &'a Bed, workers: u16) -> Result<(), String> {
        let n = workers.clamp(1, bed::QUEUES).to_string();
        let all = bed::QUEUES.to_string();
        let dut = &bed.duts[0];
        for (ns, dev) in [
            (&bed.left, bed::TESTER_LEFT_IF),
            (dut, bed::DUT_LEFT_IF),
            (dut, DUT_RIGHT_IF),
            (&bed.right, bed::TESTER_RIGHT_IF),
        ] {
            ns.run("ethtool", ["-L", dev, "rx", &n, "tx", &n])
                .map_err(|e| format!("{}: ethtool -L {dev} rx {n} tx {n}: {e}", ns.name()))?;
            self.undo.push((
                ns,
                ["@ethtool", "-L", dev, "rx", &all, "tx", &all]
                    .map(str::to_owned)
                    .to_vec(),
            ));
        }
        self.description.push(format!(
            "XDP data plane: {n} of the bed's {all} queues in use on tl, dl, dr and tr (ethtool -L), one per worker"
        ));
        Ok(())
    }

    fn masquerade(&mut self, ns: &'a Netns, saddr: Option<&str>) -> Result<(), String> {
        let m = saddr.map(|s| format!("ip saddr {s} ")).unwrap_or_default();
        let rules = format!(
            "table ip sgbench {{\n chain post {{\n  type nat hook postrouting priority srcnat; policy accept;\n  oifname \"{DUT_RIGHT_IF}\" {m}masquerade\n }}\n}}\n"
        );
        let path = self._scratch.write("nat44.nft", &rules).map_err(text)?;
        ns.run("nft", ["-f", &path.to_string_lossy()])
            .map_err(text)?;
        self.description.push(format!(
            "{}: nft: oifname {DUT_RIGHT_IF} {m}masquerade",
            ns.name()
        ));
        self.undo.push((ns, vec!["@nft".into()]));
        Ok(())
    }

    fn tayga(&mut self, ns: &'a Netns, conf: &str, routes: &[&str]) -> Result<(), String> {
        let file = format!("tayga-{}.conf", ns.name());
        let path = self._scratch.write(&file, conf).map_err(text)?;
        let p = path.to_string_lossy().into_owned();
        ns.run("tayga", ["-c", &p, "--mktun"]).map_err(text)?;
        self.undo.push((ns, vec!["@deltun".into()]));
        ns.link_up("nat64").map_err(text)?;
        for r in routes {
            self.ip(ns, &["route", "replace", r, "dev", "nat64"], None)?;
        }
        let mut cmd = ns.command("tayga");
        cmd.args(["-c", &p, "--nodetach"]);
        let bg = Background::spawn(&mut cmd, format!("tayga in {}", ns.name())).map_err(text)?;
        let version = std::process::Command::new("dpkg-query")
            .args(["-W", "-f=${Version}", "tayga"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        self.description.push(format!(
            "{}: tayga {version} -c {p} --nodetach, with:\n    {}",
            ns.name(),
            conf.trim().replace('\n', "\n    ")
        ));
        self.processes.push(bg);
        std::thread::sleep(Duration::from_millis(200));
        Ok(())
    }

    /// The API socket of the sixgate DUT (the last one started: in the dual
    /// bed, the stateful second DUT); `None` for the other presets.
    pub fn api_socket(&self) -> Option<&Path> {
        self.sixgates.last().and_then(|t| t.api_socket())
    }

    fn sixgate(
        &mut self,
        ns: &'a Netns,
        binary: &Path,
        config: &str,
        routes: &[&str],
    ) -> Result<(), String> {
        let t = start_sixgate_with_config(ns, binary, config, routes).map_err(text)?;
        self.description.push(format!(
            "{}: {} (ready after {} ms), with:\n    {}",
            ns.name(),
            t.command_line(),
            t.ready_after().as_millis(),
            config.trim().replace('\n', "\n    ")
        ));
        self.sixgates.push(t);
        Ok(())
    }

    fn start_single(&mut self, ns: &'a Netns, opts: &DutOptions) -> Result<(), String> {
        let tayga_siit = format!(
            "tun-device nat64\nipv4-addr {}\nprefix {}\nmap {} {}\n",
            addr::LEFT4_DUT,
            addr::POOL6,
            addr::EAM4,
            addr::EAM6
        );
        match opts.preset {
            Preset::KernelV6 | Preset::KernelV4 => self.description.push(format!(
                "{}: plain IP forwarding (net.ipv6.conf.all.forwarding=1, net.ipv4.ip_forward=1), no translation",
                ns.name()
            )),
            Preset::Nat44 => self.masquerade(ns, None)?,
            Preset::Tayga => self.tayga(ns, &tayga_siit, &[addr::POOL6, addr::EAM4])?,
            Preset::TaygaNat44 => {
                let conf = format!(
                    "tun-device nat64\nipv4-addr {}\nprefix {}\ndynamic-pool {}\n",
                    addr::LEFT4_DUT,
                    addr::POOL6,
                    addr::POOL4
                );
                self.tayga(ns, &conf, &[addr::POOL6, addr::POOL4])?;
                self.masquerade(ns, Some(addr::POOL4))?;
            }
            Preset::Sixgate => {
                let path = opts
                    .config
                    .as_ref()
                    .ok_or("--dut sixgate needs --config FILE (see bench/configs/)")?;
                let config = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let routes = config_routes(&config, path)?;
                let routes: Vec<&str> = routes.iter().map(String::as_str).collect();
                self.sixgate(ns, &opts.sixgate, &config, &routes)?;
                if mode_of(&config) == "mapt-br" {
                    // The CE the left tester plays, behind the left link.
                    let via = addr::LEFT6_TESTER.to_string();
                    self.ip(
                        ns,
                        &[
                            "-6",
                            "route",
                            "replace",
                            addr::MAPT_CE_PREFIX,
                            "via",
                            &via,
                            "dev",
                            bed::DUT_LEFT_IF,
                        ],
                        Some(&["-6", "route", "del", addr::MAPT_CE_PREFIX]),
                    )?;
                }
            }
        }
        Ok(())
    }

    fn start_dual(
        &mut self,
        d1: &'a Netns,
        d2: &'a Netns,
        opts: &DutOptions,
    ) -> Result<(), String> {
        let m1 = addr::MIDDLE6_DUT1.to_string();
        let m2 = addr::MIDDLE6_DUT2.to_string();
        // Towards each other across the IPv6 middle link.
        let pool6_via = [
            "-6",
            "route",
            "replace",
            addr::POOL6,
            "via",
            &m2,
            "dev",
            DUT_MIDDLE_IF,
        ];
        let eam6_via = [
            "-6",
            "route",
            "replace",
            addr::EAM6,
            "via",
            &m1,
            "dev",
            DUT_MIDDLE_IF,
        ];
        match opts.preset {
            Preset::KernelV4 => {
                let (a1, a2) = (
                    addr::MIDDLE4_DUT1.to_string(),
                    addr::MIDDLE4_DUT2.to_string(),
                );
                self.ip(
                    d1,
                    &["route", "replace", "198.51.100.0/24", "via", &a2],
                    Some(&["route", "del", "198.51.100.0/24"]),
                )?;
                self.ip(
                    d2,
                    &["route", "replace", "192.0.2.0/24", "via", &a1],
                    Some(&["route", "del", "192.0.2.0/24"]),
                )?;
            }
            Preset::Tayga => {
                // DUT1: IPv4 clients (EAM) and IPv4 servers (pool6) into IPv6.
                let c1 = format!(
                    "tun-device nat64\nipv4-addr 192.0.2.200\nprefix {}\nmap {} {}\n",
                    addr::POOL6,
                    DUAL_EAM4_LEFT,
                    DUAL_EAM6_LEFT
                );
                self.tayga(d1, &c1, &["198.51.100.0/24", DUAL_EAM6_LEFT])?;
                self.ip(d1, &pool6_via, None)?;
                let c2 = format!(
                    "tun-device nat64\nipv4-addr {}\nprefix {}\nmap {} {}\n",
                    addr::RIGHT4_DUT,
                    addr::POOL6,
                    addr::EAM4,
                    addr::EAM6
                );
                self.tayga(d2, &c2, &[addr::POOL6, addr::EAM4])?;
                self.ip(d2, &eam6_via, None)?;
            }
            Preset::Sixgate if is_mapt_br(opts.config.as_deref())? => {
                // DUT1 a MAP-T CE (NAPT44 + RFC 7915 towards the DMR), DUT2 the BR.
                let ce_map = format!("{}/128", addr::MAPT_CE6);
                self.sixgate(d1, &opts.sixgate, &mapt_ce_toml(), &["0.0.0.0/0", &ce_map])?;
                self.ip(d1, &pool6_via, None)?;
                let p = opts.config.as_ref().expect("is_mapt_br saw a file");
                let c2 = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                let routes = config_routes(&c2, p)?;
                let routes: Vec<&str> = routes.iter().map(String::as_str).collect();
                self.sixgate(d2, &opts.sixgate, &c2, &routes)?;
                self.ip(
                    d2,
                    &[
                        "-6",
                        "route",
                        "replace",
                        addr::MAPT_CE_PREFIX,
                        "via",
                        &m1,
                        "dev",
                        DUT_MIDDLE_IF,
                    ],
                    None,
                )?;
            }
            Preset::Sixgate => {
                let c1 = format!(
                    "[translator]\nmode = \"siit\"\npool6 = \"{}\"\neam = [ {{ ipv4 = \"{}\", ipv6 = \"{}\" }} ]\n\n[tun]\nname = \"sixgate0\"\nmanage_routes = false\n",
                    addr::POOL6,
                    DUAL_EAM4_LEFT,
                    DUAL_EAM6_LEFT
                );
                self.sixgate(d1, &opts.sixgate, &c1, &["198.51.100.0/24", DUAL_EAM6_LEFT])?;
                self.ip(d1, &pool6_via, None)?;
                let c2 = match &opts.config {
                    Some(p) => {
                        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?
                    }
                    None => format!(
                        "[translator]\nmode = \"siit\"\npool6 = \"{}\"\neam = [ {{ ipv4 = \"{}\", ipv6 = \"{}\" }} ]\n\n[tun]\nname = \"sixgate0\"\nmanage_routes = true\n",
                        addr::POOL6,
                        addr::EAM4,
                        addr::EAM6
                    ),
                };
                let routes = config_routes(&c2, Path::new("(second DUT)"))?;
                let routes: Vec<&str> = routes.iter().map(String::as_str).collect();
                self.sixgate(d2, &opts.sixgate, &c2, &routes)?;
                self.ip(d2, &eam6_via, None)?;
            }
            other => {
                return Err(format!(
                    "the dual-DUT bed takes kernel-v4, tayga or sixgate, not {}",
                    other.name()
                ));
            }
        }
        Ok(())
    }

    /// Stop the DUT and undo its set-up; returns what the DUT said on exit.
    pub fn stop(mut self) -> Result<String, String> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<String, String> {
        let mut log = String::new();
        let mut first_err = None;
        for t in self.sixgates.drain(..) {
            match t.stop() {
                Ok(s) => {
                    log.push_str(&s.stderr);
                    if let Err(e) = s.check_clean() {
                        first_err.get_or_insert(e.to_string());
                    }
                }
                Err(e) => {
                    first_err.get_or_insert(e.to_string());
                }
            }
        }
        for p in self.processes.drain(..) {
            let f = p.stop(Duration::from_secs(5));
            log.push_str(&f.stderr);
        }
        for (ns, cmd) in self.undo.drain(..).rev() {
            let r = match cmd[0].as_str() {
                "@nft" => {
                    let r = ns
                        .run("nft", ["delete", "table", "ip", "sgbench"])
                        .map(drop);
                    let _ = ns.run("conntrack", ["-F"]);
                    r
                }
                "@ethtool" => ns.run("ethtool", &cmd[1..]).map(drop),
                "@deltun" => {
                    if ns.link("nat64").ok().flatten().is_some() {
                        ns.ip(["link", "del", "nat64"]).map(drop)
                    } else {
                        Ok(())
                    }
                }
                _ => ns.ip(&cmd).map(drop),
            };
            if let Err(e) = r {
                first_err.get_or_insert(e.to_string());
            }
        }
        match first_err {
            None => Ok(log),
            Some(e) => Err(e),
        }
    }
}

impl Drop for RunningDut<'_> {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The dual bed's first translator: the left IPv4 link (its tester hosts)
/// into IPv6 and back.
pub const DUAL_EAM4_LEFT: &str = "192.0.2.0/25";
pub const DUAL_EAM6_LEFT: &str = "2001:db8:1::/121";

/// The tester's addresses for `preset` on a `kind` bed.
pub fn traffic(kind: Kind, preset: Preset, config: Option<&Path>) -> Result<Traffic, String> {
    let t6 = IpAddr::V6(addr::LEFT6_TESTER);
    let t4l = IpAddr::V4(addr::LEFT4_TESTER);
    let t4r = IpAddr::V4(addr::RIGHT4_TESTER);
    let r6 = IpAddr::V6(addr::RIGHT6_TESTER);
    let via6 = IpAddr::V6(bed::in_pool6(addr::RIGHT4_TESTER));
    let eam_of_t6 = v4("198.18.0.5");
    Ok(match (kind, preset) {
        (Kind::Loop, _) => Traffic {
            forward: (t6, r6),
            reverse: (r6, t6),
            stateful: false,
            ce_ports: None,
        },
        // MAP-T CE then BR: the CE's NAPT44 is stateful, the answers go to
        // the CE's address and the ports it gave.
        (Kind::Dual, Preset::Sixgate) if is_mapt_br(config)? => Traffic {
            forward: (t4l, t4r),
            reverse: (t4r, IpAddr::V4(addr::MAPT_CE4)),
            stateful: true,
            ce_ports: None,
        },
        (Kind::Dual, Preset::KernelV4) => Traffic {
            forward: (t4l, t4r),
            reverse: (t4r, t4l),
            stateful: false,
            ce_ports: None,
        },
        // Through both translators: 192.0.2.5 → 2001:db8:1::5 → 198.18.0.5.
        (Kind::Dual, _) => Traffic {
            forward: (t4l, t4r),
            reverse: (t4r, eam_of_t6),
            stateful: false,
            ce_ports: None,
        },
        (Kind::Single, Preset::KernelV6) => Traffic {
            forward: (t6, r6),
            reverse: (r6, t6),
            stateful: false,
            ce_ports: None,
        },
        (Kind::Single, Preset::KernelV4) => Traffic {
            forward: (t4l, t4r),
            reverse: (t4r, t4l),
            stateful: false,
            ce_ports: None,
        },
        (Kind::Single, Preset::Nat44) => Traffic {
            forward: (t4l, t4r),
            reverse: (t4r, IpAddr::V4(addr::RIGHT4_DUT)),
            stateful: true,
            ce_ports: None,
        },
        (Kind::Single, Preset::Tayga) => Traffic {
            forward: (t6, via6),
            reverse: (t4r, eam_of_t6),
            stateful: false,
            ce_ports: None,
        },
        (Kind::Single, Preset::TaygaNat44) => Traffic {
            forward: (t6, via6),
            reverse: (t4r, IpAddr::V4(addr::RIGHT4_DUT)),
            stateful: true,
            ce_ports: None,
        },
        (Kind::Single, Preset::Sixgate) if is_mapt_br(config)? => Traffic {
            forward: (IpAddr::V6(addr::MAPT_CE6), via6),
            reverse: (t4r, IpAddr::V4(addr::MAPT_CE4)),
            stateful: false,
            ce_ports: Some(addr::MAPT_CE_PORTS),
        },
        (Kind::Single, Preset::Sixgate) => {
            let stateful = match config {
                Some(p) => {
                    let text =
                        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                    mode_of(&text) == "nat64"
                }
                None => false,
            };
            Traffic {
                forward: (t6, via6),
                reverse: if stateful {
                    (t4r, v4("198.18.0.0"))
                } else {
                    (t4r, eam_of_t6)
                },
                stateful,
                ce_ports: None,
            }
        }
    })
}

/// The workers of a sixgate configuration on the XDP data plane (`[daemon]
/// dataplane = "xdp"`; `workers` 0 or absent: as many as the bed has queues),
/// or `None` for the TUN data plane.
fn xdp_workers(text: &str) -> Option<u16> {
    let t = text.parse::<toml::Table>().ok()?;
    let daemon = t.get("daemon")?;
    if daemon.get("dataplane")?.as_str()? != "xdp" {
        return None;
    }
    let workers = daemon
        .get("workers")
        .and_then(|w| w.as_integer())
        .unwrap_or(0);
    Some(match u16::try_from(workers) {
        Ok(0) | Err(_) => bed::QUEUES,
        Ok(w) => w,
    })
}

/// A sixgate configuration with `mode = "mapt-br"`.
fn is_mapt_br(config: Option<&Path>) -> Result<bool, String> {
    Ok(match config {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            mode_of(&text) == "mapt-br"
        }
        None => false,
    })
}

/// The dual bed's MAP-T CE (RFC 7599): the bed's rule, End-user prefix
/// [`addr::MAPT_CE_PREFIX`], the left IPv4 link as its LAN.
fn mapt_ce_toml() -> String {
    format!(
        "[translator]\nmode = \"mapt-ce\"\n\n[mapt]\ndmr = \"{}\"\nbmr = [ {{ ipv6_prefix = \"{}\", ipv4_prefix = \"{}\", ea_bits = 13, psid_offset = 0 }} ]\nend_user_prefix = \"{}\"\nlan = \"192.0.2.0/24\"\n\n[tun]\nname = \"sixgate0\"\nmanage_routes = true\n",
        addr::POOL6,
        addr::MAPT_RULE6,
        addr::POOL4,
        addr::MAPT_CE_PREFIX
    )
}

/// `[translator] mode` of a sixgate configuration (default `siit`).
fn mode_of(text: &str) -> String {
    text.parse::<toml::Table>()
        .ok()
        .and_then(|t| {
            t.get("translator")?
                .get("mode")?
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "siit".into())
}

/// The routes a sixgate configuration makes (pool6, EAM IPv4 prefixes,
/// pool4), which say that it is ready.
fn config_routes(text: &str, path: &Path) -> Result<Vec<String>, String> {
    let t: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut routes = Vec::new();
    if let Some(tr) = t.get("translator") {
        if let Some(p) = tr.get("pool6").and_then(|v| v.as_str()) {
            routes.push(p.to_owned());
        }
        if let Some(eams) = tr.get("eam").and_then(|v| v.as_array()) {
            for e in eams {
                if let Some(v4) = e.get("ipv4").and_then(|v| v.as_str()) {
                    routes.push(v4.to_owned());
                }
            }
        }
    }
    if let Some(m) = t.get("mapt") {
        if let Some(d) = m.get("dmr").and_then(|v| v.as_str()) {
            routes.push(d.to_owned());
        }
        for r in m
            .get("bmr")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(v4) = r.get("ipv4_prefix").and_then(|v| v.as_str()) {
                routes.push(v4.to_owned());
            }
        }
    }
    if let Some(p4) = t
        .get("nat64")
        .and_then(|n| n.get("pool4"))
        .and_then(|v| v.as_array())
    {
        // "ADDR[/LEN]" or { prefix = "ADDR[/LEN]", tcp = …, … }.
        for p in p4 {
            if let Some(s) = p.as_str().or_else(|| p.get("prefix")?.as_str()) {
                routes.push(s.to_owned());
            }
        }
    }
    Ok(routes)
}

/// Wait until `f` holds, up to `timeout`.
pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixgate_configs_say_mode_and_routes() {
        let siit = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\neam = [ { ipv4 = \"198.18.0.0/24\", ipv6 = \"2001:db8:1::/120\" } ]\n";
        assert_eq!(mode_of(siit), "siit");
        assert_eq!(
            config_routes(siit, Path::new("x")).unwrap(),
            ["2001:db8:64::/96", "198.18.0.0/24"]
        );
        let nat64 = "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n[nat64]\npool4 = [\"198.18.0.0/24\"]\n";
        assert_eq!(mode_of(nat64), "nat64");
        assert_eq!(
            config_routes(nat64, Path::new("x")).unwrap(),
            ["2001:db8:64::/96", "198.18.0.0/24"]
        );
        let table = nat64.replace(
            "pool4 = [\"198.18.0.0/24\"]",
            "pool4 = [{ prefix = \"198.18.0.0/24\", tcp = \"1-65535\" }]",
        );
        assert_eq!(
            config_routes(&table, Path::new("x")).unwrap(),
            ["2001:db8:64::/96", "198.18.0.0/24"]
        );
        assert!(
            config_routes("[", Path::new("bad.toml"))
                .unwrap_err()
                .contains("bad.toml")
        );
    }

    #[test]
    fn xdp_configs_say_their_workers() {
        assert_eq!(xdp_workers("[daemon]\nworkers = 1\n"), None);
        assert_eq!(
            xdp_workers("[daemon]\ndataplane = \"xdp\"\nworkers = 1\n"),
            Some(1)
        );
        assert_eq!(
            xdp_workers("[daemon]\ndataplane = \"xdp\"\n"),
            Some(bed::QUEUES)
        );
    }

    #[test]
    fn presets_pick_families() {
        let t = traffic(Kind::Single, Preset::Tayga, None).unwrap();
        assert!(t.forward.0.is_ipv6() && t.forward.1.is_ipv6());
        assert!(t.reverse.0.is_ipv4() && !t.stateful);
        assert!(traffic(Kind::Single, Preset::Nat44, None).unwrap().stateful);
        let d = traffic(Kind::Dual, Preset::Tayga, None).unwrap();
        assert!(d.forward.0.is_ipv4() && d.forward.1.is_ipv4());
    }
}
