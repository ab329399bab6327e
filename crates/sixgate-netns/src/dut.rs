//! The translator under test, started in the gateway namespace: sixgate's own
//! daemon (`sixgate run`) or TAYGA, a TUN-based stateless translator used as the
//! reference. Both are set up to match the bed ([`crate::TRANSLATOR_TOML`]), so
//! the same tests run against either.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Context, Error, Result};
use crate::netns::{LinkStats, Netns};
use crate::process::{self, Background, ScratchDir, describe};
use crate::topology::{TRANSLATOR_TOML, TopologyOptions, addr};

/// Environment variable that picks the translator for [`Dut::from_env`]:
/// `sixgate` (the default) or `tayga`.
pub const ENV_TRANSLATOR: &str = "SIXGATE_E2E_TRANSLATOR";
/// Environment variable naming the sixgate executable to test instead of the one
/// passed to [`Dut::from_env`] (a release build, or a stand-in).
pub const ENV_BINARY: &str = "SIXGATE_E2E_BINARY";
/// Environment variable that picks sixgate's data plane: `tun` (the default) or
/// `xdp`.
pub const ENV_DATAPLANE: &str = "SIXGATE_E2E_DATAPLANE";
/// Environment variable with extra TOML merged into sixgate's generated config,
/// e.g. `[daemon]` / `workers = 2`.
pub const ENV_EXTRA_TOML: &str = "SIXGATE_E2E_EXTRA_TOML";

/// Name of the TUN device sixgate is told to create.
pub const SIXGATE_TUN: &str = "sixgate0";
/// Name of TAYGA's TUN device.
pub const TAYGA_TUN: &str = "nat64";

/// How long a translator may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a translator may take to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// sixgate's live data plane, as written into its generated config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dataplane {
    /// A TUN device (`[tun]` section): the kernel routes pool6 and the EAM IPv4
    /// prefixes into it, sixgate translates and writes the packets back.
    #[default]
    Tun,
    /// AF_XDP sockets on the gateway's two veth interfaces (`[daemon] dataplane
    /// = "xdp"`, `[xdp]` naming `eth6` and `eth4`): the XDP program redirects
    /// what to translate, the kernel keeps the rest.
    Xdp,
}

impl Dataplane {
    /// All data planes the bed knows, by name.
    pub const ALL: [Dataplane; 2] = [Dataplane::Tun, Dataplane::Xdp];

    /// Parse a name (`tun`, `xdp`).
    pub fn parse(name: &str) -> Result<Dataplane> {
        Dataplane::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Dataplane::ALL.iter().map(|d| d.name()).collect();
                Error::new(format!(
                    "unknown data plane {name:?}; the test bed knows: {}",
                    known.join(", ")
                ))
            })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Dataplane::Tun => "tun",
            Dataplane::Xdp => "xdp",
        }
    }

    /// The config section that selects it.
    fn toml(self) -> String {
        match self {
            Dataplane::Tun => format!("[tun]\nname = \"{SIXGATE_TUN}\"\n"),
            Dataplane::Xdp => format!(
                "[daemon]\ndataplane = \"xdp\"\n\n[xdp]\nipv6_interface = \"{}\"\n\
                 ipv4_interface = \"{}\"\n",
                crate::topology::ifname::GATEWAY_V6,
                crate::topology::ifname::GATEWAY_V4
            ),
        }
    }
}

/// The device under test: which translator runs in the gateway. (Not the core's
/// `Translator`: this is a program the bed starts.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dut {
    /// `BINARY run --config FILE`, with a generated config: [`TRANSLATOR_TOML`], the
    /// data plane's section, then `extra_toml` merged over both (tables merge key by
    /// key, so `[tun]` / `mtu = 9000` adds to the generated `[tun]`). An
    /// `extra_toml` whose `[translator]` names another `mode` (e.g. `nat64`, see
    /// [`crate::NAT64_TOML`]) replaces the generated `[translator]` instead.
    Sixgate {
        /// The sixgate executable.
        binary: PathBuf,
        /// Its data plane.
        dataplane: Dataplane,
        /// More configuration, TOML; may be empty.
        extra_toml: String,
    },
    /// TAYGA (`tayga` on the PATH), configured like sixgate: prefix pool6, one
    /// `map` line for the EAM entry, its own address [`addr::TAYGA_V4`].
    Tayga,
}

