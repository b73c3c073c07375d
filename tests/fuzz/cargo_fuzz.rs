//! The cargo-fuzz targets: each one replays its checked-in corpus and regressions under
//! plain `cargo test`, is registered in the fuzz crate, and builds in the ClusterFuzzLite
//! layout.

use super::*;

#[test]
fn every_fuzz_target_replays_its_corpus_and_regressions() {
    let fuzz = util::repo().join("fuzz");
    for target in targets::TARGETS {
        assert!(
            fuzz.join("fuzz_targets")
                .join(format!("{target}.rs"))
                .is_file(),
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
    let manifest = std::fs::read_to_string(util::repo().join("fuzz/Cargo.toml")).unwrap();
    for target in targets::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no [[bin]] {target}"
        );
    }
}

/// Issue 11 item 20: the ClusterFuzzLite layout is shipped for the cargo-fuzz targets. Its
/// build was run by hand outside docker (docs/fuzzing.md says how); this pins the parts a
/// fuzzing service reads, so a rename does not silently break them.
#[test]
fn the_clusterfuzzlite_layout_builds_the_cargo_fuzz_targets() {
    use std::os::unix::fs::PermissionsExt;

    let dir = util::repo().join(".clusterfuzzlite");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!(".clusterfuzzlite/{name}: {e}"))
    };
    let project = read("project.yaml");
    assert!(
        project.lines().any(|l| l.trim() == "language: rust"),
        "{project}"
    );
    let docker = read("Dockerfile");
    assert!(
        docker
            .lines()
            .any(|l| l.trim() == "FROM gcr.io/oss-fuzz-base/base-builder-rust"),
        "{docker}"
    );
    assert!(
        docker.contains("COPY .clusterfuzzlite/build.sh $SRC/"),
        "{docker}"
    );
    let build = read("build.sh");
    assert!(build.contains("cargo fuzz build -O"), "{build}");
    assert!(
        build.contains("fuzz_targets/*.rs") && build.contains("\"$OUT/\""),
        "{build}"
    );
    let mode = std::fs::metadata(dir.join("build.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert!(mode & 0o111 != 0, "build.sh is not executable");
}
