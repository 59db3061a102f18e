//! The scenario file as written, as serde reads it: values whose line an error may name
//! are `Spanned`; nothing here is checked beyond its type.

use indexmap::IndexMap;
use serde::de::{self, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) vars: IndexMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) feeder: IndexMap<String, Spanned<RawFeeder>>,
    #[serde(default)]
    pub(super) flow: IndexMap<String, Spanned<RawFlow>>,
    #[serde(default)]
    pub(super) group: IndexMap<String, Spanned<RawGroup>>,
}

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum RawOrder {
    #[default]
    Sequential,
    Random,
    PerWorker,
}

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum RawOnEnd {
    #[default]
    Recycle,
    Stop,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawFeeder {
    pub(super) file: Spanned<String>,
    #[serde(default)]
    pub(super) order: RawOrder,
    pub(super) on_end: Option<Spanned<RawOnEnd>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlow {
    pub(super) feeder: Option<Spanned<String>>,
    pub(super) repeat: Option<Spanned<RawRepeat>>,
    #[serde(default)]
    pub(super) step: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRepeat {
    pub(super) first: String,
    pub(super) last: String,
    pub(super) times: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawStep {
    pub(super) name: Spanned<String>,
    pub(super) method: Option<Spanned<String>>,
    pub(super) url: Spanned<String>,
    #[serde(default)]
    pub(super) headers: IndexMap<String, Spanned<String>>,
    pub(super) body: Option<Spanned<String>>,
    pub(super) body_file: Option<Spanned<String>>,
    pub(super) json: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) form: IndexMap<String, Spanned<RawPart>>,
    #[serde(default)]
    pub(super) capture: IndexMap<String, Spanned<RawCapture>>,
    #[serde(default)]
    pub(super) check: RawChecks,
    pub(super) think: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPart {
    pub(super) json: Option<toml::Value>,
    pub(super) text: Option<String>,
    pub(super) file: Option<String>,
    #[serde(rename = "type")]
    pub(super) content_type: Option<String>,
    pub(super) filename: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawCapture {
    pub(super) json_path: Option<String>,
    pub(super) json_pointer: Option<String>,
    pub(super) header: Option<String>,
    pub(super) regex: Option<String>,
    pub(super) status: Option<bool>,
    /// The value may be shown in outputs (an id); by default a captured value is secret.
    #[serde(default)]
    pub(super) public: bool,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawChecks {
    pub(super) status: Option<Spanned<OneOrMany<u16>>>,
    pub(super) json: Option<Spanned<OneOrMany<RawJsonCheck>>>,
    pub(super) body_contains: Option<Spanned<String>>,
    pub(super) header: Option<Spanned<OneOrMany<RawHeaderCheck>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJsonCheck {
    pub(super) path: Option<String>,
    pub(super) pointer: Option<String>,
    pub(super) equals: Option<toml::Value>,
    pub(super) matches: Option<String>,
    pub(super) present: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHeaderCheck {
    pub(super) name: String,
    pub(super) equals: Option<toml::Value>,
    pub(super) matches: Option<String>,
    pub(super) present: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawGroup {
    pub(super) flow: Option<Spanned<String>>,
    pub(super) concurrency: Option<Spanned<u32>>,
    pub(super) rate: Option<Spanned<toml::Value>>,
    pub(super) max_in_flight: Option<Spanned<u32>>,
    pub(super) think_time: Option<Spanned<String>>,
    pub(super) ramp: Option<Spanned<String>>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) iterations: Option<Spanned<i64>>,
}

/// A value written alone or as a list (`status = 200`, `status = [200, 201]`). Items of a
/// list keep their place in the file; one alone has the place of the whole.
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<Spanned<T>>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("one value or a list of them")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(OneOrMany::Many)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(OneOrMany::One)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(OneOrMany::One)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Each item with its place in the file.
pub(super) fn items<T>(v: &Spanned<OneOrMany<T>>) -> Vec<(Range<usize>, &T)> {
    match v.get_ref() {
        OneOrMany::One(t) => vec![(v.span(), t)],
        OneOrMany::Many(items) => items.iter().map(|i| (i.span(), i.get_ref())).collect(),
    }
}
