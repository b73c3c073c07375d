"""Claim (timeline "background task ids a letter and eight random characters", 2.1.52 -> 2.1.53;
docs/claude-code.md "Ids"): the ids of 16 background tasks started in one turn are each `b` and
eight characters of [0-9a-z], all different.

Print mode; one turn with 16 `Bash` calls with run_in_background (`true`). Answer yes when all
16 ids match ^b[0-9a-z]{8}$ and are distinct.
"""
import os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import claude as C


def main():
    a = C.parse_args("2.1.53")
    C.install(a.version)
    load = C.loadavg()
    s = C.BgSession(a.version)
    try:
        ids = [i for i, _ in s.spawn(["true"] * 16)]
    finally:
        s.close()
    good = [i for i in ids if re.fullmatch(r"b[0-9a-z]{8}", i)]
    C.log("ids", ids)
    ok = len(good) == 16 and len(set(ids)) == 16
    C.finish(a.version, ok, f"{len(good)} of 16 ids are b + 8 of [0-9a-z], {len(set(ids))} distinct; e.g. "
             f"{', '.join(ids[:3])}; load {load}")


if __name__ == "__main__":
    C.run_main(main, (sys.argv[sys.argv.index("--version") + 1] if "--version" in sys.argv else "2.1.53"))
