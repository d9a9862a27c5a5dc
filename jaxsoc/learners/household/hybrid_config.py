"""The configuration of a Hybrid training run (Watch-And-Help §5.2, appendix C.3 and C.5): ``HybridConfig`` and
its A2C recipe (``ppo.a2c_config``) for the high-level policy ``networks.household.HybridPolicy``.
"""

from __future__ import annotations

import dataclasses

from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household.agents import planner as P
from jaxsoc.envs.household.options import OPTION_ENDS
from jaxsoc.learners import ppo
from jaxsoc.learners.networks.household import HYBRID_NETWORK, HYBRID_PRESETS


@dataclasses.dataclass(frozen=True)
class HybridConfig:
    """A Hybrid training run (``train``).

    Attributes:
        preset: the network's preset (``"paper"`` d=128, ``"tiny"`` d=16).
        num_envs: worlds stepped in parallel (the A2C batch).
        num_steps: frames per world per update (also the BPTT length).
        stage1_frames: frames with teleporting walks (stage 1); 0 skips the stage.
        stage2_frames: frames with 1 m walks (stage 2); 0 skips the stage. A frame is one option (one choice of
            the high level, up to ``OPTION_STEPS`` primitive steps).
        lr, gamma, entropy_coef, value_coef, max_grad_norm: A2C (RMSprop) settings; ``gamma`` discounts each
            primitive step (an option of ``tau`` steps is discounted by ``gamma ** tau``).
        bc_updates: gradient steps of the warm start before A2C (``warm_start``: behaviour cloning of HP_TG's
            choices, ``expert_choice``); 0 is pure A2C.
        bc_epochs: warm-start gradient steps on each batch of ``num_envs x num_steps`` expert frames collected.
        bc_lr: the warm start's RMSprop learning rate.
        alice_simulations: Alice's tree-search simulations.
        max_steps: episode length limit (250).
        split, task_seed: the task set trained on (``tasks.cached_split``).
        seed: the run's seed (initialisation, worlds, actions).
        chunk_updates: updates per compiled chunk (progress, metrics and checkpoints between chunks).
        checkpoint_every: updates between checkpoints (rounded up to chunks; always at the end).
        option_end: how the training environment's options end (``options.OPTION_ENDS``): ``"observed"`` on the
            instances Bob has seen, or the privileged ``"true"`` counts (``hybrid_run.config_of`` reads a run
            written before this field existed as ``"true"``, the rule it was trained with).
    """

    preset: str = "paper"
    num_envs: int = 16
    num_steps: int = 20
    stage1_frames: int = 1_000_000
    stage2_frames: int = 1_000_000
    lr: float = 1e-4
    gamma: float = 0.95
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    bc_updates: int = 100
    bc_epochs: int = 4
    bc_lr: float = 1e-3
    alice_simulations: int = P.NUM_SIMULATIONS
    max_steps: int = 250
    split: str = "train"
    task_seed: int = 0
    seed: int = 0
    chunk_updates: int = 10
    checkpoint_every: int = 50
    option_end: str = "observed"

    def __post_init__(self) -> None:
        if self.preset not in HYBRID_PRESETS:
            raise ValueError(f"unknown Hybrid preset {self.preset!r}; choose from {sorted(HYBRID_PRESETS)}")
        if self.split not in T.SPLITS:
            raise ValueError(f"unknown task split {self.split!r}; choose from {sorted(T.SPLITS)}")
        positive = ("num_envs", "num_steps", "alice_simulations", "max_steps", "chunk_updates", "checkpoint_every")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"HybridConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("stage1_frames", "stage2_frames"):
            frames = getattr(self, name)
            if frames < 0 or 0 < frames < self.frames_per_update:
                raise ValueError(
                    f"HybridConfig.{name} ({frames}) must be 0 (no such stage) or at least one update "
                    f"({self.num_envs} worlds x {self.num_steps} steps = {self.frames_per_update} frames)"
                )
        if self.stage1_frames + self.stage2_frames == 0:
            raise ValueError("HybridConfig: stage1_frames and stage2_frames are both 0; nothing to train")
        if self.bc_updates < 0:
            raise ValueError(f"HybridConfig.bc_updates must be 0 (no warm start) or positive, got {self.bc_updates}")
        if self.bc_epochs < 1:
            raise ValueError(f"HybridConfig.bc_epochs must be positive, got {self.bc_epochs}")
        for name in ("lr", "max_grad_norm", "bc_lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"HybridConfig.{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"HybridConfig.gamma must be in [0, 1], got {self.gamma}")
        if self.option_end not in OPTION_ENDS:
            raise ValueError(f"unknown HybridConfig.option_end {self.option_end!r}; choose from {list(OPTION_ENDS)}")

    @property
    def frames_per_update(self) -> int:
        """Returns ``num_envs * num_steps``."""
        return self.num_envs * self.num_steps

    @property
    def stage_updates(self) -> tuple[int, int]:
        """Returns the updates of stage 1 and of stage 2."""
        return self.stage1_frames // self.frames_per_update, self.stage2_frames // self.frames_per_update

    def a2c(self) -> ppo.PPOConfig:
        """Returns the A2C recipe (``ppo.a2c_config``) of one update of this run."""
        return ppo.a2c_config(
            env_id="household-hybrid",
            network=HYBRID_NETWORK,
            preset=self.preset,
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            recurrence=self.num_steps,
            minibatch_frames=self.frames_per_update,
            total_frames=self.frames_per_update,
            lr=self.lr,
            gamma=self.gamma,
            entropy_coef=self.entropy_coef,
            value_coef=self.value_coef,
            max_grad_norm=self.max_grad_norm,
        )
