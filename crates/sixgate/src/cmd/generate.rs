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
    /// Write the manual pages: sixgate.1 and one per subcommand (sixgate-run.1, …).
    Man {
        /// Directory to write into (created if missing).
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
            println!("{}: manual pages written", out.display());
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
        assert!(
            !page.contains("generate"),
            "the hidden command leaked:\n{page}"
        );
    }

    #[test]
    fn pages_and_completions_are_written() {
        let dir = std::env::temp_dir().join(format!("sixgate-generate-{}", std::process::id()));
        run(&Command::Man { out: dir.clone() }).unwrap();
        for page in ["sixgate.1", "sixgate-run.1", "sixgate-config-check.1"] {
            let text = std::fs::read_to_string(dir.join(page)).unwrap();
            assert!(text.starts_with(".ie"), "{page}: {text}");
        }
        assert!(!dir.join("sixgate-generate.1").exists());
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