impl Dut {
    /// sixgate on the TUN data plane, no extra configuration.
    pub fn sixgate(binary: impl Into<PathBuf>) -> Dut {
        Dut::Sixgate {
            binary: binary.into(),
            dataplane: Dataplane::Tun,
            extra_toml: String::new(),
        }
    }

    /// The translator the environment asks for: [`ENV_TRANSLATOR`] (`sixgate`,
    /// the default, or `tayga`), and for sixgate [`ENV_DATAPLANE`] and
    /// [`ENV_EXTRA_TOML`]. `sixgate_binary` is the sixgate executable to run, unless
    /// [`ENV_BINARY`] names another.
    pub fn from_env(sixgate_binary: impl Into<PathBuf>) -> Result<Dut> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let which = var(ENV_TRANSLATOR).unwrap_or_else(|| "sixgate".into());
        match which.trim() {
            "sixgate" => Ok(Dut::Sixgate {
                binary: var(ENV_BINARY)
                    .map(PathBuf::from)
                    .unwrap_or_else(|| sixgate_binary.into()),
                // The first of a list (see `all_from_env`).
                dataplane: match var(ENV_DATAPLANE) {
                    Some(d) => Dataplane::parse(d.split(',').next().unwrap_or("").trim())
                        .context(ENV_DATAPLANE)?,
                    None => Dataplane::Tun,
                },
                extra_toml: var(ENV_EXTRA_TOML).unwrap_or_default(),
            }),
            "tayga" => Ok(Dut::Tayga),
            other => Err(Error::new(format!(
                "{ENV_TRANSLATOR}={other:?}: expected \"sixgate\" or \"tayga\""
            ))),
        }
    }

    /// `options` with what this translator needs of the bed: for sixgate on XDP,
    /// complete checksums on the links and as many veth queues as workers.
    pub fn bed_options(&self, options: TopologyOptions) -> TopologyOptions {
        match self {
            Dut::Sixgate {
                dataplane: Dataplane::Xdp,
                extra_toml,
                ..
            } => {
                let workers = extra_toml
                    .parse::<toml::Table>()
                    .ok()
                    .and_then(|t| t.get("daemon")?.get("workers")?.as_integer())
                    .unwrap_or(1)
                    .clamp(1, 64) as u32;
                TopologyOptions {
                    complete_checksums: true,
                    queues: options.queues.max(workers),
                    ..options
                }
            }
            _ => options,
        }
    }

    /// Every translator the environment asks for: as [`Dut::from_env`],
    /// but [`ENV_DATAPLANE`] may list several data planes (`tun,xdp`), and
    /// without it sixgate runs on each data plane the bed knows, so that one
    /// test run covers them all. TAYGA is one translator.
    pub fn all_from_env(sixgate_binary: impl Into<PathBuf>) -> Result<Vec<Dut>> {
        let one = Dut::from_env(sixgate_binary)?;
        let Dut::Sixgate {
            binary, extra_toml, ..
        } = &one
        else {
            return Ok(vec![one]);
        };
        let planes: Vec<Dataplane> = match std::env::var(ENV_DATAPLANE)
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            Some(list) => list
                .split(',')
                .map(|d| Dataplane::parse(d.trim()).context(ENV_DATAPLANE))
                .collect::<Result<_>>()?,
            None => Dataplane::ALL.to_vec(),
        };
        Ok(planes
            .into_iter()
            .map(|dataplane| Dut::Sixgate {
                binary: binary.clone(),
                dataplane,
                extra_toml: extra_toml.clone(),
            })
            .collect())
    }

    /// `sixgate` or `tayga`.
    pub fn name(&self) -> &'static str {
        match self {
            Dut::Sixgate { .. } => "sixgate",
            Dut::Tayga => "tayga",
        }
    }

    /// A line for people: which program, which data plane.
    pub fn describe(&self) -> String {
        match self {
            Dut::Sixgate {
                binary, dataplane, ..
            } => format!(
                "sixgate run ({} data plane, {})",
                dataplane.name(),
                binary.display()
            ),
            Dut::Tayga => "TAYGA (TUN data plane)".into(),
        }
    }

    /// `Err(reason)` if the translator cannot run here: for sixgate, the binary has
    /// no `run` command (`sixgate run --help` fails); for TAYGA, `tayga` is not
    /// installed.
    pub fn check_available(&self) -> std::result::Result<(), String> {
        match self {
            Dut::Sixgate { binary, .. } => {
                let mut cmd = Command::new(binary);
                cmd.args(["run", "--help"]);
                match process::capture(&mut cmd, Duration::from_secs(10)) {
                    Ok(o) if o.status.success() => Ok(()),
                    Ok(_) => Err(format!(
                        "this sixgate has no `run` command yet (`{} run --help` failed), so there is \
                         no daemon to test; {ENV_TRANSLATOR}=tayga runs the same tests against TAYGA",
                        binary
                            .file_name()
                            .unwrap_or(binary.as_os_str())
                            .to_string_lossy()
                    )),
                    Err(e) => Err(e.to_string()),
                }
            }
            Dut::Tayga => {
                process::capture(Command::new("tayga").arg("--help"), Duration::from_secs(10))
                    .map(drop)
                    .map_err(|e| {
                        format!("TAYGA is not installed (scripts/setup.sh installs it): {e}")
                    })
            }
        }
    }

    /// The configuration file the translator is started with.
    pub fn config(&self, data_dir: &Path) -> Result<String> {
        match self {
            Dut::Sixgate {
                dataplane,
                extra_toml,
                ..
            } => sixgate_config(*dataplane, extra_toml).map(|c| c.text),
            Dut::Tayga => Ok(tayga_config(data_dir)),
        }
    }

    /// Start the translator in `gateway` (a bed's gateway namespace) and wait until
    /// it is ready: its TUN device is up with a process attached (carrier on) and
    /// the routes for pool6 and the EAM IPv4 prefix point into it. For TAYGA the bed
    /// creates the TUN device and the routes itself (`tayga --mktun`, `ip route`);
    /// sixgate creates and routes its own, unless its config says
    /// `manage_routes = false`, in which case the bed adds the routes.
    pub fn start<'a>(&self, gateway: &'a Netns) -> Result<RunningDut<'a>> {
        crate::interrupt::check()?;
        match self {
            Dut::Sixgate {
                binary,
                dataplane,
                extra_toml,
            } => start_sixgate(gateway, binary, *dataplane, extra_toml),
            Dut::Tayga => start_tayga(gateway),
        }
        .context(format!("starting {} in {}", self.name(), gateway.name()))
    }
}

