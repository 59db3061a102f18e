//! The regression corpus, `tests/corpus/fuzz/`: inputs that once made barrage fail, and
//! the seeds of the fuzzers, each run through the same check as its fuzzer, every time.
//! A folder per parser: `flags/*.args` (one argument per line, after `barrage`),
//! `targets/*` (read as `--targets` and as `--urls`), `experiment/*.toml`,
//! `results/*.brg`; and what servers send: `http1/*` (a response), `http2/*` (frames after
//! the preface), `hpack/*` (a header block), `kv/*` (replies, through every key-value
//! parser). A file of any other kind fails the test, so nothing in the corpus is skipped
//! unseen.

use std::path::Path;

#[test]
fn every_input_of_the_corpus_ends_in_ok_or_a_clean_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fuzz");
    let mut count = 0;
    for kind in std::fs::read_dir(&root).unwrap() {
        let kind = kind.unwrap().path();
        for file in std::fs::read_dir(&kind).unwrap() {
            let file = file.unwrap().path();
            let bytes = std::fs::read(&file).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            match kind.file_name().and_then(|n| n.to_str()) {
                Some("flags") => {
                    let args = std::iter::once("barrage").chain(text.lines()).map(String::from);
                    super::flags::check(&args.collect::<Vec<_>>());
                }
                Some("targets") => {
                    super::targets::check(&text);
                    super::targets::check_urls(&text);
                }
                Some("experiment") => super::experiment::check(&text),
                Some("results") => super::results::check(&bytes),
                Some("http1") => super::http1::check(&bytes),
                Some("http2") => super::http2::check(&bytes),
                Some("hpack") => super::http2::check_block(&bytes),
                Some("kv") => super::kv::check(&bytes),
                _ => panic!("{}: not a kind of input the corpus knows", file.display()),
            }
            count += 1;
        }
    }
    assert!(count > 0, "the corpus is empty");
}
