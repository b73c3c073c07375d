"""Tests of the learn-claude-code adapter against the real lesson files.

They need a learn-claude-code checkout at the revision README.md names, named by
LEARN_CLAUDE_CODE_DIR, and an interpreter that can import its requirements
(LEARN_CLAUDE_CODE_PYTHON, else the one running the tests). Without the checkout they are
skipped, with the reason; the test of a missing checkout runs always.

    LEARN_CLAUDE_CODE_DIR=/tmp/learn-claude-code \\
    LEARN_CLAUDE_CODE_PYTHON=/tmp/learn-claude-code/.venv/bin/python \\
      python3 -m unittest discover -s adapters/learn-claude-code -p 'test_*.py' -v
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ADAPTER = Path(__file__).resolve().parent / "adapter.py"
CHECKOUT = os.environ.get("LEARN_CLAUDE_CODE_DIR")
PYTHON = os.environ.get("LEARN_CLAUDE_CODE_PYTHON", sys.executable)


def run_adapter(root, requests, cwd, env_extra=None, args=()):
    """Runs the adapter once over `requests`; returns (answers, stderr, exit status)."""
    env = {k: v for k, v in os.environ.items() if k != "MODEL_ID"}
    env["TASKPROOF_ROOT"] = str(root)
    env.update(env_extra or {})
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run(
        [PYTHON, str(ADAPTER), *args],
        input=lines.encode(),
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return answers, proc.stderr.decode(), proc.returncode


class WithoutCheckout(unittest.TestCase):
    def test_a_missing_checkout_stops_the_adapter_with_the_reason(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = {"LEARN_CLAUDE_CODE_DIR": str(Path(tmp) / "nowhere")}
            answers, stderr, status = run_adapter(Path(tmp) / "root", [{"op": "hello"}], tmp, env)
        self.assertEqual(status, 2)
        self.assertEqual(answers, [])
        self.assertIn("agents/s07_task_system.py", stderr)


@unittest.skipUnless(
    CHECKOUT,
    "LEARN_CLAUDE_CODE_DIR is not set: these tests need a learn-claude-code checkout "
    "(see adapters/learn-claude-code/README.md)",
)
class AgainstTheLesson(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        base = Path(self.tmp.name)
        self.root = base / "root"
        self.cwd = base / "cwd"
        self.cwd.mkdir()

    def tearDown(self):
        self.tmp.cleanup()

    def run_requests(self, requests):
        answers, stderr, status = run_adapter(self.root, [{"op": "hello"}, *requests], self.cwd)
        self.assertEqual(status, 0, stderr)
        self.assertEqual(len(answers), len(requests) + 1, stderr)
        return answers[0], answers[1:]

    def test_hello_names_the_checkout_and_what_maps(self):
        hello, _ = self.run_requests([])
        self.assertEqual(hello["layout"], "s07")
        self.assertEqual(sorted(hello["features"]), ["claim", "edges", "edges_at_create", "lists"])
        self.assertTrue(hello["version"].startswith("git:"), hello)

    def test_tasks_are_the_lessons_files_and_nothing_lands_outside_the_root(self):
        _, (a, b) = self.run_requests(
            [
                {"op": "create", "list": "l", "task": {"subject": "first"}},
                {"op": "create", "list": "l", "task": {"subject": "second", "blockedBy": ["1"]}},
            ]
        )
        self.assertEqual(a["task"]["id"], "1")
        self.assertEqual(b["task"]["blockedBy"], ["1"])
        on_disk = json.loads((self.root / "l" / "task_1.json").read_text())
        # The lesson's own format: integer ids, the mirrored edge written by its update.
        self.assertEqual(on_disk["id"], 1)
        self.assertEqual(on_disk["blocks"], [2])
        self.assertEqual(sorted(os.listdir(self.root)), ["l"])
        self.assertEqual(os.listdir(self.cwd), [], "importing the lessons left files in the working directory")

    def test_what_the_lesson_cannot_do_is_unsupported_and_changes_nothing(self):
        _, answers = self.run_requests(
            [
                {"op": "create", "list": "l", "task": {"subject": "s"}},
                {"op": "update", "list": "l", "id": "1", "patch": {"subject": "t", "status": "completed"}},
                {"op": "update", "list": "l", "id": "9", "patch": {"subject": "t"}},
                {"op": "delete", "list": "l", "id": "1"},
                {"op": "create", "list": "l", "task": {"subject": "m", "metadata": {"a": 1}}},
                {"op": "get", "list": "l", "id": "1"},
            ]
        )
        kinds = [a.get("error", {}).get("kind") for a in answers]
        self.assertEqual(kinds, [None, "unsupported", "not_found", "unsupported", "unsupported", None])
        self.assertEqual(answers[-1]["task"]["subject"], "s")
        self.assertEqual(answers[-1]["task"]["status"], "pending")

    def test_a_task_file_the_protocol_cannot_carry_is_corrupt(self):
        (self.root / "l").mkdir(parents=True)
        (self.root / "l" / "task_1.json").write_text('{"id": 1, "status": "pending", "blocks": [], "blockedBy": []}')
        (self.root / "l" / "task_2.json").write_text('{"id": 2, "subject": "s", "status": "done", "blocks": [], "blockedBy": []}')
        _, answers = self.run_requests(
            [
                {"op": "get", "list": "l", "id": "1"},
                {"op": "get", "list": "l", "id": "2"},
            ]
        )
        self.assertEqual([a["error"]["kind"] for a in answers], ["corrupt", "corrupt"], answers)

    def test_claim_is_lesson_s11s_claim_task(self):
        _, answers = self.run_requests(
            [
                {"op": "create", "list": "l", "task": {"subject": "s"}},
                {"op": "claim", "list": "l", "id": "1", "owner": "alice"},
                # s11's claim_task does not look at the owner: a second agent takes it over.
                {"op": "claim", "list": "l", "id": "1", "owner": "bob"},
                {"op": "claim", "list": "l", "id": "5", "owner": "bob"},
            ]
        )
        self.assertEqual(answers[1]["task"]["owner"], "alice")
        self.assertEqual(answers[1]["task"]["status"], "in_progress")
        self.assertEqual(answers[2]["task"]["owner"], "bob")
        self.assertEqual(answers[3]["error"]["kind"], "not_found")

    def test_a_self_edge_added_as_blocks_stays_in_blocks(self):
        # The lesson's update saves the task last, over the mirror it wrote into the same
        # file: the self-edge ends in `blocks` only (docs/spec.md §5 says `blockedBy`).
        _, answers = self.run_requests(
            [
                {"op": "create", "list": "l", "task": {"subject": "s"}},
                {"op": "update", "list": "l", "id": "1", "patch": {"addBlocks": ["1"]}},
            ]
        )
        self.assertEqual(answers[1]["task"]["blocks"], ["1"])
        self.assertEqual(answers[1]["task"]["blockedBy"], [])

    def test_reads_of_an_unwritten_list_create_nothing(self):
        _, answers = self.run_requests(
            [
                {"op": "list", "list": "ghost"},
                {"op": "get", "list": "ghost", "id": "1"},
                {"op": "update", "list": "ghost", "id": "1", "patch": {"status": "completed"}},
            ]
        )
        self.assertEqual(answers[0], {"ok": True, "tasks": [], "corrupt": []})
        self.assertEqual(answers[1]["error"]["kind"], "not_found")
        self.assertEqual(answers[2]["error"]["kind"], "not_found")
        self.assertFalse((self.root / "ghost").exists())


if __name__ == "__main__":
    unittest.main()
