//! Ids: the request's wire ids as the server's and the answer's back, through the root's id
//! book (`task.ids = "table"`), and the server's container for each list (`[lists.create]`).

use std::sync::Arc;

use serde_json::{Value, json};
use taskproof_core::protocol::Op;
use taskproof_session::{TargetError, ids};

use crate::mapping;
use crate::read::{bad_answer, document};
use crate::session::McpSession;
use crate::translate::Stop;

impl McpSession {
    fn book(&self) -> &ids::Book {
        self.book
            .as_ref()
            .expect("a book with an id table or containers")
    }

    pub(crate) fn tables(&self) -> Result<ids::Tables, Stop> {
        self.book()
            .read()
            .map_err(|e| Stop::Target(TargetError::Io(format!("the id book: {e}"))))
    }

    /// The server's container for `list`, from the book as the request read it (`tables`);
    /// made by `[lists.create]` when `make` and there is none yet (under the book's lock, so
    /// that it is made once).
    pub(crate) fn container(
        &mut self,
        list: &str,
        make: bool,
        tables: &ids::Tables,
    ) -> Result<Option<String>, Stop> {
        let known = tables.containers.get(list).cloned();
        if known.is_some() || !make {
            return Ok(known);
        }
        let book = self.book().clone();
        let mapping = Arc::clone(&self.mapping);
        let call = mapping.container.as_ref().expect("checked: containers");
        let root = self.root.to_string_lossy().into_owned();
        let made = book.with(|t| {
            if let Some(c) = t.containers.get(list) {
                return Ok((c.clone(), false));
            }
            let vars = json!({"root": root, "list": list});
            let args = mapping.fill(&call.args, &vars).unwrap_or(json!({}));
            let result = self.call_checked(&call.tool, args, &call.error_kinds)?;
            let ptr = call.id.as_deref().expect("checked: lists.create.id");
            let doc = document(&call.doc, &result)
                .map_err(|e| bad_answer(Op::Create, "lists.create.id", &call.tool, e))?;
            let id = match mapping::at(&doc, ptr) {
                Some(Value::String(s)) => s,
                Some(Value::Number(n)) => n.to_string(),
                _ => {
                    return Err(bad_answer(
                        Op::Create,
                        "lists.create.id",
                        &call.tool,
                        format!("no id at {ptr:?} in {doc}"),
                    ));
                }
            };
            t.containers.insert(list.to_string(), id.clone());
            Ok((id, true))
        });
        match made {
            Err(e) => Err(Stop::Target(TargetError::Io(format!("the id book: {e}")))),
            Ok(r) => r.map(Some),
        }
    }

    /// The answer's tasks with wire ids: a task's id from the table (a new one numbered),
    /// its edges' ids from the table when it knows them, else as the server gave them. When
    /// the book as the request read it (`tables`) knows every id, that is all; else the ids
    /// are given under the book's lock, from the book as it is then.
    pub(crate) fn ids_out(
        &mut self,
        answer: &mut Value,
        list: &str,
        tables: ids::Tables,
    ) -> Result<(), Stop> {
        let mut tasks: Vec<&mut Value> = Vec::new();
        let Some(o) = answer.as_object_mut() else {
            return Ok(());
        };
        if o.contains_key("task") {
            tasks.extend(o.get_mut("task"));
        } else if let Some(Value::Array(a)) = o.get_mut("tasks") {
            tasks.extend(a.iter_mut());
        }
        if tasks.is_empty() {
            return Ok(());
        }
        let mut tables = tables;
        if tables.knows_all(list, &tasks) {
            tables.give_wire_ids(list, &mut tasks);
            return Ok(());
        }
        let done = self
            .book()
            .with(|t| Ok::<_, ()>(((), t.give_wire_ids(list, &mut tasks))));
        match done {
            Err(e) => Err(Stop::Target(TargetError::Io(format!("the id book: {e}")))),
            Ok(_) => Ok(()),
        }
    }
}

/// The request's wire ids as the server's, through the id table (`task.ids = "table"`); a
/// wire id the table does not know is left as it is, unless on a server reused from another
/// list (pool.rs) it names another task of the list as the server's id: then it is sent as
/// `gone`, the id of a task deleted on that server, which a fresh server would not have had
/// either.
pub(crate) fn ids_in(vars: &mut Value, tables: &ids::Tables, list: &str, gone: Option<&str>) {
    let one = |v: &mut Value| {
        if let Value::String(s) = v {
            let server = tables.server_id(list, s);
            let aliased = server == *s
                && tables
                    .known_wire_id(list, s)
                    .is_some_and(|wire| wire != s.as_str());
            *s = match gone {
                Some(dead) if aliased => dead.to_string(),
                _ => server,
            };
        }
    };
    if let Some(id) = vars.get_mut("id") {
        one(id);
    }
    for (part, fields) in [
        ("task", &["blockedBy", "blocks"][..]),
        (
            "patch",
            &[
                "addBlockedBy",
                "addBlocks",
                "removeBlockedBy",
                "removeBlocks",
            ][..],
        ),
    ] {
        for f in fields {
            if let Some(Value::Array(a)) = vars.get_mut(part).and_then(|p| p.get_mut(*f)) {
                a.iter_mut().for_each(one);
            }
        }
    }
}
