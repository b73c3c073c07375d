//! `taskproof claims`: the register of claims about real products and the reruns of their
//! reproductions. The reproductions here are small shell scripts run with `--python sh`
//! (the runner starts `PROGRAM SCRIPT --version V`), so these tests need no Python; the
//! checked-in register is read as it is.

use std::path::Path;

use crate::util::{Tool, repo, require, taskproof, tempdir};

/// A repository with `repro/claims.toml` holding `claims` and the scripts named in it.
fn register(dir: &Path, claims: &str, scripts: &[(&str, &str)]) {
    std::fs::create_dir_all(dir.join("repro")).unwrap();
    for (name, body) in scripts {
        std::fs::write(dir.join("repro").join(name), body).unwrap();
    }
    std::fs::write(dir.join("repro/claims.toml"), claims).unwrap();
}

const YES: &str = r#"echo "looking" >&2; echo '{"version": "'"$2"'", "answer": true, "observed": "saw it on '"$2"'"}'"#;
/// Answers yes on 1.x, no on anything else.
const BY_VERSION: &str = r#"case "$2" in 1.*) a=true;; *) a=false;; esac; echo '{"version": "'"$2"'", "answer": '$a', "observed": "v'"$2"'"}'"#;

const CLAIMS: &str = r#"# a comment that --record keeps

[[claim]]
id = "always"
product = "thing"
says = "It always does it."
asks = "Does it?"
repro = "repro/yes.sh"
status = "confirmed"

[claim.expect]
"1.0.0" = true
"2.0.0" = true

[[claim]]
id = "changed"
product = "thing"
says = "1.x does it, 2.x does not."
asks = "Does it?"
repro = "repro/by_version.sh"
status = "confirmed"

[claim.expect]
"1.0.0" = true
"2.0.0" = false
"#;

