//! What a fuzz run sent: steps generated, requests sent (per op, per status, per kind of
//! answer), steps left out and fields dropped, each with the part of the contract that was
//! missing. A run that exercises nothing (every status change left out, every update refused
//! as unsupported) shows it on its last lines instead of reading as "agreed".
//!
//! [`fit`] is where a request meets the target's [`Offer`]: a field that needs a part the
//! target does not declare is taken out of the request (the rest is still sent), and a
//! request whose op needs such a part, or that has nothing left once its fields are taken out,
//! is left out whole. The generator ([`crate::strategy`]) already draws only what the target
//! offers, so `fit` acts on what it cannot see: requests built to be malformed, and the
//! parts a `hello` names by leaving them out.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::strategy::Offer;
use taskproof_core::protocol::{FIELD_PARTS, Feature, Response, request_features};

/// Counts of one run (or one case: [`Coverage::add`] sums them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Steps the generator drew (the final listings are not counted).
    pub generated: u64,
    /// Requests sent of those steps.
    pub sent: u64,
    /// Op → requests sent.
    pub ops: BTreeMap<String, u64>,
    /// Status word given in a sent create or update → how many (`other` for a word outside
    /// the three).
    pub statuses: BTreeMap<String, u64>,
    /// Op → kind of answer (`ok`, an error kind, `broken` for an answer outside the protocol)
    /// → how many.
    pub answers: BTreeMap<String, BTreeMap<String, u64>>,
    /// Why a generated step was not taken → how many: `part X` for a part the target does not
    /// declare, or what was missing (`no deleted task's file to overwrite`, `session not
    /// open`).
    pub left_out: BTreeMap<String, u64>,
    /// Part → fields taken out of requests that were still sent.
    pub dropped: BTreeMap<String, u64>,
    /// Restarts, waits, session events and files written by another program that were done.
    pub other: BTreeMap<String, u64>,
    /// The listings after each case's last step.
    pub final_listings: u64,
    /// Requests sent in parallel parts (counted in `sent` too).
    pub concurrent: u64,
    /// Pairs of a parallel part's requests from different sessions that were in flight at
    /// the same moment: what really raced.
    pub overlapping: u64,
    /// The distinct interleavings met: each parallel part's order of sends and answers by
    /// session, as a fingerprint.
    pub interleavings: BTreeSet<u64>,
    /// Where the cases' time went: making a fresh root and starting the target (the first
    /// session; on another thread while the case before ran, when started ahead), waiting for
    /// the target's answers (generated steps and final listings), and the rest of the case
    /// (restarts and later sessions, waits, session events, the harness's own work).
    pub start: std::time::Duration,
    pub requests: std::time::Duration,
    pub cases: std::time::Duration,
}

impl Coverage {
    /// Adds another run's counts to these.
    pub fn add(&mut self, o: &Coverage) {
        self.generated += o.generated;
        self.sent += o.sent;
        self.final_listings += o.final_listings;
        self.concurrent += o.concurrent;
        self.overlapping += o.overlapping;
        self.interleavings.extend(o.interleavings.iter().copied());
        self.start += o.start;
        self.requests += o.requests;
        self.cases += o.cases;
        for (to, from) in [
            (&mut self.ops, &o.ops),
            (&mut self.statuses, &o.statuses),
            (&mut self.left_out, &o.left_out),
            (&mut self.dropped, &o.dropped),
            (&mut self.other, &o.other),
        ] {
            for (k, n) in from {
                *to.entry(k.clone()).or_default() += n;
            }
        }
        for (op, kinds) in &o.answers {
            let to = self.answers.entry(op.clone()).or_default();
            for (k, n) in kinds {
                *to.entry(k.clone()).or_default() += n;
            }
        }
    }

    /// Generated steps that were not taken.
    pub fn left_out_steps(&self) -> u64 {
        self.left_out.values().sum()
    }

    pub(crate) fn leave_out(&mut self, why: impl Into<String>) {
        *self.left_out.entry(why.into()).or_default() += 1;
    }

    pub(crate) fn did(&mut self, what: &str) {
        *self.other.entry(what.to_string()).or_default() += 1;
    }

