//! A copy of a results file's bytes as they are written (`run --report-to`).

/// Where a copy of a results file's bytes goes as they are written (`run --report-to`: a
/// collector): the magic and version in one call, then each whole record (its frame and
/// payload) in one call each, once it is in the file. The copy is the file, byte for byte.
#[derive(Clone)]
pub struct Mirror(pub std::sync::Arc<MirrorFn>);

/// What a [`Mirror`] calls with each piece of the file.
pub type MirrorFn = dyn Fn(&[u8]) + Send + Sync;

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mirror")
    }
}
