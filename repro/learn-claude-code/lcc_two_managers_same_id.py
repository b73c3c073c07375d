#!/usr/bin/env python3
"""learn-claude-code s07: two TaskManagers on one folder hand out the same id.

asks: With two TaskManager objects made on one folder (as two agents started on one list), does
a create through the second give the id a create through the first already gave, so the first
task's file is overwritten?

The lesson counts its next id once, when the manager is made. Strict contract: S1 (ids are never
handed out twice) and S19. Found by taskproof fuzz (reports/fuzz-recall.md).
"""
import json
from _lesson import run


def body(s07, folder):
    a = s07.TaskManager(folder)
    b = s07.TaskManager(folder)
    x = json.loads(a.create("from a"))
    y = json.loads(b.create("from b"))
    on_disk = json.loads((folder / f"task_{x['id']}.json").read_text())["subject"]
    return x["id"] == y["id"], f"a gave {x['id']}, b gave {y['id']}; task_{x['id']}.json now says {on_disk!r}"


if __name__ == "__main__":
    run(body)