    /// Counts what a parallel part's requests met: `(lane, sent, answered)` each, in the
    /// order they were sent.
    pub(crate) fn met_interleaving(
        &mut self,
        requests: &[(usize, std::time::Duration, std::time::Duration)],
    ) {
        for (i, a) in requests.iter().enumerate() {
            for b in &requests[i + 1..] {
                if a.0 != b.0 && a.1 < b.2 && b.1 < a.2 {
                    self.overlapping += 1;
                }
            }
        }
        // The order of events: each request's send and answer, by lane.
        let mut events: Vec<(std::time::Duration, u8, usize)> = Vec::new();
        for (lane, sent, answered) in requests {
            events.push((*sent, 0, *lane));
            events.push((*answered, 1, *lane));
        }
        events.sort();
        let text: String = events
            .iter()
            .map(|(_, kind, lane)| format!("{}{lane} ", ["s", "a"][usize::from(*kind)]))
            .collect();
        let h = crate::finding::fnv1a(&text);
        self.interleavings.insert(h);
    }

    /// Counts a request sent for a generated step (`final_check` false) or a final listing,
    /// with the target's answer.
    pub(crate) fn sent(
        &mut self,
        request: &Value,
        answer: &Result<Response, String>,
        final_check: bool,
    ) {
        if final_check {
            self.final_listings += 1;
            return;
        }
        self.sent += 1;
        let op = request
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("(none)")
            .to_string();
        let body = match op.as_str() {
            "create" => request.get("task"),
            "update" => request.get("patch"),
            _ => None,
        };
        if let Some(status) = body.and_then(|b| b.get("status")) {
            let word = status
                .as_str()
                .filter(|w| matches!(*w, "pending" | "in_progress" | "completed"))
                .unwrap_or("other");
            *self.statuses.entry(word.to_string()).or_default() += 1;
        }
        let kind = match answer {
            Ok(r) => r.error_kind().map_or("ok", |k| k.as_str()).to_string(),
            Err(_) => "broken".to_string(),
        };
        *self
            .answers
            .entry(op.clone())
            .or_default()
            .entry(kind)
            .or_default() += 1;
        *self.ops.entry(op).or_default() += 1;
    }
}

/// What [`fit`] made of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// Send it; these parts' fields were taken out of it (and of the shown request).
    Send(Vec<Feature>),
    /// Send it, and then these requests (as sent, as shown): a patch whose fields the target
    /// carries out in calls of their own, cut into one request per call (`split_apart`).
    /// The parts' fields were taken out as for [`Fit::Send`].
    Split(Vec<Feature>, Vec<(Value, Value)>),
    /// Leave it out: the target lacks this part, which the request cannot do without.
    LeaveOut(Feature),
}

/// Takes out of a request's `body` (`task` or `patch`), and out of the same request as shown,
/// each field of `fields` whose value in the request `takes` accepts; the fields taken, in
/// order. What a generator must not ask of a target: a field made in calls apart inside a
/// parallel part, a removal the target cannot express.
pub fn take_fields(
    request: &mut Value,
    shown: &mut Value,
    body: &str,
    fields: &BTreeSet<String>,
    takes: impl Fn(&Value) -> bool,
) -> Vec<String> {
    let mut taken = Vec::new();
    for field in fields {
        if !request
            .get(body)
            .and_then(|b| b.get(field))
            .is_some_and(&takes)
        {
            continue;
        }
        for v in [&mut *request, &mut *shown] {
            if let Some(Value::Object(b)) = v.get_mut(body) {
                b.remove(field);
            }
        }
        taken.push(field.clone());
    }
    taken
}

/// Fits `request` (and `shown`, the same request as the scenario shows it) to what the target
/// offers: fields of an undeclared part are taken out of a create's task or an update's
/// patch; a `status: in_progress` the target lacks is taken out; the request is left out when
/// its op needs an undeclared part, or when it had fields and has none left.
pub fn fit(request: &mut Value, shown: &mut Value, offer: &Offer) -> Fit {
    let needed = request_features(request);
    let body_key = match request.get("op").and_then(Value::as_str) {
        Some("create") => "task",
        Some("update") => "patch",
        _ => {
            return match needed.into_iter().find(|f| !offer.has(*f)) {
                Some(f) => Fit::LeaveOut(f),
                None => Fit::Send(Vec::new()),
            };
        }
    };
    if let Some(f) = needed
        .iter()
        .copied()
        .find(|f| *f == Feature::SessionList && !offer.has(*f))
    {
        return Fit::LeaveOut(f);
    }
    let mut dropped: Vec<Feature> = Vec::new();
    let mut emptied = false;
    for v in [&mut *request, &mut *shown] {
        let Some(Value::Object(body)) = v.get_mut(body_key) else {
            continue;
        };
        let had = !body.is_empty();
        for (key, parts) in FIELD_PARTS {
            if let Some(p) = parts.iter().copied().find(|p| !offer.has(*p))
                && body.remove(key).is_some()
                && !dropped.contains(&p)
            {
                dropped.push(p);
            }
        }
        if !offer.has(Feature::InProgress)
            && body.get("status").and_then(Value::as_str) == Some("in_progress")
        {
            body.remove("status");
            if !dropped.contains(&Feature::InProgress) {
                dropped.push(Feature::InProgress);
            }
        }
        emptied |= had && body.is_empty() && body_key == "patch";
    }
    match (emptied, dropped.first()) {
        (true, Some(f)) => Fit::LeaveOut(*f),
        _ => match split_apart(request, shown, &offer.apart) {
            Some(rest) => Fit::Split(dropped, rest),
            None => Fit::Send(dropped),
        },
    }
}

