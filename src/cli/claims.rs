//! `taskproof maint claims`: the register of claims about real products and the reruns of their
//! reproductions (src/claims, repro/README.md).

use std::path::PathBuf;

use super::verdict::Verdict;
use crate::claims::{self, Agreement, Outcome, Register, Status};

#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Every claim taskproof makes about a real product (a version's behaviour, a public report \
reproduced or not, a change point between versions) is listed in repro/claims.toml with a \
reproduction that shares no code with taskproof: a script that drives the unmodified product \
and answers the claim's yes/no question for one version (repro/README.md).

`check` runs the reproductions, one at a time (they time things), and prints one row per claim \
and version: what the register expects, what the script answered now, and the last recorded \
answer. `--product P --version V` runs every claim about P on V instead: the release watch (a \
version the register does not name is expected to answer as the newest named version below \
it; one older than every version a claim names has no expected answer and is shown as \
`unnamed`, which is neither agreement nor an error). Withdrawn claims are listed, not run.

`list` reads the register of the current folder's checkout (repro/claims.toml) when there is \
one, else the copy built into this binary: an installed taskproof lists its claims anywhere. \
`check` runs scripts that only a checkout of the taskproof repository has (repro/claude-code/, \
reports/mcp/*/repro/ and repro/lib/): run it from the root of a checkout, or name the checkout's register with \
--register.

Exit status: 0 when every reproduction agrees with the register (or had no expected answer); \
1 when one disagrees; 2 on \
usage errors or a malformed register (named by file, claim and key); 3 when a reproduction \
could not answer (the product did not install or start, a limit passed) and none disagreed.

Examples:
  taskproof maint claims list
  taskproof maint claims check --claim cc-bg-end-during-the-spawning-turn
  taskproof maint claims check --product claude-code --version 2.1.340
  taskproof maint claims check --record")]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// The register, one line a claim: id, status, versions and what it says.
    List(Common),
    /// Run the reproductions and compare their answers with the register.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct Common {
    /// The register to read instead of ./repro/claims.toml (for `list`, when the current
    /// folder has none, the copy built into this binary).
    #[arg(long, value_name = "FILE")]
    pub register: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: Common,
    /// Only this claim (repeatable).
    #[arg(long, value_name = "ID")]
    pub claim: Vec<String>,
    /// Only claims about this product (`claude-code`, `mcp:PACKAGE`).
    #[arg(long, value_name = "PRODUCT")]
    pub product: Option<String>,
    /// Run on this version instead of the versions each claim names (with --product: a
    /// version means something for one product only).
    #[arg(long, value_name = "V", requires = "product")]
    pub version: Option<String>,
    /// Write each run's date, load, answer and observation back into the register.
    #[arg(long)]
    pub record: bool,
    /// The Python that runs the reproductions.
    #[arg(long, value_name = "PROGRAM", default_value = "python3")]
    pub python: String,
}

pub fn run(args: Args) -> anyhow::Result<Verdict> {
    match args.command {
        Sub::List(c) => list(c),
        Sub::Check(c) => check(c),
    }
}

fn load(path: &std::path::Path) -> Result<Register, Verdict> {
    Register::load(path).map_err(|e| {
        eprintln!("taskproof maint claims: {e}");
        Verdict::Usage
    })
}

/// The register `list` reads: `--register`, else the current folder's, else the built-in
/// copy.
fn load_for_list(args: &Common) -> Result<Register, Verdict> {
    let local = PathBuf::from(claims::DEFAULT_REGISTER);
    match &args.register {
        Some(path) => load(path),
        None if local.exists() => load(&local),
        None => Register::builtin().map_err(|e| {
            eprintln!("taskproof maint claims: {e}");
            Verdict::Usage
        }),
    }
}

/// The register `check` reads: `--register`, else the current folder's; outside a checkout
/// a message that says what is missing and where to get it, not a bare read error.
fn load_for_check(args: &Common) -> Result<Register, Verdict> {
    if let Some(path) = &args.register {
        return load(path);
    }
    let local = PathBuf::from(claims::DEFAULT_REGISTER);
    if local.exists() {
        return load(&local);
    }
    let here = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".into());
    eprintln!(
        "taskproof maint claims check: {here} is not a checkout of the taskproof repository: it has no \
         {} and none of the reproduction scripts the register names (repro/claude-code/, \
         reports/mcp/*/repro/, with their helpers in repro/lib/), which are not built into the \
         binary. Clone the repository this taskproof was built from and run \
         `taskproof maint claims check` at its root, or pass --register CHECKOUT/{}; \
         `taskproof maint claims list` reads the built-in register anywhere.",
        claims::DEFAULT_REGISTER,
        claims::DEFAULT_REGISTER
    );
    Err(Verdict::Usage)
}

