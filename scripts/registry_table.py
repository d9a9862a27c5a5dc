"""Writes the table of minigrid 3.2.0's registry in docs/registry.md: every ``MiniGrid-*`` and ``BabyAI-*`` id with
its jaxsoc group (``jaxsoc list``), grid size, ``max_steps`` and the mission of minigrid's level with seed 0 (the same
string jaxsoc writes for that level, ``tests/test_minigrid_registry.py``), plus the coverage line that the tests
check. minigrid's wheel lacks the WFC pattern images: with ``$JAXSOC_WFC_PATTERNS`` pointing at them, the WFC ids are
reset from there (``wfc_bank.reference_env``), else their rows say which image is missing.

    python scripts/registry_table.py            # rewrites docs/registry.md between the registry-table markers
    python scripts/registry_table.py --print    # prints the table instead

Needs minigrid (the test extra): ``pip install -e '.[test]'``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import minigrid  # noqa: F401  (registers the ids)

import jaxsoc
from jaxsoc.envs import env_family
from jaxsoc.envs.babyai.minigrid_levels import PUTNEXT_ICLR19_ID, register_reference_levels
from jaxsoc.envs.gridworld import wfc, wfc_bank

PAGE = Path(__file__).resolve().parents[1] / "docs" / "registry.md"
BEGIN, END = "<!-- registry-table:begin -->", "<!-- registry-table:end -->"


def make_minigrid(name: str):
    """Returns minigrid's env of ``name``; a WFC id reads its pattern image from ``$JAXSOC_WFC_PATTERNS`` when set."""
    if name in wfc.ENVS and os.environ.get(wfc_bank.PATTERNS_ENV):
        return wfc_bank.reference_env(wfc.ENVS[name][1]["preset"])
    return gym.make(name)


def table() -> str:
    """Returns the coverage line and the markdown table, one row per minigrid id."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # gymnasium's notes on the v0 ids
    register_reference_levels()  # silences minigrid's "Sampling rejected" prints
    ids = sorted(
        name for name in gym.registry if name.startswith(("MiniGrid-", "BabyAI-")) and name != PUTNEXT_ICLR19_ID
    )
    ours = set(jaxsoc.registered_envs())
    mini = sum(name.startswith("MiniGrid-") for name in ids)
    lines = [
        f"Coverage: minigrid 3.2.0 registers {mini} `MiniGrid-*` and {len(ids) - mini} `BabyAI-*` ids; jaxsoc "
        f"registers {len(set(ids) & ours)} of them (`tests/test_minigrid_registry.py` lists minigrid's registry).",
        "",
        "| id | group | grid | max steps | mission (seed 0) |",
        "|---|---|---|---:|---|",
    ]
    for name in ids:
        env = make_minigrid(name)
        u = env.unwrapped
        group = "/".join(filter(None, env_family(name))) if name in ours else "**missing**"
        try:
            env.reset(seed=0)
            mission = u.mission.replace("|", "\\|") or "(none)"
        except FileNotFoundError as error:  # minigrid's wheel lacks the WFC pattern images
            mission = f"(minigrid cannot reset it: {Path(error.filename).name} missing)"
        lines.append(f"| `{name}` | {group} | {u.width}×{u.height} | {u.max_steps} | {mission} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print", action="store_true", help="print the table instead of rewriting docs/registry.md")
    args = parser.parse_args()
    text = table()
    if args.print:
        print(text)
        return 0
    page = PAGE.read_text()
    if BEGIN not in page or END not in page:
        print(f"{PAGE} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = page.split(BEGIN, 1)
    PAGE.write_text(f"{head}{BEGIN}\n{text}\n{END}{rest.split(END, 1)[1]}")
    print(f"rewrote the registry table of {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
