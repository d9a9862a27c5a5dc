"""The tracked tree travels to a GPU machine whole: the device tool carries a working tree of at most 64 MiB
(``../.library/device/README.md``), and the GPU suite reads committed runs from it (e.g. the CHAIC behaviour model of
``benchmarks/results/chaic_options3_cpu/bm``). Committed checkpoints are the usual way past the limit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what a device call carries of the working tree
CARRY_LIMIT = 64 * 2**20


def test_the_tracked_tree_fits_what_a_device_call_carries():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    files = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    sizes = {path: path.stat().st_size for path in files if path.is_file()}
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    names = ", ".join(f"{path.relative_to(ROOT)} ({size / 2**20:.1f} MiB)" for path, size in largest)
    assert total <= CARRY_LIMIT, f"tracked files: {total / 2**20:.1f} MiB > 64 MiB; the largest: {names}"
