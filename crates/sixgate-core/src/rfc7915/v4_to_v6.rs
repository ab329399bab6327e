//! STUB
use crate::packet::{PacketBuf, Scratch};
use crate::translator::Translator;
use crate::verdict::{DropReason, Verdict};

/// Translate one packet.
pub fn translate(
    t: &mut Translator,
    pkt: &mut PacketBuf<'_>,
    scratch: &mut Scratch,
    now_ns: u64,
) -> Verdict {
    let _ = (t, pkt, scratch, now_ns);
    Verdict::Dropped(DropReason::Malformed)
}
