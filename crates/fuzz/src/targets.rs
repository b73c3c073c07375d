//! The checking logic of every cargo-fuzz target, in the main crate so that plain
//! `cargo test` replays the checked-in corpora and regression files without nightly or
//! libFuzzer (`tests/fuzz/cargo_fuzz.rs`). Each `fuzz/fuzz_targets/NAME.rs` is one call to
//! the function of the same name here. Every function takes the fuzzer's raw bytes, never returns an
//! error, and panics exactly when a property is violated: that panic is the finding.

use std::collections::BTreeSet;

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Map, Value};

use taskproof_core::graph::Graph;
use taskproof_core::protocol::{Op, Request, Response};
use taskproof_core::task::{ListName, NewTask, Patch, Status, Strictness, Task, TaskId};
use taskproof_store::{Options, StrictStore, TaskStore};

use crate::filesim::Schedule;

/// The names of the cargo-fuzz targets, which are also the corpus folder names.
pub const TARGETS: [&str; 6] = [
    "task_json",
    "task_arbitrary",
    "protocol",
    "scenario_file",
    "store_ops",
    "file_race",
];

/// Runs the target called `name` on `data`. Panics on a violated property, and on an
/// unknown name.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "task_json" => task_json(data),
        "task_arbitrary" => task_arbitrary(data),
        "protocol" => protocol(data),
        "scenario_file" => scenario_file(data),
        "store_ops" => store_ops(data),
        "file_race" => file_race(data),
        other => panic!("no fuzz target called {other:?}"),
    }
}

/// Decodes a task, a new task and a patch from arbitrary bytes, strictly and leniently.
/// Decoding never panics, and whatever decodes re-encodes to JSON that decodes to the same
/// value ("every valid task round-trips unchanged").
pub fn task_json(data: &[u8]) {
    // The stores read task files with `serde_json::from_slice`, which accepts exactly the
    // inputs that are UTF-8 text and JSON, as the same values. Checking the text first and
    // parsing it as `&str` gives the decoders the same value for every input, and turns
    // away bytes that are not text before the parser starts.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return;
    };
    for strictness in [Strictness::Strict, Strictness::Lenient] {
        if let Ok(t) = Task::from_json(&v, strictness) {
            assert_round_trip(&t, strictness);
        }
        if let Ok(n) = NewTask::from_json(&v, strictness) {
            let again = NewTask::from_json(&reparse(&n.to_json()), strictness)
                .unwrap_or_else(|e| panic!("new task {n:?} does not decode again: {e}"));
            assert_eq!(again, n, "new task changed in a round trip");
        }
        if let Ok(p) = Patch::from_json(&v, strictness) {
            let again = Patch::from_json(&reparse(&p.to_json()), strictness)
                .unwrap_or_else(|e| panic!("patch {p:?} does not decode again: {e}"));
            assert_eq!(again, p, "patch changed in a round trip");
        }
    }
}

/// Serializes to text and parses back, as a value crossing a pipe or a file would.
fn reparse(v: &Value) -> Value {
    let text = serde_json::to_string(v).expect("values serialize");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text} does not parse again: {e}"))
}

fn assert_round_trip(t: &Task, strictness: Strictness) {
    let again = Task::from_json(&reparse(&t.to_json()), strictness)
        .unwrap_or_else(|e| panic!("task {t:?} does not decode again: {e}"));
    assert_eq!(&again, t, "task changed in a round trip");
}

/// A bounded JSON value for structured inputs.
#[derive(Debug, Clone, Arbitrary)]
enum ArbJson {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<ArbJson>),
    Object(Vec<(String, ArbJson)>),
}

impl ArbJson {
    fn to_value(&self, depth: usize) -> Value {
        match self {
            ArbJson::Null => Value::Null,
            ArbJson::Bool(b) => Value::Bool(*b),
            ArbJson::Int(i) => Value::from(*i),
            // NaN and the infinities have no JSON form.
            ArbJson::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            ArbJson::Str(s) => Value::String(s.clone()),
            ArbJson::Array(_) | ArbJson::Object(_) if depth > 8 => Value::Null,
            ArbJson::Array(a) => Value::Array(a.iter().map(|x| x.to_value(depth + 1)).collect()),
            ArbJson::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), x.to_value(depth + 1)))
                    .collect(),
            ),
        }
    }
}

#[derive(Debug, Clone, Arbitrary)]
enum ArbStatus {
    Pending,
    InProgress,
    Completed,
    Other(String),
}

/// A task built field by field, valid or not.
#[derive(Debug, Clone, Arbitrary)]
struct ArbTask {
    id: u64,
    subject: String,
    description: String,
    active_form: Option<String>,
    status: ArbStatus,
    blocks: Vec<u64>,
    blocked_by: Vec<u64>,
    owner: Option<String>,
    metadata: Option<Vec<(String, ArbJson)>>,
    extra: Vec<(String, ArbJson)>,
}

