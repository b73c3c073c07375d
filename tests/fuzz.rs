//! The fuzzers: every cargo-fuzz target replays its checked-in corpus and regression files
//! under plain `cargo test` (so CI needs no nightly and no libFuzzer), and `taskproof fuzz`
//! finds, writes and replays divergences.

use std::path::Path;

use taskproof::fuzz::targets;



/// The files of one folder, sorted, or none if it does not exist.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_fuzz_target_replays_its_corpus_and_regressions() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for target in targets::TARGETS {
        assert!(
            fuzz.join("fuzz_targets").join(format!("{target}.rs")).is_file(),
            "fuzz/fuzz_targets/{target}.rs is missing"
        );
        let corpus = files(&fuzz.join("corpus").join(target));
        assert!(!corpus.is_empty(), "fuzz/corpus/{target} has no seeds");
        let regressions = files(&fuzz.join("regressions").join(target));
        for file in corpus.iter().chain(&regressions) {
            let data = std::fs::read(file).expect("a readable corpus file");
            let r = std::panic::catch_unwind(|| targets::run(target, &data));
            assert!(r.is_ok(), "{target} fails on {}", file.display());
        }
    }
}

#[test]
fn every_fuzz_target_is_registered_in_the_fuzz_crate() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml")).unwrap();
    for target in targets::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no [[bin]] {target}"
        );
    }
}
