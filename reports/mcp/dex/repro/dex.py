"""Shared by the @zeeg/dex reproductions in this folder: the server (`dex mcp`) started from its npm package in a temporary project folder (no code of taskproof's)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "repro" / "lib"))
from mcp_stdio import McpServer, npm_bin, npm_package  # noqa: E402

PACKAGE, DEFAULT_VERSION = "@zeeg/dex", "0.16.0"


def start(version, tmp):
    folder = npm_package(PACKAGE, version)
    s = McpServer([npm_bin(folder, "dex"), "mcp"], cwd=tmp,
                  env={"HOME": tmp, "DEX_HOME": f"{tmp}/dexhome",
                       "DEX_STORAGE_PATH": f"{tmp}/store"})
    s.initialize()
    return s