/// sixgate's generated config and what the bed needs to know from it.
struct SixgateConfig {
    text: String,
    tun: String,
    manage_routes: bool,
    keep: bool,
    /// XDP data plane: its two interfaces (ready when both have the program).
    xdp: Option<[String; 2]>,
}

fn sixgate_config(dataplane: Dataplane, extra: &str) -> Result<SixgateConfig> {
    let base = format!("{TRANSLATOR_TOML}\n{}", dataplane.toml());
    let mut table: toml::Table = base
        .parse()
        .map_err(|e| Error::new(format!("generated config: {e}")))?;
    let text = if extra.trim().is_empty() {
        base
    } else {
        let extra: toml::Table = extra
            .parse()
            .map_err(|e| Error::new(format!("extra sixgate config: {e}")))?;
        let mode = |t: &toml::Table| {
            t.get("translator")
                .and_then(|t| t.get("mode"))
                .and_then(|m| m.as_str())
                .map(str::to_owned)
        };
        if mode(&extra).is_some_and(|m| Some(m) != mode(&table)) {
            // Another mode: its own [translator], nothing of SIIT's EAM.
            table.remove("translator");
        }
        merge(&mut table, extra);
        toml::to_string(&table).map_err(|e| Error::new(format!("extra sixgate config: {e}")))?
    };
    Ok(tun_settings(&table, text))
}