/// Builds a task from structured input, encodes it as a store would write it, and decodes
/// it: the strict decoder accepts it exactly when its subject and status are valid, and
/// what it decodes is the task, with SPEC §1's unset values normalized.
pub fn task_arbitrary(data: &[u8]) {
    let Ok(a) = ArbTask::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let status = match &a.status {
        ArbStatus::Pending => Status::Pending,
        ArbStatus::InProgress => Status::InProgress,
        ArbStatus::Completed => Status::Completed,
        ArbStatus::Other(s) => Status::parse(s),
    };
    let nonempty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    let metadata: Option<Map<String, Value>> = a
        .metadata
        .as_ref()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.to_value(1))).collect())
        .filter(|m: &Map<String, Value>| !m.is_empty());
    let task = Task {
        id: TaskId(a.id),
        subject: a.subject.clone(),
        description: a.description.clone(),
        active_form: nonempty(&a.active_form),
        status: status.clone(),
        blocks: a.blocks.iter().map(|&i| TaskId(i)).collect(),
        blocked_by: a.blocked_by.iter().map(|&i| TaskId(i)).collect(),
        owner: nonempty(&a.owner),
        metadata,
        extra: a
            .extra
            .iter()
            .filter(|(k, _)| !taskproof_core::task::TASK_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.to_value(0)))
            .collect(),
    };
    let text = serde_json::to_string_pretty(&task.to_json()).expect("tasks serialize");
    let v: Value = serde_json::from_str(&text).expect("what was written parses");
    let lenient = Task::from_json(&v, Strictness::Lenient)
        .unwrap_or_else(|e| panic!("a task any store could write is refused: {e}: {text}"));
    assert_eq!(lenient, task, "task changed on its way through a file");
    let chars = task.subject.chars().count();
    let valid = (1..=taskproof_core::task::MAX_SUBJECT_CHARS).contains(&chars) && status.is_known();
    match Task::from_json(&v, Strictness::Strict) {
        Ok(t) => {
            assert!(valid, "strict decoding accepted {text}");
            assert_eq!(t, task);
        }
        Err(e) => assert!(!valid, "strict decoding refused a valid task: {e}: {text}"),
    }
}

/// Decodes requests and every kind of response from arbitrary bytes: no panic, a line that
/// is not JSON is never a request, and what decodes re-encodes to the same value.
pub fn protocol(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The request goes through `Request::parse_line`, the harness's own entry for a line.
    // Most fuzzed lines are not JSON, and `parse_line` alone finds that out: when it says
    // so, the text is not parsed a second time. Otherwise the text is parsed again into a
    // value for the responses, and if that parse fails, `parse_line` must have failed too.
    let request = Request::parse_line(text);
    if let Err(e) = &request
        && e.field == "request"
        && e.message.starts_with("not valid JSON")
    {
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        assert!(request.is_err(), "a request line that is not JSON decodes");
        return;
    };
    if let Ok(r) = request {
        let again = Request::from_json(&reparse(&r.to_json()))
            .unwrap_or_else(|e| panic!("request {r:?} does not decode again: {e}"));
        assert_eq!(again, r, "request changed in a round trip");
    }
    for op in Op::ALL {
        if let Ok(r) = Response::from_json(&v, op) {
            let again = Response::from_json(&reparse(&r.to_json()), op)
                .unwrap_or_else(|e| panic!("{op} response {r:?} does not decode again: {e}"));
            assert_eq!(again, r, "{op} response changed in a round trip");
        }
    }
}

/// Loads arbitrary bytes as a scenario file: the loader never panics, and a file it
/// refuses gets an error that says what is wrong and, inside the file's object, where.
pub fn scenario_file(data: &[u8]) {
    // As `scenario::load::load_file` reads a file: text first (`read_to_string` refuses
    // bytes that are not UTF-8), then JSON. `serde_json::from_slice` accepts exactly the
    // same inputs as the same values (it too refuses bytes that are not UTF-8), but checks
    // the text piecemeal inside the parser; a file that is not text stops here instead.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let file = std::path::Path::new("fuzz.json");
    if let Err(taskproof_core::field::FieldError {
        field: path,
        message,
    }) = taskproof_scenario::load::parse_scenario(&v, file)
    {
        assert!(
            !message.is_empty(),
            "an error without a message at {path:?}"
        );
        // Only a file that is not an object at all has no field to point at.
        assert!(
            !path.is_empty() || !v.is_object(),
            "an error without a path: {message}"
        );
    }
}

