#!/usr/bin/env python3
"""Keeps a fuzz run's findings once in reports/ (reports/README.md, "No two identical files").

    scripts/lib/keep_once.py FINDINGS_DIR...   # after `taskproof fuzz --out FINDINGS_DIR`
    scripts/lib/keep_once.py --find FILE       # prints a file of reports/ with FILE's bytes
    scripts/lib/keep_once.py --hold DIR/DATE-NAME   # after a profile hold (hold-profiles.sh)

A finding is a scenario: the same divergence found on two versions or targets is often written
byte for byte the same. For each FINDINGS_DIR/*.json whose bytes a file elsewhere in reports/
already holds, the new file is removed and the run's reports beside the folder (fuzz.json,
fuzz.txt) name the kept file instead, so `wrote` and `replay:` still point at the scenario;
fuzz.txt says so under its `wrote` line.
Paths are the repository-relative ones `taskproof fuzz` writes. Run from the repository's top.

A hold's Markdown or terminal report (DATE-NAME.md, .txt) with the bytes of an earlier day's
hold of the same NAME in the same folder is removed, and DATE-NAME.status gets a line naming
the earlier file.
"""
import os
import re
import sys

REPORTS = "reports"


def files_under(root, skip):
    for d, _, names in os.walk(root):
        if os.path.abspath(d) == skip:
            continue
        for n in sorted(names):
            yield os.path.join(d, n)


def same_bytes(path, skip_dir):
    """A file of reports/ outside skip_dir with path's bytes, or None."""
    with open(path, "rb") as f:
        data = f.read()
    skip = os.path.abspath(skip_dir)
    for other in sorted(files_under(REPORTS, skip)):
        if os.path.getsize(other) != len(data) or os.path.samefile(other, path):
            continue
        with open(other, "rb") as f:
            if f.read() == data:
                return other
    return None


def keep_once(findings):
    run = os.path.dirname(os.path.normpath(findings))
    for name in sorted(os.listdir(findings)):
        if not name.endswith(".json"):
            continue
        new = os.path.join(findings, name)
        kept = same_bytes(new, findings)
        if kept is None:
            continue
        os.remove(new)
        for report in ("fuzz.json", "fuzz.txt"):
            path = os.path.join(run, report)
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            old_path, kept_path = os.path.normpath(new), os.path.normpath(kept)
            text = text.replace(old_path, kept_path)
            if report == "fuzz.txt":
                # The transcript keeps what the run wrote and says, under that line, what was
                # done after it (its last line stays the run's summary, which scripts read).
                text = text.replace(
                    f"wrote {kept_path}\n",
                    f"wrote {old_path}\n(after the run: that file was byte for byte "
                    f"{kept_path}, kept once there by scripts/lib/keep_once.py)\n",
                )
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        print(f"keep_once: {new} is {kept}, kept once", file=sys.stderr)


def keep_hold_once(base):
    folder, name = os.path.split(base)
    stem = re.sub(r"^\d{4}-\d{2}-\d{2}-", "", name)
    for ext in ("md", "txt"):
        new = f"{base}.{ext}"
        if not os.path.isfile(new):
            continue
        with open(new, "rb") as f:
            data = f.read()
        pattern = re.compile(r"\d{4}-\d{2}-\d{2}-" + re.escape(f"{stem}.{ext}") + "$")
        for other in sorted(os.listdir(folder or ".")):
            path = os.path.join(folder, other)
            if not pattern.match(other) or os.path.samefile(path, new):
                continue
            with open(path, "rb") as f:
                if f.read() != data:
                    continue
            os.remove(new)
            with open(f"{base}.status", "a", encoding="utf-8") as f:
                f.write(f"{ext}: the same bytes as {other}\n")
            break


def main(args):
    if len(args) == 2 and args[0] == "--hold":
        keep_hold_once(args[1])
        return 0
    if len(args) == 2 and args[0] == "--find":
        kept = same_bytes(args[1], os.path.dirname(args[1]) or ".")
        if kept:
            print(kept)
        return 0
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    for findings in args:
        if os.path.isdir(findings):
            keep_once(findings)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