/// What the bed needs to know from a sixgate config: its `[tun]` settings.
fn tun_settings(table: &toml::Table, text: String) -> SixgateConfig {
    let tun_table = table.get("tun").and_then(|t| t.as_table());
    let tun_key = |k: &str| tun_table.and_then(|t| t.get(k));
    SixgateConfig {
        text,
        tun: tun_key("name")
            .and_then(|v| v.as_str())
            .unwrap_or(SIXGATE_TUN)
            .to_owned(),
        manage_routes: tun_key("manage_routes")
            .and_then(|v| v.as_bool())
            .unwrap_or(true),
        keep: tun_key("keep").and_then(|v| v.as_bool()).unwrap_or(false),
        xdp: (table
            .get("daemon")
            .and_then(|d| d.get("dataplane"))
            .and_then(|d| d.as_str())
            == Some("xdp"))
        .then(|| {
            let key = |k: &str| {
                table
                    .get("xdp")
                    .and_then(|x| x.get(k))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            [key("ipv6_interface"), key("ipv4_interface")]
        }),
    }
}

/// Merge `extra` into `base`: tables key by key, anything else replaced.
fn merge(base: &mut toml::Table, extra: toml::Table) {
    for (k, v) in extra {
        if let toml::Value::Table(e) = &v
            && let Some(toml::Value::Table(b)) = base.get_mut(&k)
        {
            merge(b, e.clone());
            continue;
        }
        base.insert(k, v);
    }
}

fn tayga_config(data_dir: &Path) -> String {
    format!(
        "# TAYGA for the sixgate test bed: the same mapping as sixgate's [translator].\n\
         tun-device {TAYGA_TUN}\n\
         ipv4-addr {}\n\
         prefix {}\n\
         map {} {}\n\
         data-dir {}\n",
        addr::TAYGA_V4,
        addr::POOL6,
        addr::EAM_V4,
        addr::EAM_V6,
        data_dir.display()
    )
}

/// The routes the standard bed waits for: pool6 and the EAM IPv4 prefix.
fn bed_routes() -> Vec<String> {
    vec![addr::POOL6.to_owned(), addr::EAM_V4.to_owned()]
}

fn start_sixgate<'a>(
    gateway: &'a Netns,
    binary: &Path,
    dataplane: Dataplane,
    extra: &str,
) -> Result<RunningDut<'a>> {
    let cfg = sixgate_config(dataplane, extra)?;
    let routes = ready_routes_for(&cfg.text);
    launch_sixgate(gateway, binary, cfg, routes)
}

/// [`bed_routes`], less the IPv4 prefix for a nat64 config without pool4: its
/// default pool4 is the gateway's own address, diverted rather than routed.
fn ready_routes_for(text: &str) -> Vec<String> {
    let t: toml::Table = text.parse().unwrap_or_default();
    let nat64_default_pool4 = t
        .get("translator")
        .and_then(|t| t.get("mode"))
        .and_then(|m| m.as_str())
        == Some("nat64")
        && t.get("nat64").and_then(|n| n.get("pool4")).is_none();
    if nat64_default_pool4 {
        vec![addr::POOL6.to_owned()]
    } else {
        bed_routes()
    }
}

/// `binary run` in `ns` with a configuration of the caller's own, for beds other
/// than the standard one (the 464XLAT chain runs a CLAT and a PLAT). Ready when
/// its TUN device is up with carrier and each of `routes` points into it; with
/// `manage_routes = false` the bed adds those routes itself.
pub fn start_sixgate_with_config<'a>(
    ns: &'a Netns,
    binary: &Path,
    config: &str,
    routes: &[&str],
) -> Result<RunningDut<'a>> {
    crate::interrupt::check()?;
    let table: toml::Table = config
        .parse()
        .map_err(|e| Error::new(format!("sixgate config: {e}")))?;
    let cfg = tun_settings(&table, config.to_owned());
    let routes = routes.iter().map(|r| (*r).to_owned()).collect();
    launch_sixgate(ns, binary, cfg, routes).context(format!("starting sixgate in {}", ns.name()))
}

