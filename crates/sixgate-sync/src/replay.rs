//! Sliding anti-replay window over packet numbers (the IPsec one, RFC 4303
//! §3.4.3): every datagram of a stream carries a fresh packet number, resends
//! included, so a copy of any datagram is refused.

/// Window width: packet numbers more than this far behind the highest seen are
/// refused.
pub const WINDOW: u32 = 64;

/// Serial-number order (RFC 1982) on `u32`: `a` before `b`.
pub(crate) fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The window of one stream.
#[derive(Clone, Debug, Default)]
pub struct ReplayWindow {
    /// Highest packet number accepted; `None` before the first.
    top: Option<u32>,
    /// Bit `i`: `top - i` was seen.
    seen: u64,
}

impl ReplayWindow {
    /// Whether `pn` is new; if so, it is marked seen. Call only after the
    /// datagram's tag has been verified, so forgeries cannot move the window.
    pub fn accept(&mut self, pn: u32) -> bool {
        let Some(top) = self.top else {
            self.top = Some(pn);
            self.seen = 1;
            return true;
        };
        if before(top, pn) {
            let shift = pn.wrapping_sub(top);
            self.seen = if shift >= WINDOW {
                0
            } else {
                self.seen << shift
            };
            self.seen |= 1;
            self.top = Some(pn);
            return true;
        }
        let back = top.wrapping_sub(pn);
        if back >= WINDOW {
            return false;
        }
        let bit = 1u64 << back;
        if self.seen & bit != 0 {
            return false;
        }
        self.seen |= bit;
        true
    }
}

#[cfg(test)]
mod tests;
