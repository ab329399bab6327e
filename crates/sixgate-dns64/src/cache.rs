//! A bounded answer cache: at most `capacity` entries (the oldest go first) and
//! no entry older than `max_ttl`. It holds finished replies (after synthesis),
//! keyed by question and the DNSSEC bits that change the reply (DO, CD), and
//! hands them out with their TTLs aged.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use hickory_proto::op::{Message, Query, ResponseCode};

use crate::synth::negative_ttl;

/// What a cached reply answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The name in wire form (length-prefixed labels, then the root's 0),
    /// ASCII letters in lower case: names compare case-blind (RFC 4343 §3).
    name: Vec<u8>,
    qtype: u16,
    qclass: u16,
    dnssec_ok: bool,
    checking_disabled: bool,
}

impl Key {
    /// The key of `q` asked with these DNSSEC bits.
    pub fn new(q: &Query, dnssec_ok: bool, checking_disabled: bool) -> Key {
        let mut name = Vec::with_capacity(q.name.len() + 2);
        for label in q.name.iter() {
            name.push(label.len() as u8);
            name.extend(label.iter().map(u8::to_ascii_lowercase));
        }
        name.push(0);
        Key {
            name,
            qtype: q.query_type.into(),
            qclass: q.query_class.into(),
            dnssec_ok,
            checking_disabled,
        }
    }

    /// The same key from a question's wire form: `name` uncompressed, up to and
    /// including the root's 0.
    pub fn from_wire(
        name: &[u8],
        qtype: u16,
        qclass: u16,
        dnssec_ok: bool,
        checking_disabled: bool,
    ) -> Key {
        Key {
            name: name.to_ascii_lowercase(),
            qtype,
            qclass,
            dnssec_ok,
            checking_disabled,
        }
    }
}

struct Entry {
    reply: Message,
    stored: Instant,
    ttl: u32,
    /// The last wire form handed out: valid while the age (whole seconds, so
    /// the TTLs) and the OPT variant are the same.
    encoded: Option<Encoded>,
}

struct Encoded {
    age: u32,
    variant: u8,
    bytes: Vec<u8>,
}

/// A cache hit.
pub enum Hit {
    /// The reply with its TTLs aged by `age` seconds; encode it, and hand the
    /// bytes to [`Cache::remember`] for the next hit.
    Reply {
        /// The reply.
        reply: Message,
        /// Its age, whole seconds.
        age: u32,
    },
    /// The bytes already encoded for this age and variant: patch the ID, the
    /// RD and CD bits and the question's case (see `resolve`).
    Encoded(Vec<u8>),
}

/// The cache. One lock: lookups are a hash probe and a clone.
pub struct Cache {
    capacity: usize,
    max_ttl: u32,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, Entry>,
    /// Insertion order, for eviction.
    order: VecDeque<Key>,
}