/// A task reference in a structured store operation: an index into the ids created so far
/// (so that most operations name a real task), or a raw id (usually a missing one).
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Ref {
    Created(u8),
    Raw(u8),
}

#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum ArbStatusChange {
    Pending,
    InProgress,
    Completed,
    Bogus,
}

/// One operation of the `store_ops` target.
#[derive(Debug, Clone, Arbitrary)]
pub enum StoreOp {
    Create {
        subject_len: u8,
        blocked_by: Vec<Ref>,
        blocks: Vec<Ref>,
        owner: bool,
    },
    Get(Ref),
    Update {
        task: Ref,
        status: Option<ArbStatusChange>,
        add_blocked_by: Vec<Ref>,
        add_blocks: Vec<Ref>,
        remove_blocked_by: Vec<Ref>,
        remove_blocks: Vec<Ref>,
        metadata: Option<(u8, Option<u8>)>,
        owner: Option<bool>,
    },
    Delete(Ref),
    Claim(Ref, u8),
    List,
    /// Drop the store and open a new one on the same root, as a restart would.
    Reopen,
}

/// The state the `store_ops` target keeps beside the store: ids handed out so far.
struct Handed {
    ids: Vec<TaskId>,
}

impl Handed {
    fn resolve(&self, r: Ref) -> TaskId {
        match r {
            Ref::Created(i) if !self.ids.is_empty() => self.ids[usize::from(i) % self.ids.len()],
            Ref::Created(i) | Ref::Raw(i) => TaskId(u64::from(i % 16)),
        }
    }

    fn resolve_all(&self, rs: &[Ref]) -> Vec<TaskId> {
        rs.iter().take(4).map(|&r| self.resolve(r)).collect()
    }
}

impl StoreOp {
    fn request(&self, list: &ListName, h: &Handed) -> Option<Request> {
        let list = list.clone();
        Some(match self {
            StoreOp::Create {
                subject_len,
                blocked_by,
                blocks,
                owner,
            } => {
                let mut t = NewTask::new("s".repeat(usize::from(*subject_len % 8) + 1));
                t.blocked_by = h.resolve_all(blocked_by).into_iter().collect();
                t.blocks = h.resolve_all(blocks).into_iter().collect();
                t.owner = owner.then(|| "agent".to_string());
                Request::Create { list, task: t }
            }
            StoreOp::Get(r) => Request::Get {
                list,
                id: h.resolve(*r),
            },
            StoreOp::Update {
                task,
                status,
                add_blocked_by,
                add_blocks,
                remove_blocked_by,
                remove_blocks,
                metadata,
                owner,
            } => {
                let mut p = Patch {
                    status: status.map(|s| match s {
                        ArbStatusChange::Pending => Status::Pending,
                        ArbStatusChange::InProgress => Status::InProgress,
                        ArbStatusChange::Completed => Status::Completed,
                        ArbStatusChange::Bogus => Status::parse("done"),
                    }),
                    add_blocked_by: h.resolve_all(add_blocked_by),
                    add_blocks: h.resolve_all(add_blocks),
                    remove_blocked_by: h.resolve_all(remove_blocked_by),
                    remove_blocks: h.resolve_all(remove_blocks),
                    ..Patch::default()
                };
                if let Some((k, v)) = metadata {
                    let mut m = Map::new();
                    m.insert(format!("k{}", k % 4), v.map_or(Value::Null, Value::from));
                    p.metadata = taskproof_core::task::Change::Set(m);
                }
                p.owner = match owner {
                    None => taskproof_core::task::Change::Keep,
                    Some(true) => taskproof_core::task::Change::Set("agent".into()),
                    Some(false) => taskproof_core::task::Change::Remove,
                };
                Request::Update {
                    list,
                    id: h.resolve(*task),
                    patch: p,
                }
            }
            StoreOp::Delete(r) => Request::Delete {
                list,
                id: h.resolve(*r),
            },
            StoreOp::Claim(r, o) => Request::Claim {
                list,
                id: h.resolve(*r),
                owner: format!("agent-{}", o % 3),
            },
            StoreOp::List => Request::List { list },
            StoreOp::Reopen => return None,
        })
    }
}

/// The strict store's invariants over one listing, as messages (empty when all hold).
pub fn invariant_violations(tasks: &[Task]) -> Vec<String> {
    let g = Graph::new(tasks);
    let mut out = Vec::new();
    if !g.is_acyclic() {
        out.push(format!("cycles: {:?}", g.cycles()));
    }
    let half = g.half_edges();
    if !half.is_empty() {
        out.push(format!("edges on one side only: {half:?}"));
    }
    let dangling = g.dangling();
    if !dangling.is_empty() {
        out.push(format!("references to missing tasks: {dangling:?}"));
    }
    let completed = g.completed_with_unfinished_blockers();
    if !completed.is_empty() {
        out.push(format!(
            "completed tasks with unfinished blockers: {completed:?}"
        ));
    }
    if !g.duplicate_ids().is_empty() {
        out.push(format!("duplicate ids: {:?}", g.duplicate_ids()));
    }
    if tasks.windows(2).any(|w| w[0].id >= w[1].id) {
        out.push("list is not in ascending id order".into());
    }
    out
}

