//! Preallocated slabs of fixed-size records and intrusive doubly-linked lists over
//! them. Tables index records by `u32`, so an index map costs 4 bytes an entry and
//! no per-flow allocation ever happens: capacity is fixed when the worker starts.

/// "No record".
pub(crate) const NIL: u32 = u32::MAX;

/// The two links a record keeps per list it can be on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub prev: u32,
    pub next: u32,
}

impl Link {
    pub const NONE: Link = Link {
        prev: NIL,
        next: NIL,
    };
}

/// Access to one of a record's links.
pub(crate) type LinkOf<T> = fn(&mut T) -> &mut Link;

/// A record that can sit in a [`Slab`]: its free-list link is `free_link`.
pub(crate) trait Slot: Copy {
    fn free_link(&mut self) -> &mut Link;
}

/// Fixed-capacity storage; freed slots are reused first (LIFO).
pub(crate) struct Slab<T> {
    pub items: Vec<T>,
    free_head: u32,
    live: u32,
    cap: u32,
}

impl<T: Slot> Slab<T> {
    /// Room for `cap` records, reserved now (pages are touched as they fill).
    pub fn with_capacity(cap: u32) -> Self {
        Slab {
            items: Vec::with_capacity(cap as usize),
            free_head: NIL,
            live: 0,
            cap,
        }
    }

    /// Store `v`; `None` when full.
    pub fn alloc(&mut self, mut v: T) -> Option<u32> {
        let idx = if self.free_head != NIL {
            let i = self.free_head;
            self.free_head = self.items[i as usize].free_link().next;
            *v.free_link() = Link::NONE;
            self.items[i as usize] = v;
            i
        } else if (self.items.len() as u32) < self.cap {
            *v.free_link() = Link::NONE;
            self.items.push(v);
            self.items.len() as u32 - 1
        } else {
            return None;
        };
        self.live += 1;
        Some(idx)
    }

    /// Give slot `i` back.
    pub fn free(&mut self, i: u32) {
        self.items[i as usize].free_link().next = self.free_head;
        self.free_head = i;
        self.live -= 1;
    }

    pub fn live(&self) -> u32 {
        self.live
    }

    /// Which slots of `items` hold a record (the free list walked once;
    /// allocates, so never on the packet path).
    pub fn live_mask(&self) -> Vec<bool> {
        let mut mask = vec![true; self.items.len()];
        let mut i = self.free_head;
        while i != NIL {
            mask[i as usize] = false;
            let mut v = self.items[i as usize];
            i = v.free_link().next;
        }
        mask
    }

    pub fn is_full(&self) -> bool {
        self.live >= self.cap
    }

    pub fn capacity(&self) -> u32 {
        self.cap
    }

    #[inline]
    pub fn get(&self, i: u32) -> &T {
        &self.items[i as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

/// A doubly-linked list threaded through records by one of their links.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List {
    pub head: u32,
    pub tail: u32,
    pub len: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl List {
    /// Append record `i`.
    pub fn push_back<T>(&mut self, items: &mut [T], i: u32, link: LinkOf<T>) {
        *link(&mut items[i as usize]) = Link {
            prev: self.tail,
            next: NIL,
        };
        if self.tail != NIL {
            link(&mut items[self.tail as usize]).next = i;
        } else {
            self.head = i;
        }
        self.tail = i;
        self.len += 1;
    }

    /// Unlink record `i` (which must be on this list).
    pub fn remove<T>(&mut self, items: &mut [T], i: u32, link: LinkOf<T>) {
        let Link { prev, next } = *link(&mut items[i as usize]);
        if prev != NIL {
            link(&mut items[prev as usize]).next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            link(&mut items[next as usize]).prev = prev;
        } else {
            self.tail = prev;
        }
        *link(&mut items[i as usize]) = Link::NONE;
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct R {
        v: u32,
        a: Link,
    }
    impl Slot for R {
        fn free_link(&mut self) -> &mut Link {
            &mut self.a
        }
    }

    #[test]
    fn slab_reuses_and_bounds() {
        let mut s = Slab::with_capacity(2);
        let a = s
            .alloc(R {
                v: 1,
                a: Link::NONE,
            })
            .unwrap();
        let b = s
            .alloc(R {
                v: 2,
                a: Link::NONE,
            })
            .unwrap();
        assert!(
            s.alloc(R {
                v: 3,
                a: Link::NONE
            })
            .is_none()
        );
        s.free(a);
        assert_eq!(
            s.alloc(R {
                v: 4,
                a: Link::NONE
            }),
            Some(a)
        );
        assert_eq!(s.get(b).v, 2);
        assert_eq!(s.live(), 2);
    }

    #[test]
    fn list_unlinks_anywhere() {
        let mut items: Vec<R> = (0..4).map(|v| R { v, a: Link::NONE }).collect();
        let mut l = List::default();
        let f: LinkOf<R> = |r| &mut r.a;
        for i in 0..4 {
            l.push_back(&mut items, i, f);
        }
        l.remove(&mut items, 2, f);
        l.remove(&mut items, 0, f);
        let mut seen = vec![];
        let mut i = l.head;
        while i != NIL {
            seen.push(items[i as usize].v);
            i = items[i as usize].a.next;
        }
        assert_eq!(seen, [1, 3]);
        assert_eq!((l.len, l.tail), (2, 3));
    }
}
