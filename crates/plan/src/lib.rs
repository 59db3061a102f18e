//! What barrage sends: the validated [`Plan`] of a run, the open-loop schedule ([`Pacer`]),
//! target files ([`targets`]) and which target each request of a run goes to ([`Picker`]).
//!
//! Pure code, no I/O on the hot path: the engine asks the pacer when to send and the picker
//! what to send.
//!
//! ```
//! use barrage_plan::{Pacer, Pick, Picker, Target};
//!
//! let pacer = Pacer::Constant { rate: 1000.0 };
//! assert_eq!(pacer.due(10).unwrap().as_millis(), 10);
//! let t = Target::new(http::Method::GET, "http://127.0.0.1:8080/obj/{id}").unwrap();
//! assert_eq!(t.id_template.unwrap().prefix, "/obj/");
//! let picker = Picker::new(&Pick::Zipf(1.0), 100_000, 42, None);
//! assert!(picker.at(7) < 100_000);
//! ```

pub mod body;
pub mod cache;
pub mod experiment;
pub mod flow;
pub mod json;
pub mod kv;
pub mod kv_flags;
pub mod limits;
pub mod pacer;
pub mod phases;
pub mod pick;
pub mod plan;
pub mod protocol;
pub mod request_flags;
pub mod retry;
pub mod ring;
pub mod run_flags;
pub mod scenario;
pub mod targets;
pub mod units;
pub mod values;
pub mod view;

pub use body::{BodySource, FormField};
pub use cache::{CacheRule, CacheRules, CacheStatus, HeaderLines, HeaderView, ResponseRules};
pub use pacer::Pacer;
pub use pick::{derive_seed, Part, Pick, Picker, Stream};
pub use plan::{
    default_backend_headers, lane_number, requests_of, Headers, IdTemplate, Load, Plan, Shard, Target, Targets,
    TlsOptions, TraceSpec, DEFAULT_BACKEND_HEADERS,
};
pub use protocol::{Protocol, ProtocolFlags, Streams};
pub use retry::{Backoff, RetryOn, RetryPolicy};
pub use targets::TargetError;