/// Runs an arbitrary sequence of operations on the strict store in a temporary folder and
/// on the in-memory model of the strict profile, and checks after every step: the store
/// answers as the model does (SPEC §1 comparison) and holds the same tasks; the invariants
/// hold (acyclic, mirrored edges, no dangling ids,
/// ids unique, completed tasks only have completed blockers), created ids strictly increase,
/// and a failed request changes nothing.
pub fn store_ops(data: &[u8]) {
    let Ok(ops) = Vec::<StoreOp>::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let open = || StrictStore::open(dir.path(), Options { durable: false }).expect("store opens");
    let mut store = open();
    let list: ListName = "l".parse().expect("valid list name");
    let mut handed = Handed { ids: Vec::new() };
    let mut model = taskproof_profile::oracle::Oracle::strict();
    let listing = |store: &StrictStore| match store.handle(&Request::List { list: list.clone() }) {
        Response::Tasks { tasks, corrupt } => {
            assert!(
                corrupt.is_empty(),
                "the store's own files read as corrupt: {corrupt:?}"
            );
            tasks
        }
        other => panic!("list failed: {other:?}"),
    };
    let mut before = listing(&store);
    for (i, op) in ops.iter().take(64).enumerate() {
        let Some(req) = op.request(&list, &handed) else {
            store = open();
            let after = listing(&store);
            assert_eq!(
                after, before,
                "step {i}: a reopened store sees another state"
            );
            continue;
        };
        let resp = store.handle(&req);
        let expected = model.handle(&req);
        let diffs = taskproof_profile::compare::differences(&expected, &resp);
        assert!(
            diffs.is_empty(),
            "step {i}: {req:?}: the store answered {resp:?}, the model {expected:?}: {diffs:?}"
        );
        let after = listing(&store);
        assert_eq!(
            after,
            model.tasks(&list),
            "step {i}: after {req:?} the store and the model hold different tasks"
        );
        match &resp {
            Response::Error(f) => {
                assert_eq!(
                    after, before,
                    "step {i}: {req:?} failed ({f}) but changed the list"
                );
            }
            Response::Task(t) if matches!(req, Request::Create { .. }) => {
                if let Some(last) = handed.ids.last() {
                    assert!(t.id > *last, "step {i}: id {} after {last}", t.id);
                }
                handed.ids.push(t.id);
            }
            _ => {}
        }
        let bad = invariant_violations(&after);
        assert!(
            bad.is_empty(),
            "step {i}: after {req:?} -> {resp:?}: {bad:?}"
        );
        let ids: BTreeSet<TaskId> = after.iter().map(|t| t.id).collect();
        assert!(
            ids.iter().all(|id| handed.ids.contains(id)),
            "step {i}: a task appeared that no create made"
        );
        before = after;
    }
}

/// Runs an arbitrary interleaving of writers over the simulated file layer
/// ([`super::filesim`]): the strict protocol never loses an acknowledged change or shows a
/// partial file, and for both protocols the checker's verdict matches the history's.
pub fn file_race(data: &[u8]) {
    let Ok(schedule) = Schedule::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    schedule.check();
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// `task_json` and `scenario_file` check the text before parsing it as `&str`, where the
    /// stores parse bytes with `from_slice`: both must accept the same inputs as the same
    /// values, including bytes that are not UTF-8 inside and outside strings.
    #[test]
    fn text_first_then_json_accepts_what_from_slice_accepts() {
        let inputs: [&[u8]; 10] = [
            br#"{"subject":"caf\xc3\xa9","id":"1"}"#,
            b"{\"subject\":\"caf\xe9\"}",
            b"{\"subject\":\"a\"}\xff",
            b"\xef\xbb\xbf{}",
            br#"{"subject":"\ud800"}"#,
            br#"{"subject":"\ud83d\ude00"}"#,
            b"{\"s\":\"\xed\xa0\x80\"}",
            b"[1, 2.5e3, -0, null, true]",
            b" \n\t{}\r\n",
            b"",
        ];
        for bytes in inputs {
            let sliced = serde_json::from_slice::<Value>(bytes).ok();
            let texted = std::str::from_utf8(bytes)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(t).ok());
            assert_eq!(sliced, texted, "{}", String::from_utf8_lossy(bytes));
        }
    }
}
