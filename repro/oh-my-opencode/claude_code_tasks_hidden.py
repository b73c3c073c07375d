"""Claim omo-hides-claude-code-tasks: in a list where Claude Code 2.1.332 created two tasks,
oh-my-opencode's task_list (storage_path at that list) shows none of them, and its task_get of
one by its id answers invalid_task_id: the plugin lists only `T-*.json` files and reads only
its own schema (a required threadID, no other fields).
Asks: does task_list show none of Claude Code's tasks? Exit 0 with a JSON verdict."""
import json

import _beside as B


def calls(ids):
    return [("task_list", {}), ("task_get", {"id": ids[0] or "1"})]


def judge(folder, ids, results, before, after):
    (le, lt), (ge, gt) = results
    listed = [t.get("id") for t in json.loads(lt).get("tasks", [])] if not le else None
    on_disk = sorted(p.name for p in folder.glob("*.json"))
    hidden = listed is not None and not any(i in listed for i in ids)
    return (hidden, f"files {on_disk}; task_list ids {listed}; task_get {ids[0]} answered {gt[:100]!r}")


B.run((calls, judge))
