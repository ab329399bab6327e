//! `[metrics]`: the Prometheus endpoint of `sixgate run` (issue 6). Off unless
//! the file has the section with a `listen` address.

use std::net::SocketAddr;

use serde::Deserialize;
use toml::Spanned;

use crate::ConfigError;
use crate::validate::Cx;

/// Keys of `[metrics]`, in the order of [`MetricsSection`]'s fields.
pub const METRICS_KEYS: &[&str] = &["listen"];

/// `[metrics]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// TCP address serving `GET /metrics`: `"ADDR:PORT"` or `"[V6]:PORT"`.
    pub listen: Option<Spanned<String>>,
}

/// `[metrics]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsSettings {
    /// Where `GET /metrics` is served (port 0: any free port, for tests).
    pub listen: SocketAddr,
}

/// `None` when the section has no `listen`: metrics stay off.
pub(crate) fn section(
    cx: &Cx<'_>,
    m: MetricsSection,
) -> Result<Option<MetricsSettings>, ConfigError> {
    let Some(v) = &m.listen else {
        return Ok(None);
    };
    let listen = v.get_ref().parse::<SocketAddr>().map_err(|_| {
        cx.bad(
            "listen",
            v,
            "not ADDR:PORT",
            "e.g. \"127.0.0.1:9464\" or \"[::1]:9464\" (a port is required)",
        )
    })?;
    Ok(Some(MetricsSettings { listen }))
}

#[cfg(test)]
mod tests {
    use crate::tests::ok;

    const SIIT: &str = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n";

    #[test]
    fn off_without_the_section_or_the_key() {
        assert_eq!(ok(SIIT).metrics, None);
        assert_eq!(ok(&format!("{SIIT}[metrics]\n")).metrics, None);
    }

    #[test]
    fn listen_is_addr_and_port() {
        let l = ok(&format!("{SIIT}[metrics]\nlisten = \"[::1]:9464\"\n"));
        assert_eq!(l.metrics.unwrap().listen, "[::1]:9464".parse().unwrap());
        let e = crate::parse(
            &format!("{SIIT}[metrics]\nlisten = \"127.0.0.1\"\n"),
            "t.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("t.toml:5:10") && e.contains("not ADDR:PORT"),
            "{e}"
        );
        let e = crate::parse(&format!("{SIIT}[metrics]\nport = 1\n"), "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("port"), "{e}");
    }
}
