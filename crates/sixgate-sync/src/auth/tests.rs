use super::*;

#[test]
fn sign_then_verify() {
    let k = Key::new(b"0123456789abcdef").unwrap();
    let tag = k.sign(b"hello");
    assert!(k.verify(b"hello", &tag));
    assert!(!k.verify(b"hellO", &tag));
    assert!(!k.verify(b"hello", &tag[..31]));
    let other = Key::new(b"0123456789abcdeF").unwrap();
    assert!(!other.verify(b"hello", &tag));
}

#[test]
fn rfc4231_case_2() {
    // RFC 4231 §4.3: key "Jefe".
    let k = Key::new(b"Jefe").unwrap();
    let tag = k.sign(b"what do ya want for nothing?");
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn empty_key_is_refused_and_debug_hides_it() {
    assert!(Key::new(b"").is_none());
    assert_eq!(format!("{:?}", Key::new(b"secret").unwrap()), "Key(..)");
}
