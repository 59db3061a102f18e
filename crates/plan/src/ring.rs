//! Which of several key-value servers a key goes to, as memcached clients decide it:
//! [`Ring::ketama`] (consistent hashing, libmemcached's `KETAMA_WEIGHTED`, so keys stored by
//! a libmemcached/pylibmc client are found where barrage looks) and [`Distribution::Modulo`]
//! (libmemcached's default: Jenkins one-at-a-time hash modulo the servers).
//!
//! Ketama at equal weights: each server gets 40 MD5 digests of `host:port-i` (`host-i` when
//! the port is memcached's default 11211, as libmemcached writes it), each digest 4 points
//! (little-endian 32-bit words); a key goes to the first point at or after the first word
//! of its own MD5, wrapping around. Removing a server moves only its own keys.

use md5::{Digest, Md5};

/// memcached's port, which libmemcached leaves out of a point's name.
const DEFAULT_PORT: u16 = 11211;
/// MD5 digests per server (`MEMCACHED_POINTS_PER_SERVER_KETAMA` / 4).
const DIGESTS_PER_SERVER: u32 = 40;

/// How keys are spread over servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Consistent hashing: a key stays on its server when others come and go.
    Ketama(Ring),
    /// One-at-a-time hash modulo the number of servers: most keys move when it changes.
    Modulo(usize),
}

impl Distribution {
    /// The server (an index into the list it was built from) of `key`.
    pub fn server(&self, key: &[u8]) -> usize {
        match self {
            Distribution::Ketama(ring) => ring.server(key),
            Distribution::Modulo(n) => (one_at_a_time(key) % (*n).max(1) as u32) as usize,
        }
    }
}

/// libmemcached's ketama continuum over some servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// (point, server index), sorted.
    points: Vec<(u32, usize)>,
    /// How many servers it spreads over.
    servers: usize,
}

impl Ring {
    /// The ring of `servers` (host, port), each weighted alike.
    pub fn ketama(servers: &[(&str, u16)]) -> Ring {
        let mut points = Vec::with_capacity(servers.len() * 4 * DIGESTS_PER_SERVER as usize);
        for (index, (host, port)) in servers.iter().enumerate() {
            for i in 0..DIGESTS_PER_SERVER {
                let name = match *port {
                    DEFAULT_PORT => format!("{host}-{i}"),
                    port => format!("{host}:{port}-{i}"),
                };
                let digest = Md5::digest(name.as_bytes());
                points.extend(digest.chunks_exact(4).map(|w| (word(w), index)));
            }
        }
        points.sort_unstable();
        Ring { points, servers: servers.len() }
    }

    /// The server of `key`; with one server, that one (libmemcached skips the hash then).
    pub fn server(&self, key: &[u8]) -> usize {
        if self.servers <= 1 {
            return 0;
        }
        let hash = key_hash(key);
        let at = self.points.partition_point(|p| p.0 < hash);
        self.points.get(at).unwrap_or(&self.points[0]).1
    }
}

/// A little-endian 32-bit word of a digest.
fn word(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes.try_into().expect("four bytes"))
}

/// The first word of a key's MD5, where the key lands on the ring.
fn key_hash(key: &[u8]) -> u32 {
    word(&Md5::digest(key)[..4])
}

/// Bob Jenkins' one-at-a-time hash, libhashkit's default.
pub fn one_at_a_time(key: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &b in key {
        h = h.wrapping_add(u32::from(b));
        h = h.wrapping_add(h << 10);
        h ^= h >> 6;
    }
    h = h.wrapping_add(h << 3);
    h ^= h >> 11;
    h.wrapping_add(h << 15)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three memcached servers as the vectors were taken: pylibmc (libmemcached 1.1.4)
    /// stored `memtier-0..1999` on them, and each server was asked which keys it held.
    const SERVERS: [(&str, u16); 3] = [("127.0.0.1", 21301), ("127.0.0.1", 21302), ("127.0.0.1", 11211)];

    fn keys(n: usize) -> impl Iterator<Item = String> {
        (0..n).map(|i| format!("memtier-{i}"))
    }

    #[test]
    fn ketama_puts_keys_where_libmemcached_does() {
        let ring = Ring::ketama(&SERVERS);
        assert_eq!(key_hash(b"memtier-0"), 0x67d9_efb1);
        assert_eq!(&ring.points[..3], &[(743_096, 0), (16_590_639, 2), (45_950_732, 1)]);
        let got: Vec<usize> = keys(12).map(|k| ring.server(k.as_bytes())).collect();
        assert_eq!(got, [2, 0, 0, 2, 1, 2, 0, 0, 0, 2, 2, 1]);
        let mut shares = [0; 3];
        keys(100_000).for_each(|k| shares[ring.server(k.as_bytes())] += 1);
        assert_eq!(shares, [31_125, 37_254, 31_621]);
    }

    #[test]
    fn removing_a_server_moves_only_its_keys() {
        let (all, two) = (Ring::ketama(&SERVERS), Ring::ketama(&SERVERS[..2]));
        for k in keys(10_000) {
            let before = all.server(k.as_bytes());
            if before != 2 {
                assert_eq!(two.server(k.as_bytes()), before, "{k} moved");
            }
        }
        assert_eq!(Ring::ketama(&SERVERS[..1]).server(b"anything"), 0);
    }

    #[test]
    fn modulo_is_libmemcacheds_default() {
        assert_eq!(one_at_a_time(b"memtier-0"), 0x830c_f00f);
        let modulo = Distribution::Modulo(3);
        let got: Vec<usize> = keys(12).map(|k| modulo.server(k.as_bytes())).collect();
        assert_eq!(got, [2, 2, 2, 2, 0, 0, 0, 0, 0, 1, 2, 1]);
    }
}
