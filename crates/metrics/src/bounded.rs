//! Lists of a results file decoded with a bound on their length, checked before they are.
//!
//! postcard writes a list as its length, then its entries, and serde's `Vec` decodes every
//! entry before anything can count them: a crafted record of 64 MiB holding five million
//! empty keys (11 bytes each) made the reader allocate a gigabyte, as each decodes to 150.
//! A [`Bounded`] list refuses a length over its [`Limit`] as soon as it is read (postcard
//! gives it as the size hint), and otherwise stops at the first entry past the limit, so
//! decoding one never holds more than its limit of entries.
//!
//! postcard keeps no message of a decoder's error (its `custom` error says only "Serde
//! Deserialization Error"), so [`refuse`] also keeps the reason for [`decoding`], which
//! the reader's warning quotes.

use serde::de::{Deserialize, Deserializer, Error, SeqAccess, Visitor};
use serde::{Serialize, Serializer};
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

/// How many entries one kind of list may hold, and what they are called in a refusal.
pub(crate) trait Limit {
    /// The most entries.
    const MAX: usize;
    /// What the entries are, plural: "request names".
    const WHAT: &'static str;
}

/// Declares a [`Limit`] of `max` entries called `what`.
macro_rules! limit {
    ($(#[$doc:meta])* $name:ident = $max:expr, $what:literal) => {
        $(#[$doc])*
        pub(crate) struct $name;
        impl $crate::bounded::Limit for $name {
            const MAX: usize = $max;
            const WHAT: &'static str = $what;
        }
    };
}
pub(crate) use limit;

/// A list of at most `L::MAX` entries, written as a plain one.
pub(crate) struct Bounded<T, L>(pub Vec<T>, PhantomData<L>);

impl<T, L> Bounded<T, L> {
    pub(crate) fn new(v: Vec<T>) -> Self {
        Bounded(v, PhantomData)
    }

    /// The same list with each entry written another way.
    pub(crate) fn map<U>(self, f: impl FnMut(T) -> U) -> Bounded<U, L> {
        self.0.into_iter().map(f).collect()
    }
}

impl<T, L> Default for Bounded<T, L> {
    fn default() -> Self {
        Bounded::new(Vec::new())
    }
}

impl<T, L> FromIterator<T> for Bounded<T, L> {
    fn from_iter<I: IntoIterator<Item = T>>(entries: I) -> Self {
        Bounded::new(entries.into_iter().collect())
    }
}

impl<T: Serialize, L> Serialize for Bounded<T, L> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>, L: Limit> Deserialize<'de> for Bounded<T, L> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(BoundedVisitor::<T, L>(PhantomData)).map(Bounded::new)
    }
}

struct BoundedVisitor<T, L>(PhantomData<(T, L)>);

impl<'de, T: Deserialize<'de>, L: Limit> Visitor<'de> for BoundedVisitor<T, L> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "at most {} {}", L::MAX, L::WHAT)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // postcard's hint is the length written, unless fewer bytes are left than that
        // (then none, and the count below stops it).
        if let Some(n) = seq.size_hint().filter(|n| *n > L::MAX) {
            return Err(refuse(format!("{n} {}, over the limit of {}", L::WHAT, L::MAX)));
        }
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(entry) = seq.next_element()? {
            if out.len() == L::MAX {
                return Err(refuse(format!("more than {} {}, the limit", L::MAX, L::WHAT)));
            }
            out.push(entry);
        }
        Ok(out)
    }
}

/// For `#[serde(deserialize_with = "bounded::vec::<L, _, _>")]` on a field of a type that
/// keeps a plain `Vec`.
pub(crate) fn vec<'de, L: Limit, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Bounded::<T, L>::deserialize(d).map(|b| b.0)
}

thread_local! {
    /// Why the decoder running on this thread refused its input.
    static REASON: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The error a decoder of a results file refuses its input with, the reason kept for
/// [`decoding`].
pub(crate) fn refuse<E: Error>(reason: String) -> E {
    let e = E::custom(&reason);
    REASON.with(|r| *r.borrow_mut() = Some(reason));
    e
}

/// Runs `decode`; its error is the reason a decoder gave to [`refuse`], else the decoder's
/// own message.
pub(crate) fn decoding<T, E: fmt::Display>(decode: impl FnOnce() -> Result<T, E>) -> Result<T, String> {
    REASON.with(|r| r.borrow_mut().take());
    decode().map_err(|e| REASON.with(|r| r.borrow_mut().take()).unwrap_or_else(|| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    limit!(
        /// Three numbers.
        Three = 3,
        "numbers"
    );

    fn read(bytes: &[u8]) -> Result<Vec<u32>, String> {
        decoding(|| postcard::from_bytes::<Bounded<u32, Three>>(bytes).map(|b| b.0))
    }

    #[test]
    fn a_list_over_its_limit_is_refused_by_its_length() {
        assert_eq!(read(&postcard::to_stdvec(&vec![7u32, 8, 9]).unwrap()), Ok(vec![7, 8, 9]));
        assert_eq!(
            read(&postcard::to_stdvec(&vec![7u32, 8, 9, 10]).unwrap()),
            Err("4 numbers, over the limit of 3".into())
        );
        // A length past the bytes left: no hint, refused at the fourth entry.
        assert_eq!(read(&[200, 1, 1, 2, 3, 4]), Err("more than 3 numbers, the limit".into()));
        // Not a refusal: postcard's own message, no stale reason.
        assert_eq!(read(&[2, 1]), Err("Hit the end of buffer, expected more data".into()));
        let bounded = Bounded::<u32, Three>::new(vec![1, 2]);
        assert_eq!(postcard::to_stdvec(&bounded).unwrap(), postcard::to_stdvec(&vec![1u32, 2]).unwrap());
    }
}