fn launch_sixgate<'a>(
    gateway: &'a Netns,
    binary: &Path,
    cfg: SixgateConfig,
    ready_routes: Vec<String>,
) -> Result<RunningDut<'a>> {
    let dir = ScratchDir::new("sixgate")?;
    // Each daemon its own API socket, so beds side by side do not collide on
    // the default one.
    let mut cfg = cfg;
    let (text, api_socket) = with_api_socket(&cfg.text, &dir.path().join("api.sock"))?;
    cfg.text = text;
    let path = dir.write("sixgate.toml", &cfg.text)?;
    let mut cmd = gateway.command(binary);
    cmd.arg("run").arg("--config").arg(&path);
    let command_line = describe(&cmd);
    let started = Instant::now();
    let process = Background::spawn(&mut cmd, format!("sixgate run in {}", gateway.name()))?;
    let mut t = RunningDut {
        gateway,
        name: "sixgate",
        tun: cfg.tun,
        process: Mutex::new(Some(process)),
        config: cfg.text,
        config_path: path,
        command_line,
        ready_after: Duration::ZERO,
        delete_tun_on_stop: false,
        translator_removes_tun: !cfg.keep,
        ready_routes,
        xdp: cfg.xdp,
        api_socket: Some(api_socket),
        _dir: dir,
    };
    t.wait_ready(!cfg.manage_routes)?;
    t.ready_after = started.elapsed();
    Ok(t)
}

/// `text` with `[daemon] socket` set to `default` unless it names one; and the
/// socket. `[daemon] state_file`, unless named, goes beside the socket too:
/// a daemon in a bed must never read or write the host's
/// `/var/lib/sixgate/nat64.state`, nor another bed's (docs/restart.md).
fn with_api_socket(text: &str, default: &Path) -> Result<(String, PathBuf)> {
    let mut table: toml::Table = text
        .parse()
        .map_err(|e| Error::new(format!("sixgate config: {e}")))?;
    let daemon = table
        .entry("daemon")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(daemon) = daemon.as_table_mut() else {
        return Err(Error::new("sixgate config: [daemon] is not a table"));
    };
    let named = daemon
        .get("socket")
        .and_then(|v| v.as_str())
        .map(PathBuf::from);
    let has_state = daemon.contains_key("state_file");
    if named.is_some() && has_state {
        return Ok((text.to_owned(), named.unwrap_or_default()));
    }
    let socket = named.unwrap_or_else(|| default.to_owned());
    daemon.insert(
        "socket".into(),
        toml::Value::String(socket.to_string_lossy().into_owned()),
    );
    if !has_state {
        let state = default.with_file_name("nat64.state");
        daemon.insert(
            "state_file".into(),
            toml::Value::String(state.to_string_lossy().into_owned()),
        );
    }
    let text = toml::to_string(&table).map_err(|e| Error::new(format!("sixgate config: {e}")))?;
    Ok((text, socket))
}

fn start_tayga(gateway: &Netns) -> Result<RunningDut<'_>> {
    let dir = ScratchDir::new("tayga")?;
    let path = dir.write("tayga.conf", tayga_config(dir.path()))?;
    let conf = path.to_string_lossy().into_owned();
    let started = Instant::now();
    gateway.run("tayga", ["-c", &conf, "--mktun"])?;
    // From here on the struct owns the TUN device and deletes it on drop.
    let mut t = RunningDut {
        gateway,
        name: "tayga",
        tun: TAYGA_TUN.into(),
        process: Mutex::new(None),
        config: tayga_config(dir.path()),
        config_path: path,
        command_line: String::new(),
        ready_after: Duration::ZERO,
        delete_tun_on_stop: true,
        translator_removes_tun: false,
        ready_routes: bed_routes(),
        xdp: None,
        api_socket: None,
        _dir: dir,
    };
    gateway.link_up(TAYGA_TUN)?;
    add_routes(gateway, TAYGA_TUN, &t.ready_routes)?;
    gateway.add_route_dev(&addr::TAYGA_V4.to_string(), TAYGA_TUN)?;
    // -d: debug messages on standard error, and stay in the foreground.
    let mut cmd = gateway.command("tayga");
    cmd.args(["-c", &conf, "-d"]);
    t.command_line = describe(&cmd);
    *lock(&t.process) = Some(Background::spawn(
        &mut cmd,
        format!("tayga in {}", gateway.name()),
    )?);
    t.wait_ready(false)?;
    t.ready_after = started.elapsed();
    Ok(t)
}

