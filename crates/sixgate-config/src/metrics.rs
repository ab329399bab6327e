//! `[metrics]`: the Prometheus endpoint of `sixgate run` (issue 6). Off unless
//! the file has the section with a `listen` address.

use std::net::SocketAddr;

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::MetricsSection;

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
mod tests;
