"""minigrid 3.2.0's versions of the 19 paper levels, for differential tests and the reference benchmark.

minigrid is a test/benchmark dependency only, imported when these functions are called. minigrid 3.2.0 has
no paper ``PutNext`` level (its ``PutNext`` is the bonus ``PutNextS*`` family); ``BabyAI-PutNextICLR19-v0``
re-creates mila-iqia/babyai's ``iclr19_levels.Level_PutNext`` and is registered on first use.
"""

from __future__ import annotations

import functools

from jaxsoc.envs.babyai.instr import MAX_MISSION_TOKENS, BabyAIState

PAPER_LEVELS = (
    "GoToObj",
    "GoToRedBallGrey",
    "GoToRedBall",
    "GoToLocal",
    "PutNextLocal",
    "PickupLoc",
    "GoToObjMaze",
    "GoTo",
    "Pickup",
    "UnblockPickup",
    "Open",
    "Unlock",
    "PutNext",
    "Synth",
    "SynthLoc",
    "GoToSeq",
    "SynthSeq",
    "GoToImpUnlock",
    "BossLevel",
)
PUTNEXT_ICLR19_ID = "BabyAI-PutNextICLR19-v0"


@functools.cache
def register_reference_levels() -> None:
    """Imports minigrid, silences its "Sampling rejected" prints and registers ``BabyAI-PutNextICLR19-v0``."""
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the BabyAI ids)
    import minigrid.envs.babyai.core.roomgrid_level as roomgrid_level
    from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel
    from minigrid.envs.babyai.core.verifier import ObjDesc, PutNextInstr

    roomgrid_level.print = lambda *args, **kwargs: None

    class PutNextICLR19(RoomGridLevel):
        """The ICLR19 ``PutNext`` level: 3x3 rooms of size 8, 18 distractors, put one next to another."""

        def gen_mission(self):
            self.place_agent()
            self.connect_all()
            objs = self.add_distractors(num_distractors=18, all_unique=False)
            self.check_objs_reachable()
            first, second = self._rand_subset(objs, 2)
            self.instrs = PutNextInstr(ObjDesc(first.type, first.color), ObjDesc(second.type, second.color))

    if PUTNEXT_ICLR19_ID not in gym.registry:
        gym.register(id=PUTNEXT_ICLR19_ID, entry_point=PutNextICLR19)


def minigrid_id(name: str) -> str:
    """Returns minigrid's env id of a level given by jaxsoc id or short name (``GoTo``, ``BabyAI-GoTo-v0``,
    ``BabyAI-GoToObjS6-v1``); a short name gets version 0."""
    short, dash, version = name.removeprefix("BabyAI-").rpartition("-v")
    if not (dash and version.isdigit()):
        short, version = name.removeprefix("BabyAI-"), "0"
    return PUTNEXT_ICLR19_ID if short in ("PutNext", "PutNextICLR19") else f"BabyAI-{short}-v{version}"


def make_minigrid_level(name: str, seed: int | None = None):
    """Returns the minigrid gymnasium env of level ``name``, reset with ``seed`` when given."""
    import gymnasium as gym

    register_reference_levels()
    env = gym.make(minigrid_id(name))
    if seed is not None:
        env.reset(seed=seed)
    return env


def sample_minigrid_levels(name: str, seeds) -> BabyAIState:
    """Returns minigrid's levels ``name`` reset with each of ``seeds``, imported (``compat``) and stacked
    along a leading axis; the ``mission`` tokens are left at 0 (statistics do not need them)."""
    import jax
    import numpy as np

    from jaxsoc.envs.babyai.compat import instruction_from_minigrid
    from jaxsoc.envs.gridworld.compat import grid_state_from_minigrid

    env = make_minigrid_level(name)
    levels = []
    for seed in seeds:
        env.reset(seed=int(seed))
        instruction, verifier = instruction_from_minigrid(env)
        world = grid_state_from_minigrid(env)
        levels.append((world, instruction, verifier, np.int32(env.unwrapped.max_steps)))
    world, instruction, verifier, max_steps = jax.tree.map(lambda *xs: np.stack(xs), *levels)
    mission = np.zeros((len(levels), MAX_MISSION_TOKENS), np.uint8)
    return BabyAIState(world=world, instr=instruction, verifier=verifier, max_steps=max_steps, mission=mission)