fn list(args: Common) -> anyhow::Result<Verdict> {
    let register = match load_for_list(&args) {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    // One write through `print_stdout`, so `maint claims list | head` ends quietly.
    let mut out = String::new();
    for c in &register.claims {
        let versions: Vec<String> = c
            .versions()
            .into_iter()
            .map(|v| format!("{v} {}", yes_no(c.expect.get(&v).copied())))
            .collect();
        match &c.configuration {
            Some(config) => out.push_str(&format!(
                "{} [{}] {} (configuration {config})
",
                c.id,
                c.status.as_str(),
                c.product
            )),
            None => out.push_str(&format!(
                "{} [{}] {}
",
                c.id,
                c.status.as_str(),
                c.product
            )),
        }
        out.push_str(&format!(
            "  says: {}
",
            c.says
        ));
        out.push_str(&format!(
            "  asks: {} ({})
",
            c.asks,
            versions.join(", ")
        ));
        if let Some(why) = &c.why {
            out.push_str(&format!("  why:  {why}\n"));
        }
    }
    out.push_str(&format!(
        "{} claims in {}\n",
        register.claims.len(),
        register.path.display()
    ));
    Ok(super::print_stdout(&out))
}

fn yes_no(a: Option<bool>) -> &'static str {
    match a {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

fn check(args: CheckArgs) -> anyhow::Result<Verdict> {
    let register = match load_for_check(&args.common) {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let chosen: Vec<&claims::Claim> = register
        .claims
        .iter()
        .filter(|c| args.claim.is_empty() || args.claim.contains(&c.id))
        .filter(|c| args.product.as_ref().is_none_or(|p| *p == c.product))
        .collect();
    if let Some(unknown) = args
        .claim
        .iter()
        .find(|id| !register.claims.iter().any(|c| c.id == **id))
    {
        eprintln!(
            "taskproof maint claims: --claim {unknown}: no such claim in {}",
            register.path.display()
        );
        return Ok(Verdict::Usage);
    }
    if chosen.is_empty() {
        eprintln!("taskproof maint claims: no claim is chosen");
        return Ok(Verdict::Usage);
    }
    let mut results: Vec<Outcome> = Vec::new();
    println!(
        "{:<44} {:<9} {:<8} {:<5} {:<5} last recorded",
        "claim", "version", "expected", "now", ""
    );
    for c in chosen {
        if c.status == Status::Withdrawn {
            println!(
                "{:<44} withdrawn, not run: {}",
                c.id,
                c.why.as_deref().unwrap_or("")
            );
            continue;
        }
        let versions = match &args.version {
            Some(v) => vec![v.clone()],
            None => c.versions(),
        };
        for v in versions {
            let r = claims::run_repro(&register, c, &v, &args.python);
            let last = c
                .last_on(&v)
                .map(|l| {
                    format!(
                        "{} ({})",
                        yes_no(Some(l.answer)),
                        &l.date[..10.min(l.date.len())]
                    )
                })
                .unwrap_or_else(|| "none".into());
            let verdict = match r.agreement() {
                Agreement::Holds => "holds",
                Agreement::Differs => "DIFFERS",
                Agreement::Unnamed => "unnamed",
                Agreement::Broke => "ERROR",
            };
            println!(
                "{:<44} {:<9} {:<8} {:<5} {:<7} {last}",
                c.id,
                v,
                yes_no(r.expected),
                yes_no(r.answer),
                verdict
            );
            match &r.error {
                Some(e) => println!("    could not answer: {e}"),
                None => println!("    {} ({:.0} s, load {})", r.observed, r.seconds, r.load),
            }
            if r.agreement() == Agreement::Unnamed {
                println!(
                    "    no expected answer: {v} is older than every version the claim names ({})",
                    c.versions().join(", ")
                );
            }
            results.push(r);
        }
    }
    let count = |a: Agreement| results.iter().filter(|r| r.agreement() == a).count();
    let (agree, differ, broke) = (
        count(Agreement::Holds),
        count(Agreement::Differs),
        count(Agreement::Broke),
    );
    let unnamed = match count(Agreement::Unnamed) {
        0 => String::new(),
        n => format!(", {n} had no expected answer"),
    };
    println!("{agree} agree with the register, {differ} differ, {broke} could not answer{unnamed}");
    if args.record {
        if let Err(e) = register.record(&results) {
            eprintln!("taskproof maint claims: {e}");
            return Ok(Verdict::Usage);
        }
        println!("recorded in {}", register.path.display());
    }
    let verdict = if differ > 0 {
        Verdict::Found
    } else if broke > 0 {
        Verdict::TargetBroke
    } else {
        Verdict::Clean
    };
    Ok(verdict)
}