impl Cache {
    /// A cache of at most `capacity` replies (0: caches nothing), each kept at
    /// most `max_ttl` seconds.
    pub fn new(capacity: usize, max_ttl: u32) -> Cache {
        Cache {
            capacity,
            max_ttl,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Run `f` on the entry for `key` and its age in whole seconds, if it is
    /// still fresh; a stale entry is dropped.
    fn fresh<R>(&self, key: &Key, now: Instant, f: impl FnOnce(&Entry, u32) -> R) -> Option<R> {
        if self.capacity == 0 {
            return None;
        }
        let mut inner = self.inner.lock().ok()?;
        let e = inner.map.get(key)?;
        let age = now.saturating_duration_since(e.stored).as_secs();
        if age >= u64::from(e.ttl) {
            inner.map.remove(key);
            return None;
        }
        Some(f(e, age as u32))
    }

    /// The reply for `key` with TTLs lowered by its age, if still fresh.
    pub fn get(&self, key: &Key, now: Instant) -> Option<Message> {
        let (mut m, age) = self.fresh(key, now, |e, age| (e.reply.clone(), age))?;
        age_ttls(&mut m, age);
        Some(m)
    }

    /// Only the encoded reply remembered for this age and `variant`, if any:
    /// the fast path of a hit, which never clones the reply.
    pub fn encoded(&self, key: &Key, now: Instant, variant: u8) -> Option<Vec<u8>> {
        self.fresh(key, now, |e, age| match &e.encoded {
            Some(enc) if enc.age == age && enc.variant == variant => Some(enc.bytes.clone()),
            _ => None,
        })
        .flatten()
    }

    /// Like [`Cache::get`], but hands out the encoded reply when one was
    /// remembered for this age and `variant` (the reply's OPT form).
    pub fn hit(&self, key: &Key, now: Instant, variant: u8) -> Option<Hit> {
        // The reply is cloned under the lock and aged after it.
        let mut hit = self.fresh(key, now, |e, age| match &e.encoded {
            Some(enc) if enc.age == age && enc.variant == variant => {
                Hit::Encoded(enc.bytes.clone())
            }
            _ => Hit::Reply {
                reply: e.reply.clone(),
                age,
            },
        })?;
        if let Hit::Reply { reply, age } = &mut hit {
            age_ttls(reply, *age);
        }
        Some(hit)
    }

    /// Remember `bytes`, the reply for `key` encoded at `age` for `variant`.
    pub fn remember(&self, key: &Key, age: u32, variant: u8, bytes: &[u8]) {
        if let Ok(mut inner) = self.inner.lock()
            && let Some(e) = inner.map.get_mut(key)
        {
            e.encoded = Some(Encoded {
                age,
                variant,
                bytes: bytes.to_vec(),
            });
        }
    }

    /// Keep `reply` for `key`, if it may be cached: NOERROR or NXDOMAIN, not
    /// truncated, with a non-zero lifetime. Its lifetime is its smallest TTL
    /// (a negative reply's: its SOA's, RFC 2308 §5), at most `max_ttl`.
    pub fn put(&self, key: Key, reply: &Message, now: Instant) {
        if self.capacity == 0 || reply.metadata.truncation {
            return;
        }
        let Some(ttl) = lifetime(reply) else { return };
        let ttl = ttl.min(self.max_ttl);
        if ttl == 0 {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let entry = Entry {
            reply: reply.clone(),
            stored: now,
            ttl,
            encoded: None,
        };
        if inner.map.insert(key.clone(), entry).is_none() {
            inner.order.push_back(key);
        }
        while inner.map.len() > self.capacity {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            inner.map.remove(&old);
        }
        // Keys of expired-and-removed entries stay in `order` until popped;
        // bound that too.
        if inner.order.len() > 2 * self.capacity {
            let Inner { map, order } = &mut *inner;
            order.retain(|k| map.contains_key(k));
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.map.len()).unwrap_or(0)
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Lower every TTL of `m` by `age` seconds.
fn age_ttls(m: &mut Message, age: u32) {
    for r in m
        .answers
        .iter_mut()
        .chain(m.authorities.iter_mut())
        .chain(m.additionals.iter_mut())
    {
        r.ttl = r.ttl.saturating_sub(age);
    }
}

/// How long `reply` may be cached, or `None` if not at all.
fn lifetime(reply: &Message) -> Option<u32> {
    match reply.metadata.response_code {
        ResponseCode::NoError | ResponseCode::NXDomain => {}
        _ => return None,
    }
    if reply.answers.is_empty() {
        return negative_ttl(reply);
    }
    reply
        .answers
        .iter()
        .chain(reply.authorities.iter())
        .map(|r| r.ttl)
        .min()
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;
    use std::time::Duration;

    use hickory_proto::op::OpCode;
    use hickory_proto::rr::rdata::A;
    use hickory_proto::rr::{Name, RecordType};
    use hickory_proto::rr::{RData, Record};

    use super::*;

    fn reply(name: &str, ttl: u32) -> (Key, Message) {
        let q = Query::query(Name::from_ascii(name).unwrap(), RecordType::A);
        let mut m = Message::response(0, OpCode::Query);
        m.queries.push(q.clone());
        m.answers.push(Record::from_rdata(
            q.name.clone(),
            ttl,
            RData::A(A(Ipv4Addr::new(192, 0, 2, 1))),
        ));
        (Key::new(&q, false, false), m)
    }

    #[test]
    fn ttls_age_and_expire() {
        let c = Cache::new(10, 86_400);
        let t0 = Instant::now();
        let (k, m) = reply("a.example.", 100);
        c.put(k.clone(), &m, t0);
        let got = c.get(&k, t0 + Duration::from_secs(40)).unwrap();
        assert_eq!(got.answers[0].ttl, 60);
        assert!(c.get(&k, t0 + Duration::from_secs(100)).is_none());
    }

    #[test]
    fn max_ttl_caps_the_lifetime_and_names_are_case_blind() {
        let c = Cache::new(10, 30);
        let t0 = Instant::now();
        let (_, m) = reply("a.example.", 100);
        c.put(Key::new(&m.queries[0], false, false), &m, t0);
        let (k_upper, _) = reply("A.EXAMPLE.", 100);
        assert!(c.get(&k_upper, t0 + Duration::from_secs(29)).is_some());
        assert!(c.get(&k_upper, t0 + Duration::from_secs(30)).is_none());
    }

    #[test]
    fn capacity_bounds_the_entries() {
        let c = Cache::new(3, 86_400);
        let t0 = Instant::now();
        for i in 0..10 {
            let (k, m) = reply(&format!("n{i}.example."), 100);
            c.put(k, &m, t0);
        }
        assert_eq!(c.len(), 3);
        let (newest, _) = reply("n9.example.", 100);
        assert!(c.get(&newest, t0).is_some());
        let (oldest, _) = reply("n0.example.", 100);
        assert!(c.get(&oldest, t0).is_none());
    }

    #[test]
    fn servfail_and_dnssec_bits_are_kept_apart() {
        let c = Cache::new(10, 86_400);
        let t0 = Instant::now();
        let (k, mut m) = reply("a.example.", 100);
        let with_do = Key::new(&m.queries[0], true, false);
        c.put(k.clone(), &m, t0);
        assert!(c.get(&with_do, t0).is_none());
        m.metadata.response_code = ResponseCode::ServFail;
        c.put(with_do.clone(), &m, t0);
        assert!(c.get(&with_do, t0).is_none());
    }
}
