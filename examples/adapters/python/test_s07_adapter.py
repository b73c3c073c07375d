"""Tests of the s07 example adapter through its real protocol: a child process per test,
request lines in, answer lines out. Standard library only:

    python3 -m unittest discover -s examples/adapters/python
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ADAPTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "s07_adapter.py")


def run(root, *requests):
    """Sends raw request lines to a fresh adapter on `root`; returns answers and exit code."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in requests]
    proc = subprocess.run(
        [sys.executable, ADAPTER],
        input="".join(line + "\n" for line in lines).encode(),
        capture_output=True,
        env={**os.environ, "TASKPROOF_ROOT": root},
        timeout=30,
    )
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return answers, proc.returncode


def create(subject, **fields):
    return {"op": "create", "list": "l", "task": {"subject": subject, **fields}}


def update(task_id, **patch):
    return {"op": "update", "list": "l", "id": task_id, "patch": patch}


class AdapterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_every_line_gets_one_answer_and_bad_input_is_invalid(self):
        answers, code = run(self.root, "not json", "[1]", '{"op": "fly"}', {"op": "hello"}, "")
        self.assertEqual(code, 0)
        self.assertEqual(len(answers), 5)
        for a in answers[:3] + answers[4:]:
            self.assertEqual(a["error"]["kind"], "invalid", a)
        self.assertEqual(answers[3]["layout"], "s07")
        self.assertEqual(answers[3]["features"], ["edges", "edges_at_create", "lists"])

    def test_ids_are_integers_on_disk_and_strings_on_the_wire(self):
        answers, _ = run(self.root, create("a"), create("b", blockedBy=["1"]))
        self.assertEqual(answers[1]["task"]["id"], "2")
        with open(os.path.join(self.root, "l", "task_2.json")) as f:
            on_disk = json.load(f)
        self.assertEqual(on_disk["id"], 2)
        self.assertEqual(on_disk["blockedBy"], [1])

    def test_two_processes_started_together_hand_out_the_same_id(self):
        # The next id is computed when the process starts (SPEC §5): a second process that
        # started before the first one wrote still hands out 1 and replaces the task.
        first = subprocess.Popen(
            [sys.executable, ADAPTER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "TASKPROOF_ROOT": self.root},
        )
        second = subprocess.Popen(
            [sys.executable, ADAPTER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "TASKPROOF_ROOT": self.root},
        )
        try:
            for proc in (first, second):
                proc.stdin.write(b'{"op":"hello"}\n')
                proc.stdin.flush()
                json.loads(proc.stdout.readline())
            ids = []
            for proc, subject in ((first, "from first"), (second, "from second")):
                proc.stdin.write(json.dumps(create(subject)).encode() + b"\n")
                proc.stdin.flush()
                ids.append(json.loads(proc.stdout.readline())["task"]["id"])
            self.assertEqual(ids, ["1", "1"])
        finally:
            for proc in (first, second):
                proc.stdin.close()
                proc.wait(timeout=30)
                proc.stdout.close()
        answers, _ = run(self.root, {"op": "list", "list": "l"})
        self.assertEqual([t["subject"] for t in answers[0]["tasks"]], ["from second"])

    def test_edges_mirror_and_completion_clears_blocked_by_only(self):
        answers, _ = run(
            self.root,
            create("a"),
            create("b"),
            update("1", addBlocks=["2"]),
            update("1", status="completed"),
            {"op": "list", "list": "l"},
        )
        a, b = answers[-1]["tasks"]
        self.assertEqual(a["blocks"], ["2"])
        self.assertEqual(b["blockedBy"], [])

    def test_cycles_self_edges_and_missing_references_are_accepted(self):
        answers, _ = run(
            self.root,
            create("a"),
            create("b", blockedBy=["1"]),
            update("1", addBlockedBy=["2"]),
            update("1", addBlocks=["1"]),
            update("2", addBlockedBy=["99"]),
        )
        self.assertTrue(all(a["ok"] for a in answers), answers)
        self.assertEqual(answers[3]["task"]["blockedBy"], ["1", "2"])
        self.assertNotIn("1", answers[3]["task"]["blocks"])
        self.assertEqual(answers[4]["task"]["blockedBy"], ["1", "99"])

    def test_status_values_are_checked_but_every_transition_is_allowed(self):
        answers, _ = run(
            self.root,
            create("a"),
            update("1", status="completed"),
            update("1", status="pending"),
            update("1", status="done"),
            update("9", status="done"),
        )
        self.assertEqual(answers[2]["task"]["status"], "pending")
        self.assertEqual(answers[3]["error"]["kind"], "invalid")
        self.assertEqual(answers[4]["error"]["kind"], "not_found")

    def test_what_the_store_lacks_is_unsupported_after_the_form_is_checked(self):
        answers, _ = run(
            self.root,
            create("a"),
            update("1", owner="agent"),
            update("1", owner=5),
            update("1", owner=None, metadata={}),
            update("1", removeBlockedBy=["2"]),
            create("b", metadata={"k": 1}),
            {"op": "delete", "list": "l", "id": "1"},
            {"op": "delete", "list": "l", "id": "01"},
            {"op": "claim", "list": "l", "id": "1", "owner": "w"},
        )
        kinds = [a["error"]["kind"] if not a["ok"] else "ok" for a in answers[1:]]
        self.assertEqual(
            kinds,
            ["unsupported", "invalid", "ok", "unsupported", "unsupported", "unsupported", "invalid", "unsupported"],
        )

    def test_unreadable_files_are_corrupt_and_links_are_not_followed(self):
        run(self.root, create("a"))
        folder = os.path.join(self.root, "l")
        with open(os.path.join(folder, "task_2.json"), "w") as f:
            f.write('{"id": 2, "subject": ')
        outside = self.root + "-secret.json"  # beside the root, outside it
        with open(outside, "w") as f:
            json.dump({"id": 3, "subject": "secret", "status": "pending"}, f)
        self.addCleanup(os.remove, outside)
        os.symlink(outside, os.path.join(folder, "task_3.json"))
        os.mkdir(os.path.join(folder, "task_4.json"))
        with open(os.path.join(folder, "task_07.json"), "w") as f:
            f.write("{}")
        answers, _ = run(
            self.root,
            {"op": "list", "list": "l"},
            {"op": "get", "list": "l", "id": "2"},
            {"op": "get", "list": "l", "id": "3"},
            update("3", subject="through the link"),
        )
        self.assertEqual([t["id"] for t in answers[0]["tasks"]], ["1"])
        self.assertEqual(sorted(answers[0]["corrupt"]), ["task_2.json", "task_3.json"])
        self.assertEqual([a["error"]["kind"] for a in answers[1:]], ["corrupt"] * 3)
        with open(outside) as f:
            self.assertEqual(json.load(f)["subject"], "secret")

    def test_fields_other_programs_wrote_survive_updates(self):
        folder = os.path.join(self.root, "l")
        os.mkdir(folder)
        with open(os.path.join(folder, "task_5.json"), "w") as f:
            json.dump({"id": 5, "subject": "other", "status": "pending", "x-color": "red"}, f)
        answers, _ = run(self.root, update("5", subject="mine"))
        self.assertEqual(answers[0]["task"]["x-color"], "red")
        self.assertEqual(answers[0]["task"]["description"], "")
        with open(os.path.join(folder, "task_5.json")) as f:
            self.assertEqual(json.load(f)["x-color"], "red")

    def test_list_names_that_leave_the_root_are_invalid(self):
        answers, _ = run(self.root, *[{"op": "list", "list": n} for n in ("..", "a/b", "", "x" * 65, "é")])
        self.assertEqual([a["error"]["kind"] for a in answers], ["invalid"] * 5)
        self.assertEqual(os.listdir(self.root), [])


if __name__ == "__main__":
    unittest.main()