/// The order in which the strict store applies a patch's parts (docs/spec.md, "Order of
/// checks"): the parts of a cut patch are sent in it.
const PATCH_ORDER: [&str; 11] = [
    "subject",
    "description",
    "activeForm",
    "owner",
    "metadata",
    "removeBlockedBy",
    "removeBlocks",
    "status",
    "addBlockedBy",
    "addBlocks",
    "",
];

/// Cuts an `update` whose patch has more than one call's worth of fields the target carries
/// out apart (`apart`, from [`taskproof_core::protocol::CALLS_APART`]): the fields it does not
/// name stay in `request`, with the first named field if there are none; each other named
/// field, and each further item of a named list, becomes a request of its own, returned in
/// order (as sent, as shown). `None` when the request is one call.
fn split_apart(
    request: &mut Value,
    shown: &mut Value,
    apart: &std::collections::BTreeSet<String>,
) -> Option<Vec<(Value, Value)>> {
    if apart.is_empty() || request.get("op").and_then(Value::as_str) != Some("update") {
        return None;
    }
    let patch = request.get("patch")?.as_object()?.clone();
    let shown_patch = shown.get("patch")?.as_object()?.clone();
    let rank = |k: &str| {
        PATCH_ORDER
            .iter()
            .position(|o| *o == k)
            .unwrap_or(PATCH_ORDER.len())
    };
    let mut named: Vec<&String> = patch.keys().filter(|k| apart.contains(*k)).collect();
    named.sort_by_key(|k| rank(k));
    // One (field, item) a call: a named list of several items is a call per item.
    let mut pieces: Vec<(String, Value, Value)> = Vec::new();
    for k in named {
        match (&patch[k], &shown_patch[k]) {
            (Value::Array(items), Value::Array(shown_items)) if items.len() > 1 => {
                for (i, s) in items.iter().zip(shown_items) {
                    pieces.push((
                        k.clone(),
                        Value::Array(vec![i.clone()]),
                        Value::Array(vec![s.clone()]),
                    ));
                }
            }
            (v, s) => pieces.push((k.clone(), v.clone(), s.clone())),
        }
    }
    let unnamed = patch.keys().any(|k| !apart.contains(k));
    let calls = pieces.len() + usize::from(unnamed);
    if calls < 2 {
        return None;
    }
    let mut first_patch: serde_json::Map<String, Value> = patch
        .iter()
        .filter(|(k, _)| !apart.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut first_shown: serde_json::Map<String, Value> = shown_patch
        .iter()
        .filter(|(k, _)| !apart.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut pieces = pieces.into_iter();
    if !unnamed {
        let (k, v, s) = pieces.next()?;
        first_patch.insert(k.clone(), v);
        first_shown.insert(k, s);
    }
    let with = |base: &Value, patch: serde_json::Map<String, Value>| {
        let mut r = base.clone();
        r["patch"] = Value::Object(patch);
        r
    };
    let rest = pieces
        .map(|(k, v, s)| {
            let one = |x: Value| [(k.clone(), x)].into_iter().collect();
            (with(request, one(v)), with(shown, one(s)))
        })
        .collect();
    *request = with(request, first_patch);
    *shown = with(shown, first_shown);
    Some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offer(parts: &[Feature]) -> Offer {
        let mut hello = taskproof_core::protocol::Hello {
            protocol: 2,
            name: "t".into(),
            version: "1".into(),
            layout: taskproof_core::protocol::Layout::Opaque,
            features: parts.iter().copied().collect(),
            mapping: Default::default(),
        };
        if !parts.contains(&Feature::InProgress) {
            hello.mapping.insert(
                taskproof_core::protocol::STATUSES.into(),
                "pending,completed".into(),
            );
        }
        Offer::from_hello(&hello, false)
    }

    #[test]
    fn a_patch_loses_the_fields_of_undeclared_parts_and_keeps_its_status() {
        let o = offer(&[Feature::Edges, Feature::InProgress]);
        let mut r = json!({"op": "update", "list": "l", "id": "1", "patch": {
            "status": "completed", "owner": "a", "metadata": {"k": 1}, "addBlockedBy": ["2"],
            "removeBlocks": ["3"]}});
        let mut shown = r.clone();
        let fit = fit(&mut r, &mut shown, &o);
        assert_eq!(
            fit,
            Fit::Send(vec![
                Feature::Metadata,
                Feature::Owner,
                Feature::EdgeRemoval
            ])
        );
        assert_eq!(
            r["patch"],
            json!({"status": "completed", "addBlockedBy": ["2"]})
        );
        assert_eq!(shown, r);
    }

    #[test]
    fn a_patch_left_with_nothing_is_left_out_and_an_op_without_its_part_too() {
        let o = offer(&[]);
        let mut r = json!({"op": "update", "list": "l", "id": "1", "patch": {"owner": "a"}});
        let mut shown = r.clone();
        assert_eq!(fit(&mut r, &mut shown, &o), Fit::LeaveOut(Feature::Owner));
        let mut r =
            json!({"op": "update", "list": "l", "id": "1", "patch": {"status": "in_progress"}});
        let mut shown = r.clone();
        assert_eq!(
            fit(&mut r, &mut shown, &o),
            Fit::LeaveOut(Feature::InProgress)
        );
        let mut r = json!({"op": "claim", "list": "l", "id": "1", "owner": "a"});
        let mut shown = r.clone();
        assert_eq!(fit(&mut r, &mut shown, &o), Fit::LeaveOut(Feature::Claim));
        // An empty patch as generated stays: it is a request of its own (S11).
        let mut r = json!({"op": "update", "list": "l", "id": "1", "patch": {}});
        let mut shown = r.clone();
        assert_eq!(fit(&mut r, &mut shown, &o), Fit::Send(vec![]));
    }

    /// Fields are taken out of the request and its shown form alike, and only those whose
    /// value the test accepts: a null `activeForm` is taken, a set one is not; a scalar
    /// `status` is taken where arrays are kept.
    #[test]
    fn fields_are_taken_from_the_request_and_its_shown_form_alike() {
        let fields = BTreeSet::from(["activeForm".to_string(), "addBlocks".to_string()]);
        let mut r = json!({"op": "update", "id": "1", "patch": {"activeForm": null, "status": "completed"}});
        let mut shown = json!({"op": "update", "id": "${l1}", "patch": {"activeForm": null, "status": "completed"}});
        let taken = take_fields(&mut r, &mut shown, "patch", &fields, Value::is_null);
        assert_eq!(taken, ["activeForm"]);
        assert_eq!(r["patch"], json!({"status": "completed"}));
        assert_eq!(shown["patch"], json!({"status": "completed"}));
        let mut r = json!({"op": "update", "patch": {"activeForm": "Working", "addBlocks": ["2"]}});
        let mut shown = r.clone();
        assert!(take_fields(&mut r, &mut shown, "patch", &fields, Value::is_null).is_empty());
        let scalar = |v: &Value| !v.is_array();
        assert_eq!(
            take_fields(&mut r, &mut shown, "patch", &fields, scalar),
            ["activeForm"]
        );
        assert_eq!(r["patch"], json!({"addBlocks": ["2"]}));
    }

    /// A field whose removal the target states it cannot express (oh-my-opencode's
    /// `activeForm: null`, `unsupported`) is named in the offer; one whose removal it states
    /// as a call (`owner: null`, `task_update {owner: ""}`) is not.
    #[test]
    fn a_removal_the_target_cannot_express_is_named_in_the_offer() {
        let mut hello = taskproof_core::protocol::Hello {
            protocol: 2,
            name: "t".into(),
            version: "1".into(),
            layout: taskproof_core::protocol::Layout::Opaque,
            features: [Feature::ActiveForm, Feature::Owner].into_iter().collect(),
            mapping: Default::default(),
        };
        hello.mapping.insert(
            "activeForm: null".into(),
            "unsupported (only task_get runs)".into(),
        );
        hello
            .mapping
            .insert("owner: null".into(), "task_update {owner: \"\"}".into());
        let o = Offer::from_hello(&hello, false);
        assert_eq!(o.cannot_remove, BTreeSet::from(["activeForm".to_string()]));
    }

    /// A create whose `blocks` the mapping writes with an update per item (dex's) is one
    /// the other sessions can see half made: the offer names its field, for parallel parts
    /// to leave out, apart from the update fields cut into one request a call.
    #[test]
    fn a_create_made_of_calls_apart_is_named_apart_from_updates() {
        let mut hello = taskproof_core::protocol::Hello {
            protocol: 2,
            name: "t".into(),
            version: "1".into(),
            layout: taskproof_core::protocol::Layout::Opaque,
            features: [Feature::Edges, Feature::EdgesAtCreate]
                .into_iter()
                .collect(),
            mapping: Default::default(),
        };
        hello.mapping.insert(
            taskproof_core::protocol::CALLS_APART.into(),
            "create with task.blocks; update with patch.addBlocks".into(),
        );
        let o = Offer::from_hello(&hello, false);
        assert_eq!(o.create_apart, BTreeSet::from(["blocks".to_string()]));
        assert_eq!(o.apart, BTreeSet::from(["addBlocks".to_string()]));
    }

    /// dex's mapping sends the status in one call and each `addBlocks` item in a call of its
    /// own: a patch with both is cut so that a refused later call cannot leave an earlier one
    /// done, which would be the mapping's doing and not the server's.
    #[test]
    fn a_patch_the_target_carries_out_in_calls_apart_is_cut_into_one_request_a_call() {
        let mut hello = taskproof_core::protocol::Hello {
            protocol: 2,
            name: "t".into(),
            version: "1".into(),
            layout: taskproof_core::protocol::Layout::Opaque,
            features: [Feature::Edges, Feature::EdgeRemoval].into_iter().collect(),
            mapping: Default::default(),
        };
        hello.mapping.insert(
            taskproof_core::protocol::CALLS_APART.into(),
            "update with patch.addBlocks; update with patch.removeBlocks".into(),
        );
        let o = Offer::from_hello(&hello, false);
        let mut r = json!({"op": "update", "list": "l", "id": "1", "patch": {
            "status": "completed", "addBlocks": ["2", "3"], "addBlockedBy": ["4"]}});
        let mut shown = json!({"op": "update", "list": "l", "id": "${l1}", "patch": {
            "status": "completed", "addBlocks": ["${l2}", "${l3}"], "addBlockedBy": ["${l4}"]}});
        let Fit::Split(dropped, rest) = fit(&mut r, &mut shown, &o) else {
            panic!("not cut: {r}");
        };
        assert!(dropped.is_empty());
        assert_eq!(
            r["patch"],
            json!({"status": "completed", "addBlockedBy": ["4"]})
        );
        assert_eq!(
            shown["patch"],
            json!({"status": "completed", "addBlockedBy": ["${l4}"]})
        );
        let patches: Vec<(Value, Value)> = rest
            .iter()
            .map(|(r, s)| (r["patch"].clone(), s["patch"].clone()))
            .collect();
        assert_eq!(
            patches,
            vec![
                (json!({"addBlocks": ["2"]}), json!({"addBlocks": ["${l2}"]})),
                (json!({"addBlocks": ["3"]}), json!({"addBlocks": ["${l3}"]})),
            ]
        );
        assert!(
            rest.iter()
                .all(|(r, _)| r["id"] == "1" && r["op"] == "update")
        );
        // One call's worth is not cut; nor is anything for a target that names none.
        let mut r = json!({"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["2"]}});
        let mut shown = r.clone();
        assert_eq!(fit(&mut r, &mut shown, &o), Fit::Send(vec![]));
        let mut r = json!({"op": "update", "list": "l", "id": "1", "patch": {
            "status": "completed", "addBlocks": ["2", "3"]}});
        let mut shown = r.clone();
        let everything = Offer::everything(false);
        assert_eq!(fit(&mut r, &mut shown, &everything), Fit::Send(vec![]));
    }

    #[test]
    fn edges_at_creation_need_both_parts() {
        let o = offer(&[Feature::EdgesAtCreate, Feature::InProgress]);
        let mut r =
            json!({"op": "create", "list": "l", "task": {"subject": "s", "blockedBy": ["1"]}});
        let mut shown = r.clone();
        assert_eq!(fit(&mut r, &mut shown, &o), Fit::Send(vec![Feature::Edges]));
        assert_eq!(r["task"], json!({"subject": "s"}));
    }
}