fn check(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = taskproof()
        .current_dir(dir)
        .args(["claims", "check", "--python", "sh"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_reproduction_agreeing_with_the_register_exits_0_and_record_keeps_the_file() {
    let d = tempdir();
    register(
        d.path(),
        CLAIMS,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    let (code, out, err) = check(d.path(), &["--record"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("4 agree with the register, 0 differ, 0 could not answer"),
        "{out}"
    );
    assert!(out.contains("saw it on 2.0.0"), "{out}");
    let text = std::fs::read_to_string(d.path().join("repro/claims.toml")).unwrap();
    assert!(
        text.starts_with("# a comment that --record keeps"),
        "{text}"
    );
    assert_eq!(text.matches("[[claim.last]]").count(), 4, "{text}");
    assert!(text.contains("observed = \"v1.0.0\""), "{text}");
    // A second record replaces the run on the same version instead of adding one: the new
    // observation is there, the old one gone.
    std::fs::write(
        d.path().join("repro/by_version.sh"),
        BY_VERSION.replace("\"v'", "\"again v'"),
    )
    .unwrap();
    assert_eq!(check(d.path(), &["--record", "--claim", "changed"]).0, 0);
    let text = std::fs::read_to_string(d.path().join("repro/claims.toml")).unwrap();
    assert_eq!(text.matches("[[claim.last]]").count(), 4, "{text}");
    for v in ["1.0.0", "2.0.0"] {
        assert!(
            text.contains(&format!("observed = \"again v{v}\"")),
            "{text}"
        );
        assert!(!text.contains(&format!("observed = \"v{v}\"")), "{text}");
    }
    assert!(text.contains("observed = \"saw it on 2.0.0\""), "{text}");
    let listed = taskproof()
        .current_dir(d.path())
        .args(["claims", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("changed [confirmed] thing") && listed.contains("1.0.0 yes, 2.0.0 no"),
        "{listed}"
    );
}

#[test]
fn the_release_watch_expects_what_the_newest_version_below_answered() {
    let d = tempdir();
    register(
        d.path(),
        CLAIMS,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    // 3.0.0 is named by no claim: `always` expects yes (as 2.0.0), `changed` expects no.
    let (code, out, _) = check(d.path(), &["--product", "thing", "--version", "3.0.0"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 agree"), "{out}");
    // 1.5.0: `changed` expects yes (as 1.0.0) and gets yes; a behaviour that changed back
    // would be told apart the same way.
    let (code, out, _) = check(
        d.path(),
        &[
            "--product",
            "thing",
            "--version",
            "1.5.0",
            "--claim",
            "changed",
        ],
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_reproduction_that_disagrees_exits_1_and_one_that_cannot_answer_exits_3() {
    let d = tempdir();
    let no = r#"echo '{"version": "'"$2"'", "answer": false, "observed": "not seen"}'"#;
    register(
        d.path(),
        &CLAIMS.replace("repro/yes.sh", "repro/no.sh"),
        &[("no.sh", no), ("by_version.sh", BY_VERSION)],
    );
    let (code, out, _) = check(d.path(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DIFFERS") && out.contains("2 differ"), "{out}");

    let garbage = "echo 'no json here'; exit 0";
    register(
        d.path(),
        &CLAIMS.replace("repro/yes.sh", "repro/garbage.sh"),
        &[("garbage.sh", garbage)],
    );
    let (code, out, _) = check(d.path(), &["--claim", "always"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("without the JSON line the protocol asks for"),
        "{out}"
    );

    let cannot = r#"echo "npm failed" >&2; echo '{"version": "1", "answer": null, "error": "the product did not install"}'; exit 2"#;
    register(
        d.path(),
        &CLAIMS.replace("repro/yes.sh", "repro/cannot.sh"),
        &[("cannot.sh", cannot)],
    );
    let (code, out, _) = check(d.path(), &["--claim", "always"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("could not answer: the product did not install"),
        "{out}"
    );
}

#[test]
fn a_reproduction_that_hangs_is_stopped_at_its_limit_with_everything_it_started() {
    let d = tempdir();
    let marker = d.path().join("still-running");
    // The script leaves a child that would touch a file after the limit.
    let hang = format!("(sleep 3; touch '{}') & sleep 30", marker.display());
    let claims = CLAIMS.replace("repro/yes.sh", "repro/hang.sh").replace(
        "status = \"confirmed\"\n\n[claim.expect]\n\"1.0.0\" = true\n\"2.0.0\" = true",
        "status = \"confirmed\"\ntimeout = 1\n\n[claim.expect]\n\"1.0.0\" = true",
    );
    register(
        d.path(),
        &claims,
        &[("hang.sh", &hang), ("by_version.sh", BY_VERSION)],
    );
    let (code, out, err) = check(d.path(), &["--claim", "always"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("no answer within 1 s"), "{out}");
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(
        !marker.exists(),
        "a process of the reproduction outlived its run"
    );
}

#[test]
fn a_malformed_register_is_a_usage_error_naming_file_claim_and_key() {
    let d = tempdir();
    let bad = CLAIMS.replace(
        "asks = \"Does it?\"\nrepro = \"repro/yes.sh\"",
        "asks = \"Does it?\"\nrepro = \"repro/missing.sh\"",
    );
    register(d.path(), &bad, &[("by_version.sh", BY_VERSION)]);
    let (code, _, err) = check(d.path(), &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("claims.toml: claim[0] (always).repro: no such script"),
        "{err}"
    );
    let unknown_key = CLAIMS.replacen("says =", "sayz =", 1);
    register(
        d.path(),
        &unknown_key,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    let (code, _, err) = check(d.path(), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("claims.toml") && err.contains("sayz"), "{err}");
    let no_why = CLAIMS.replacen("status = \"confirmed\"", "status = \"unconfirmed\"", 1);
    register(
        d.path(),
        &no_why,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    let (code, _, err) = check(d.path(), &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("(always).why: a claim that is unconfirmed says why"),
        "{err}"
    );
    // An unknown claim, in a register that reads.
    register(
        d.path(),
        CLAIMS,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    let (code, out, err) = check(d.path(), &["--claim", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--claim nope: no such claim in repro/claims.toml"),
        "{err}"
    );
    assert!(!out.contains("agree"), "nothing ran: {out}");
}

#[test]
fn the_checked_in_register_reads_and_every_claim_has_its_script_and_a_run_per_version() {
    let register = taskproof::claims::Register::load(&repo().join("repro/claims.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        register.claims.len() >= 20,
        "{} claims",
        register.claims.len()
    );
    for c in &register.claims {
        for v in c.expect.keys() {
            assert!(
                c.last_on(v).is_some(),
                "{}: no recorded run on {v}: every claim's reproduction is run on every version it names",
                c.id
            );
        }
        if c.status == taskproof::claims::Status::Confirmed {
            for l in &c.last {
                assert_eq!(
                    Some(l.answer),
                    c.expected(&l.version),
                    "{}: confirmed, but its run on {} answered {} ({}): the claim is unconfirmed or its expect is wrong",
                    c.id,
                    l.version,
                    l.answer,
                    l.observed
                );
            }
        }
    }
}

/// Whether process `pid` is alive (a zombie, which no one may reap in a container, is not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// A register whose `always` claim runs `script` with a limit of 1 s on 1.0.0 only.
fn timing_out(dir: &Path, script: &str) {
    let claims = CLAIMS.replace("repro/yes.sh", "repro/slow.sh").replace(
        "status = \"confirmed\"\n\n[claim.expect]\n\"1.0.0\" = true\n\"2.0.0\" = true",
        "status = \"confirmed\"\ntimeout = 1\n\n[claim.expect]\n\"1.0.0\" = true",
    );
    register(
        dir,
        &claims,
        &[("slow.sh", script), ("by_version.sh", BY_VERSION)],
    );
}

#[test]
#[cfg_attr(not(taskproof_has_setsid), ignore = "needs setsid on PATH")]
fn a_reproduction_past_its_limit_gets_sigterm_to_end_the_sessions_it_started() {
    require(&[Tool::Setsid]);
    // As repro/lib does: the product in a session of its own (out of the script's group),
    // ended by the script's SIGTERM handler. SIGKILL at once would leave it running, holding
    // the script's pipes.
    let d = tempdir();
    let pid = d.path().join("child.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > \"{pid}\"; exec sleep 30' &\n\
         trap 'kill $(cat \"{pid}\"); exit 0' TERM\n\
         sleep 30 & wait\n",
        pid = pid.display()
    );
    timing_out(d.path(), &script);
    let started = std::time::Instant::now();
    let (code, out, err) = check(d.path(), &["--claim", "always"]);
    let took = started.elapsed();
    let child = std::fs::read_to_string(&pid).unwrap_or_default();
    let left = !child.is_empty() && alive(&child);
    if left {
        let _ = std::process::Command::new("kill")
            .args(["-9", child.trim()])
            .status();
    }
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("no answer within 1 s"), "{out}");
    assert!(!child.is_empty(), "the session's child never started");
    assert!(!left, "the session the script started outlived its run");
    assert!(took.as_secs() < 10, "took {took:?}");
}

#[test]
#[cfg_attr(not(taskproof_has_setsid), ignore = "needs setsid on PATH")]
fn a_process_that_left_the_group_and_ignores_sigterm_does_not_hold_the_check() {
    require(&[Tool::Setsid]);
    // Its grandchild leaves the group, ignores SIGTERM and keeps the script's stdout and
    // stderr open: the check ends at its bounds all the same and reports the limit.
    let d = tempdir();
    let pid = d.path().join("stray.pid");
    let script = format!(
        "setsid sh -c 'trap \"\" TERM; echo $$ > \"{pid}\"; exec sleep 40' &\n\
         echo 'still here' >&2\n\
         sleep 30\n",
        pid = pid.display()
    );
    timing_out(d.path(), &script);
    let started = std::time::Instant::now();
    let (code, out, err) = check(d.path(), &["--claim", "always"]);
    let took = started.elapsed();
    if let Ok(stray) = std::fs::read_to_string(&pid) {
        let _ = std::process::Command::new("kill")
            .args(["-9", stray.trim()])
            .status();
    }
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("no answer within 1 s; its stderr ended: still here"),
        "{out}"
    );
    // 1 s of limit, the script's prompt end on SIGTERM and the pipes' bound.
    assert!(took.as_secs() < 20, "took {took:?}");
}

#[test]
fn a_version_needs_a_product_and_one_older_than_every_named_version_is_unnamed_not_an_error() {
    let d = tempdir();
    register(
        d.path(),
        CLAIMS,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    // A version number means something for one product only.
    let (code, out, err) = check(d.path(), &["--version", "3.0.0"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--product"), "{err}");
    assert!(!out.contains("agree"), "nothing ran: {out}");
    // 0.5.0 is older than 1.0.0: the register expects nothing of it.
    let (code, out, err) = check(d.path(), &["--product", "thing", "--version", "0.5.0"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("ERROR"), "{out}");
    assert!(out.contains("unnamed"), "{out}");
    assert!(
        out.contains(
            "0 agree with the register, 0 differ, 0 could not answer, 2 had no expected answer"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "no expected answer: 0.5.0 is older than every version the claim names (1.0.0, 2.0.0)"
        ),
        "{out}"
    );
}

#[test]
fn record_adds_a_new_version_to_expect_only_when_the_run_agreed() {
    let d = tempdir();
    let no = r#"echo '{"version": "'"$2"'", "answer": false, "observed": "not seen"}'"#;
    register(
        d.path(),
        &CLAIMS.replace("repro/yes.sh", "repro/no.sh"),
        &[("no.sh", no), ("by_version.sh", BY_VERSION)],
    );
    // 3.0.0: `always` expects yes (as 2.0.0) and gets no; `changed` expects no and gets no.
    let (code, out, err) = check(
        d.path(),
        &["--product", "thing", "--version", "3.0.0", "--record"],
    );
    assert_eq!(code, 1, "{out}{err}");
    // 0.5.0: older than both claims' versions, so nothing to agree with.
    let (code, out, err) = check(
        d.path(),
        &["--product", "thing", "--version", "0.5.0", "--record"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(d.path().join("repro/claims.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let claim = |id: &str| {
        doc["claim"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"].as_str() == Some(id))
            .unwrap()
            .clone()
    };
    let last = |c: &toml::Value, v: &str| {
        c["last"]
            .as_array()
            .and_then(|l| l.iter().find(|r| r["version"].as_str() == Some(v)))
            .map(|r| r["answer"].as_bool().unwrap())
    };
    let always = claim("always");
    let expect = always["expect"].as_table().unwrap();
    assert_eq!(
        expect.keys().collect::<Vec<_>>(),
        ["1.0.0", "2.0.0"],
        "a run that disagreed widened the claim: {text}"
    );
    assert_eq!(last(&always, "3.0.0"), Some(false), "{text}");
    assert_eq!(last(&always, "0.5.0"), Some(false), "{text}");
    let changed = claim("changed");
    let expect = changed["expect"].as_table().unwrap();
    assert_eq!(
        expect.get("3.0.0").and_then(toml::Value::as_bool),
        Some(false),
        "{text}"
    );
    assert!(!expect.contains_key("0.5.0"), "{text}");
    assert_eq!(last(&changed, "3.0.0"), Some(false), "{text}");
    assert_eq!(last(&changed, "0.5.0"), Some(false), "{text}");
    // The file still reads.
    taskproof::claims::Register::load(&d.path().join("repro/claims.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A claim the register does not stand behind lists in `appears` only the places that still
/// publish it, and each says so. A run report regenerated after the fault was found no longer
/// carries the withdrawn finding, so it leaves `appears` (the background reports of 2.1.112 and
/// 2.1.332 were re-measured with the fixed count).
#[test]
fn every_doc_that_publishes_a_claim_that_does_not_stand_says_so() {
    let root = repo();
    let register = taskproof::claims::Register::load(&root.join("repro/claims.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut silent = Vec::new();
    for c in &register.claims {
        if c.status == taskproof::claims::Status::Confirmed {
            continue;
        }
        for doc in c.appears.iter().filter(|a| a.ends_with(".md")) {
            let text = std::fs::read_to_string(root.join(doc))
                .unwrap_or_else(|e| panic!("{}: appears in {doc}: {e}", c.id));
            // Simple on purpose: the claim's id, or the word, anywhere in the file.
            let says =
                text.contains(&c.id) || text.contains("unconfirmed") || text.contains("withdrawn");
            if !says {
                silent.push((doc.as_str(), c.id.as_str()));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "these docs publish a claim the register does not stand behind without saying so \
         (the claim's id, or the word unconfirmed or withdrawn): {silent:#?}"
    );
}

/// An installed taskproof, run outside any checkout, lists the register built into it; it
/// reads another file with --register; `check`, which needs the checkout's scripts, says so
/// and what to do, not a bare read error.
#[test]
fn outside_a_checkout_list_reads_the_built_in_register_and_check_says_what_is_missing() {
    let d = tempdir();
    let out = taskproof()
        .current_dir(d.path())
        .args(["claims", "list"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let checked_in = taskproof::claims::Register::load(&repo().join("repro/claims.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    for c in &checked_in.claims {
        assert!(
            stdout.contains(&format!("{} [{}] {}", c.id, c.status.as_str(), c.product)),
            "{} is not listed: {stdout}",
            c.id
        );
    }
    assert!(
        stdout.contains(&format!(
            "{} claims in repro/claims.toml (built into taskproof",
            checked_in.claims.len()
        )),
        "{stdout}"
    );

    // --register reads another file, wherever it is.
    let other = tempdir();
    register(
        other.path(),
        CLAIMS,
        &[("yes.sh", YES), ("by_version.sh", BY_VERSION)],
    );
    let out = taskproof()
        .current_dir(d.path())
        .args(["claims", "list", "--register"])
        .arg(other.path().join("repro/claims.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("changed [confirmed] thing") && stdout.contains("2 claims in "),
        "{stdout}"
    );

    let (code, stdout, stderr) = check(d.path(), &[]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("is not a checkout of the taskproof repository")
            && stderr.contains("repro/claims.toml")
            && stderr.contains("repro/claude-code/")
            && stderr.contains("--register CHECKOUT/repro/claims.toml"),
        "{stderr}"
    );
    assert!(!stderr.contains("failed to read"), "{stderr}");
    assert!(!stdout.contains("agree"), "nothing ran: {stdout}");
}
