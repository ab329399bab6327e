//! `sixgate generate man|completions`: the manual pages and shell completions,
//! generated from the same clap definitions that parse the command line, so they
//! cannot fall out of step with it. Hidden from `--help`; packaging runs it
//! (see docs/packaging.md).

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

use super::CmdResult;

/// `sixgate generate` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write the manual pages: sixgate.1 and one per subcommand (sixgate-run.1,
    /// …), and sixgate.toml.5 (the configuration file, from docs/config.md).
    Man {
        /// Directory to write into (created if missing). sixgate.toml.5 goes into
        /// the sibling man5 when DIR is a man1 directory, else into DIR too.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Write the completion script for SHELL.
    Completions {
        /// bash, elvish, fish, powershell or zsh.
        shell: Shell,
        /// Directory to write into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

pub fn run(cmd: &Command) -> CmdResult {
    match cmd {
        Command::Man { out } => {
            mkdir(out)?;
            clap_mangen::generate_to(crate::Cli::command(), out)
                .map_err(|e| format!("{}: {e}", out.display()))?;
            let mut cmd = crate::Cli::command();
            cmd.build();
            name_values_in_synopses(&cmd, "sixgate", out)?;
            println!("{}: manual pages written", out.display());
            let dir5 = section5_dir(out);
            mkdir(&dir5)?;
            let page = dir5.join("sixgate.toml.5");
            std::fs::write(&page, crate::config_man::page(env!("CARGO_PKG_VERSION")))
                .map_err(|e| format!("{}: {e}", page.display()))?;
            println!("{}", page.display());
        }
        Command::Completions { shell, out } => {
            mkdir(out)?;
            let path =
                clap_complete::generate_to(*shell, &mut crate::Cli::command(), "sixgate", out)
                    .map_err(|e| format!("{}: {e}", out.display()))?;
            println!("{}", path.display());
        }
    }
    Ok(())
}

/// clap_mangen writes an option that takes a value as `<--config>` in a
/// page's SYNOPSIS, without the value; this writes `--config FILE` there,
/// on `cmd`'s page (`page`.1 in `dir`) and its subcommands'.
fn name_values_in_synopses(cmd: &clap::Command, page: &str, dir: &Path) -> CmdResult {
    let path = dir.join(format!("{page}.1"));
    if let Ok(text) = std::fs::read_to_string(&path) {
        let fixed = synopsis_with_values(&text, cmd);
        if fixed != text {
            std::fs::write(&path, fixed).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    for sub in cmd.get_subcommands() {
        name_values_in_synopses(sub, &format!("{page}-{}", sub.get_name()), dir)?;
    }
    Ok(())
}

/// [`name_values_in_synopses`] on one page's text.
fn synopsis_with_values(text: &str, cmd: &clap::Command) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let Some(i) = lines.iter().position(|l| l == ".SH SYNOPSIS") else {
        return text.to_owned();
    };
    let Some(line) = lines.get_mut(i + 1) else {
        return text.to_owned();
    };
    for arg in cmd.get_arguments() {
        let (Some(long), Some(names)) = (arg.get_long(), arg.get_value_names()) else {
            continue;
        };
        if !arg.get_action().takes_values() {
            continue;
        }
        let opt = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
        let value = names
            .iter()
            .map(|n| format!("\\fI{n}\\fR"))
            .collect::<Vec<_>>();
        let with = format!("{opt} {}", value.join(" "));
        *line = line
            .replace(&format!("<{opt}>"), &with)
            .replace(&format!("[{opt}]"), &format!("[{with}]"));
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Where the section 5 page goes: next to `man1` as `man5`, else `dir` itself.
fn section5_dir(dir: &Path) -> PathBuf {
    match (dir.file_name(), dir.parent()) {
        (Some(n), Some(parent)) if n == "man1" => parent.join("man5"),
        _ => dir.to_owned(),
    }
}

fn mkdir(dir: &Path) -> CmdResult {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The top-level manual page, rendered in memory (for the tests).
#[cfg(test)]
pub fn top_page() -> String {
    let mut buf = Vec::new();
    clap_mangen::Man::new(crate::Cli::command())
        .render(&mut buf)
        .unwrap();
    String::from_utf8(buf).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_man_page_names_every_visible_subcommand() {
        let page = top_page();
        let cli = crate::Cli::command();
        let visible: Vec<&str> = cli
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name())
            .collect();
        assert!(visible.len() >= 5, "{visible:?}");
        for name in &visible {
            // roff escapes '-' as '\-'.
            assert!(
                page.contains(&format!("sixgate\\-{name}(1)")),
                "sixgate.1 does not mention `{name}`:\n{page}"
            );
        }
        // Issue 30: the install steps use `generate`, so it is not hidden.
        assert!(visible.contains(&"generate"), "{visible:?}");
    }

    /// Issue 20: the top page and `--help` describe every mode, the NAME line
    /// does not repeat the name, and `run --help` names every section of the
    /// file (docs/config.md's `## [section]` headings) and both data planes.
    #[test]
    fn help_and_pages_tell_every_mode_and_section() {
        let page = top_page();
        assert!(page.contains("sixgate \\- IPv4/IPv6 translator"), "{page}");
        assert!(!page.contains("sixgate \\- sixgate"), "{page}");
        let mut cli = crate::Cli::command();
        let help = cli.render_long_help().to_string();
        assert!(!help.contains("(SIIT, RFC 7915)"), "{help}");
        for word in ["SIIT", "NAT64", "CLAT", "MAP-T", "DNS64", "AF_XDP"] {
            assert!(help.contains(word), "{word}: {help}");
        }
        let run = cli
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        for section in crate::config_man::SOURCE
            .lines()
            .filter_map(|l| l.strip_prefix("## `")?.strip_suffix('`'))
        {
            assert!(run.contains(section), "run --help lacks {section}: {run}");
        }
        for plane in ["TUN", "AF_XDP"] {
            assert!(run.contains(plane), "{plane}: {run}");
        }
    }

    #[test]
    fn pages_and_completions_are_written() {
        let dir = std::env::temp_dir().join(format!("sixgate-generate-{}", std::process::id()));
        run(&Command::Man { out: dir.clone() }).unwrap();
        for page in ["sixgate.1", "sixgate-run.1", "sixgate-config-check.1"] {
            let text = std::fs::read_to_string(dir.join(page)).unwrap();
            assert!(text.starts_with(".ie"), "{page}: {text}");
        }
        // Issue 30: a SYNOPSIS names the value an option takes.
        let run_page = std::fs::read_to_string(dir.join("sixgate-run.1")).unwrap();
        assert!(
            run_page.contains(
                "\\fBsixgate run\\fR \\fB\\-\\-config\\fR \\fIFILE\\fR [\\fB\\-\\-keep\\fR]"
            ),
            "{run_page}"
        );
        // Issue 30: the self-test has no DUT, so no --dut or --config.
        let self_test = std::fs::read_to_string(dir.join("sixgate-bench-self-test.1")).unwrap();
        assert!(
            !self_test.contains("\\-\\-dut") && !self_test.contains("\\-\\-config"),
            "{self_test}"
        );
        let five = std::fs::read_to_string(dir.join("sixgate.toml.5")).unwrap();
        assert!(five.starts_with(".TH SIXGATE.TOML 5"), "{five}");
        // In a man1 directory, the section 5 page goes to man5.
        let man1 = dir.join("share/man/man1");
        run(&Command::Man { out: man1.clone() }).unwrap();
        assert!(man1.join("sixgate.1").exists());
        assert!(dir.join("share/man/man5/sixgate.toml.5").exists());
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            run(&Command::Completions {
                shell,
                out: dir.clone(),
            })
            .unwrap();
        }
        let bash = std::fs::read_to_string(dir.join("sixgate.bash")).unwrap();
        assert!(bash.contains("--config"), "{bash}");
        assert!(dir.join("_sixgate").exists() && dir.join("sixgate.fish").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
