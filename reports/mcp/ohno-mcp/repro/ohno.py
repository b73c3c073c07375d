"""Shared by the @stevestomp/ohno-mcp reproductions in this folder: the server started from its npm package with its database in a temporary folder (no code of taskproof's)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, npm_bin, npm_package  # noqa: E402

PACKAGE, DEFAULT_VERSION = "@stevestomp/ohno-mcp", "0.20.0"


def start(version, tmp, db="tasks.db"):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "ohno-mcp")], cwd=tmp,
                  env={"HOME": tmp, "OHNO_DB_PATH": f"{tmp}/.ohno/{db}"})
    s.initialize()
    return s
