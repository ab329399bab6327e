//! STUB: ICMP errors the translator generates.
