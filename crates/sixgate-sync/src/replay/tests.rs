use super::*;

#[test]
fn new_numbers_pass_copies_do_not() {
    let mut w = ReplayWindow::default();
    assert!(w.accept(10));
    assert!(!w.accept(10));
    assert!(w.accept(12));
    assert!(w.accept(11), "reordered but new");
    assert!(!w.accept(11));
    assert!(w.accept(200));
    assert!(!w.accept(200 - WINDOW), "fell out of the window");
    assert!(w.accept(200 - WINDOW + 1));
}

#[test]
fn wraps_around() {
    let mut w = ReplayWindow::default();
    assert!(w.accept(u32::MAX - 1));
    assert!(w.accept(1));
    assert!(w.accept(u32::MAX));
    assert!(!w.accept(u32::MAX - 1));
    assert!(before(u32::MAX, 0));
}