/// Routes for `prefixes` into the TUN device.
fn add_routes(gateway: &Netns, tun: &str, prefixes: &[String]) -> Result<()> {
    for p in prefixes {
        gateway.add_route_dev(p, tun)?;
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A translator running in a bed's gateway. Dropping it stops it (SIGTERM) and
/// removes its TUN device if it is still there; [`RunningDut::stop`] does
/// the same and reports how it went.
#[derive(Debug)]
pub struct RunningDut<'a> {
    gateway: &'a Netns,
    name: &'static str,
    tun: String,
    process: Mutex<Option<Background>>,
    config: String,
    config_path: PathBuf,
    command_line: String,
    ready_after: Duration,
    /// The bed made the TUN device (TAYGA) and removes it.
    delete_tun_on_stop: bool,
    /// The translator is expected to remove its TUN device when it exits.
    translator_removes_tun: bool,
    /// Prefixes whose routes must point into the TUN device before it is ready.
    ready_routes: Vec<String>,
    /// XDP data plane: the interfaces its program must be attached to (and
    /// detached from when it stops); no TUN device then.
    xdp: Option<[String; 2]>,
    /// sixgate's API socket (`[daemon] socket`); none for TAYGA.
    api_socket: Option<PathBuf>,
    _dir: ScratchDir,
}

/// How a translator ended, from [`RunningDut::stop`].
#[derive(Debug, Clone)]
pub struct Stopped {
    /// Which translator.
    pub name: &'static str,
    /// Its exit status.
    pub status: ExitStatus,
    /// True if it ignored SIGTERM and was killed.
    pub killed: bool,
    /// Everything it wrote to standard output (sixgate: its summary).
    pub stdout: String,
    /// Everything it wrote to standard error (its log).
    pub stderr: String,
    /// The translator should have removed its TUN device on exit, but it was still
    /// there (the bed removed it).
    pub tun_left_behind: bool,
    /// Counters of the TUN device just before the translator was stopped.
    pub tun_stats: Option<LinkStats>,
    /// XDP data plane: interfaces that still had an XDP program after it exited.
    pub xdp_left_behind: Vec<String>,
}

impl Stopped {
    /// `Ok` if the translator stopped cleanly: it exited by itself on SIGTERM with
    /// status 0 and removed what it should have.
    pub fn check_clean(&self) -> Result<()> {
        let mut problems = Vec::new();
        if self.killed {
            problems.push(format!(
                "it ignored SIGTERM for {} s and was killed",
                STOP_GRACE.as_secs()
            ));
        } else if !self.status.success() {
            problems.push(format!("it exited with {}", self.status));
        }
        if self.tun_left_behind {
            problems.push("it left its TUN device behind".into());
        }
        if !self.xdp_left_behind.is_empty() {
            problems.push(format!(
                "it left its XDP program on {}",
                self.xdp_left_behind.join(", ")
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::new(format!(
                "{} did not stop cleanly: {}; its output:\n{}{}",
                self.name,
                problems.join("; "),
                self.stdout,
                self.stderr
            )))
        }
    }
}

impl RunningDut<'_> {
    /// `sixgate` or `tayga`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its TUN device in the gateway.
    pub fn tun(&self) -> &str {
        &self.tun
    }

    /// The configuration file's text.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// Where the configuration file is.
    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// sixgate's API socket (docs/control.md); `None` for TAYGA.
    pub fn api_socket(&self) -> Option<&Path> {
        self.api_socket.as_deref()
    }

    /// The command line it runs with.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// How long it took from start to ready.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// Its output so far, standard output then standard error.
    pub fn log(&self) -> String {
        match &*lock(&self.process) {
            Some(p) => format!("{}{}", p.stdout(), p.stderr()),
            None => String::new(),
        }
    }

    /// An error, with its output, if it is no longer running.
    pub fn check_running(&self) -> Result<()> {
        let mut guard = lock(&self.process);
        match guard.as_mut().and_then(|p| p.exited()) {
            None => Ok(()),
            Some(status) => {
                let p = guard.as_ref().expect("exited implies a process");
                Err(Error::new(format!(
                    "{} exited ({status}); its output:\n{}{}",
                    self.name,
                    p.stdout(),
                    p.stderr()
                )))
            }
        }
    }

    /// Counters of its TUN device: packets the kernel routed into the translator
    /// (`tx_packets`) and packets it wrote back (`rx_packets`).
    pub fn tun_stats(&self) -> Result<LinkStats> {
        self.gateway.link_stats(&self.tun)
    }

    /// Wait until the TUN device is up with carrier and the routes point into it.
    /// With `add_routes_itself`, the bed adds the routes once the device is up.
    fn wait_ready(&mut self, add_routes_itself: bool) -> Result<()> {
        if let Some(ifaces) = self.xdp.clone() {
            return self.wait_xdp_ready(&ifaces);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut routes_added = false;
        loop {
            self.check_running()?;
            let state = self.gateway.link(&self.tun)?;
            if let Some(s) = &state
                && s.up
                && s.lower_up
            {
                if add_routes_itself && !routes_added {
                    add_routes(self.gateway, &self.tun, &self.ready_routes)?;
                    routes_added = true;
                }
                if self.routes_ready()? {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                let what = match state {
                    None => format!("its TUN device {} does not exist", self.tun),
                    Some(s) if !(s.up && s.lower_up) => format!(
                        "its TUN device {} is not up with carrier (flags {})",
                        self.tun,
                        s.flags.join(",")
                    ),
                    Some(_) => format!(
                        "the routes for {} do not point into {}",
                        self.ready_routes.join(" and "),
                        self.tun
                    ),
                };
                return Err(Error::new(format!(
                    "not ready after {} s: {what}; its output:\n{}",
                    READY_TIMEOUT.as_secs(),
                    self.log()
                )));
            }
            crate::interrupt::check()?;
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// XDP: ready when the program is on both interfaces (sixgate attaches it
    /// last, once the sockets are bound and their fill rings filled).
    fn wait_xdp_ready(&self, ifaces: &[String; 2]) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            self.check_running()?;
            if self.gateway.has_xdp(&ifaces[0])? && self.gateway.has_xdp(&ifaces[1])? {
                // The workers start right after the attach message.
                if self.log().contains("workers started") {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "not ready after {} s: no XDP program on {} and {}; its output:\n{}",
                    READY_TIMEOUT.as_secs(),
                    ifaces[0],
                    ifaces[1],
                    self.log()
                )));
            }
            crate::interrupt::check()?;
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn routes_ready(&self) -> Result<bool> {
        let dev = format!("dev {} ", self.tun);
        for prefix in &self.ready_routes {
            if !format!("{} ", self.gateway.routes_to(prefix)?).contains(&dev) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Stop it (SIGTERM; SIGKILL after 10 s) and report how it went; see
    /// [`Stopped::check_clean`].
    pub fn stop(mut self) -> Result<Stopped> {
        self.shutdown(true)
    }

    /// [`RunningDut::stop`], but a TUN device it leaves (`[daemon]
    /// fastpath_handover`, docs/restart.md) stays for the next start;
    /// `tun_left_behind` says whether it did.
    pub fn stop_leaving_tun(mut self) -> Result<Stopped> {
        self.translator_removes_tun = true;
        self.shutdown(false)
    }

    fn shutdown(&mut self, delete_tun: bool) -> Result<Stopped> {
        let tun_stats = self.tun_stats().ok();
        let finished = lock(&self.process).take().map(|p| p.stop(STOP_GRACE));
        let still_there = self.gateway.link(&self.tun)?.is_some();
        if still_there && delete_tun {
            self.gateway
                .ip(["link", "del", &self.tun])
                .context("removing the TUN device")?;
        }
        let mut xdp_left_behind = Vec::new();
        for i in self.xdp.iter().flatten() {
            if self.gateway.has_xdp(i)? {
                xdp_left_behind.push(i.clone());
                let _ = self.gateway.ip(["link", "set", "dev", i, "xdp", "off"]);
                let _ = self
                    .gateway
                    .ip(["link", "set", "dev", i, "xdpgeneric", "off"]);
            }
        }
        let finished =
            finished.ok_or_else(|| Error::new(format!("{} never started", self.name)))?;
        Ok(Stopped {
            name: self.name,
            status: finished.status,
            killed: finished.killed,
            stdout: finished.stdout,
            stderr: finished.stderr,
            tun_left_behind: still_there && self.translator_removes_tun && !self.delete_tun_on_stop,
            tun_stats,
            xdp_left_behind,
        })
    }
}

impl Drop for RunningDut<'_> {
    fn drop(&mut self) {
        let running = lock(&self.process).is_some();
        if running || self.delete_tun_on_stop {
            let _ = self.shutdown(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_routes_leave_out_a_default_pool4() {
        let nat64 = sixgate_config(Dataplane::Tun, crate::NAT64_TOML).unwrap();
        assert_eq!(ready_routes_for(&nat64.text), bed_routes());
        let default_pool4 = sixgate_config(
            Dataplane::Tun,
            "[translator]\nmode = \"nat64\"\n[nat64]\nudp_timeout = 300\n",
        )
        .unwrap();
        assert_eq!(ready_routes_for(&default_pool4.text), [addr::POOL6]);
    }

    #[test]
    fn sixgate_config_plain_and_merged() {
        let c = sixgate_config(Dataplane::Tun, "").unwrap();
        assert!(c.text.starts_with(TRANSLATOR_TOML), "{}", c.text);
        assert!(
            c.text.contains("[tun]\nname = \"sixgate0\"\n"),
            "{}",
            c.text
        );
        assert_eq!(c.tun, SIXGATE_TUN);
        assert!(c.manage_routes && !c.keep);

        let c = sixgate_config(
            Dataplane::Tun,
            "[daemon]\nworkers = 2\n[tun]\nname = \"sg1\"\nmanage_routes = false\n",
        )
        .unwrap();
        let t: toml::Table = c.text.parse().unwrap();
        assert_eq!(t["daemon"]["workers"].as_integer(), Some(2));
        assert_eq!(t["tun"]["name"].as_str(), Some("sg1"));
        assert_eq!(t["translator"]["pool6"].as_str(), Some(addr::POOL6));
        assert_eq!(c.tun, "sg1");
        assert!(!c.manage_routes);

        assert!(sixgate_config(Dataplane::Tun, "[tun\n").is_err());

        // Another mode replaces [translator]; [tun] still merges.
        let c = sixgate_config(Dataplane::Tun, crate::NAT64_TOML).unwrap();
        let t: toml::Table = c.text.parse().unwrap();
        assert_eq!(t["translator"]["mode"].as_str(), Some("nat64"));
        assert!(t["translator"].get("eam").is_none(), "{}", c.text);
        assert_eq!(t["tun"]["name"].as_str(), Some(SIXGATE_TUN));
    }

    #[test]
    fn tayga_config_maps_like_sixgate() {
        let c = tayga_config(Path::new("/tmp/x"));
        assert!(c.contains("tun-device nat64\n"));
        assert!(c.contains("ipv4-addr 192.0.2.1\n"));
        assert!(c.contains("prefix 2001:db8:64::/96\n"));
        assert!(c.contains("map 198.18.0.0/24 2001:db8:1::/120\n"));
        assert!(c.contains("data-dir /tmp/x\n"));
    }

    #[test]
    fn dataplane_names() {
        assert_eq!(Dataplane::parse("tun").unwrap(), Dataplane::Tun);
        assert_eq!(Dataplane::parse("xdp").unwrap(), Dataplane::Xdp);
        let e = Dataplane::parse("dpdk").unwrap_err().to_string();
        assert!(e.contains("\"dpdk\"") && e.contains("tun, xdp"), "{e}");
        let c = sixgate_config(Dataplane::Xdp, "").unwrap();
        assert_eq!(c.xdp, Some(["eth6".to_owned(), "eth4".to_owned()]));
        let t: toml::Table = c.text.parse().unwrap();
        assert_eq!(t["daemon"]["dataplane"].as_str(), Some("xdp"));
    }
}
