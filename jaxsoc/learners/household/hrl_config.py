"""The configuration of an HRL low-level training run (Watch-And-Help §5.2, appendix C.3-C.4): ``HRLConfig``,
its A2C recipe (``ppo.a2c_config``) and the subgoal environment it trains on (``subgoal_env.SubgoalParams``).
"""

from __future__ import annotations

import dataclasses

from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household.subgoal_env import REWARDS, SubgoalParams, check_subgoal_params
from jaxsoc.envs.household.subgoal_teachers import TEACHERS
from jaxsoc.learners import ppo
from jaxsoc.learners.networks.household import LOW_PRESETS

#: config fields that do not change what the updates compute (free to differ on resume)
SCHEDULE_FIELDS = ("chunk_updates", "checkpoint_every", "eval_episodes", "eval_steps", "heldout")


@dataclasses.dataclass(frozen=True)
class HRLConfig:
    """A low-level training run: A2C (``ppo.a2c_config``: RMSprop, lr 1e-3, one gradient step per update of
    ``num_envs x num_steps`` frames, BPTT over the update) in two phases, ``grab_frames`` of "grab" then
    ``put_frames`` of "put" from the grab phase's parameters.

    Attributes:
        preset: the network's preset (``networks.household.LOW_PRESETS``: "paper" d=128, "tiny" d=16).
        seed: model initialisation, worlds, actions.
        split, task_seed: the task set (the 1,011 "train" tasks by default).
        tasks: a task file (``tasks.save``, ``jaxsoc household tasks``) to train on instead of ``split``.
        num_envs: worlds stepped in parallel (the paper's batch of 32).
        num_steps: frames per world per update.
        grab_frames, put_frames: frames of each phase (about the paper's 100,000 and 26,000 episodes, at ~50
            and ~100 steps an episode).
        max_steps: episode length limit while training: 100, shorter than an evaluation episode's 250 (a
            subgoal takes tens of steps; longer episodes mostly add close-bonus steps).
        teleport: walks arrive at once (the evaluation's default, ``HouseholdParams``, walks 1 m a step).
        lr, entropy_coef, gamma: A2C settings.
        reward: ``"shaped"`` (potential-based shaping on walking distance, ``potential``: a held object earns
            nothing by being held) or ``"paper"`` (+0.05 on every step close to an object of the class, held
            ones included, or to the destination).
        mask_invalid: the policy may only take ``world.valid_actions`` (else only invisible targets are
            masked, as in the paper).
        imitation_frames: frames of the warm start before A2C (0: none, the paper's recipe): behaviour cloning
            of the regression planner (``expert_action``) on full subgoal episodes, DAgger-style (the frames'
            actions come from the expert with probability ``beta``, falling linearly from 1 to 0 over the
            first three quarters, else from the learner; every frame is labelled with the expert's action).
        teacher: the warm start's labels (``TEACHERS``): ``"planner"`` (``expert_action``, which knows where
            unseen objects lie) or ``"belief"`` (``belief_action``, limited to what Bob knows; needs a preset
            whose network has ``belief``, e.g. ``"tiny-belief"``).
        imitation_lr, imitation_epochs: Adam's learning rate and its steps on each batch of the warm start.
        chunk_updates: updates per compiled call (progress, metrics and checkpoints between chunks).
        checkpoint_every: updates between checkpoints (rounded up to chunks; always at a phase's end).
        eval_episodes: episodes of ``subgoal_success`` at the end, in the training bank and in ``heldout``'s
            (0 skips it), each of at most ``eval_steps`` steps.
        heldout: the task split of the held-out apartments for the final evaluation ("": none).
    """

    preset: str = "paper"
    seed: int = 0
    split: str = "train"
    task_seed: int = 0
    tasks: str | None = None
    num_envs: int = 32
    num_steps: int = 20
    grab_frames: int = 5_000_000
    put_frames: int = 2_600_000
    max_steps: int = 100
    teleport: bool = False
    lr: float = 1e-3
    entropy_coef: float = 0.01
    gamma: float = 0.99
    reward: str = "shaped"
    mask_invalid: bool = True
    imitation_frames: int = 0
    teacher: str = "planner"
    imitation_lr: float = 3e-3
    imitation_epochs: int = 4
    chunk_updates: int = 10
    checkpoint_every: int = 100
    eval_episodes: int = 256
    eval_steps: int = 50
    heldout: str = "test-1"

    def __post_init__(self) -> None:
        if self.preset not in LOW_PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; choose from {sorted(LOW_PRESETS)}")
        for split in (self.split, self.heldout or self.split):
            if split not in T.SPLITS:
                raise ValueError(f"unknown task split {split!r}; choose from {sorted(T.SPLITS)}")
        if self.reward not in REWARDS:
            raise ValueError(f"unknown reward {self.reward!r}; choose from {list(REWARDS)}")
        if self.teacher not in TEACHERS:
            raise ValueError(f"unknown teacher {self.teacher!r}; choose from {sorted(TEACHERS)}")
        if self.teacher == "belief" and not LOW_PRESETS[self.preset].belief:
            belief = sorted(name for name, c in LOW_PRESETS.items() if c.belief)
            raise ValueError(
                f"teacher 'belief' walks to the destination out of sight, which preset {self.preset!r}'s network "
                f"cannot choose; use one of {belief}"
            )
        if self.imitation_frames < 0 or not self.imitation_lr > 0:
            raise ValueError("HRLConfig needs imitation_frames >= 0 and imitation_lr > 0")
        names = (
            "num_envs",
            "num_steps",
            "max_steps",
            "chunk_updates",
            "checkpoint_every",
            "eval_steps",
            "imitation_epochs",
        )
        for name in names:
            if getattr(self, name) < 1:
                raise ValueError(f"HRLConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("grab_frames", "put_frames"):
            if getattr(self, name) < self.frames_per_update:
                raise ValueError(
                    f"HRLConfig.{name} ({getattr(self, name)}) is less than one update "
                    f"({self.num_envs} x {self.num_steps} = {self.frames_per_update} frames)"
                )
        if not self.lr > 0 or self.entropy_coef < 0 or not 0 <= self.gamma <= 1 or self.eval_episodes < 0:
            raise ValueError("HRLConfig needs lr > 0, entropy_coef >= 0, gamma in [0, 1] and eval_episodes >= 0")

    @property
    def frames_per_update(self) -> int:
        """Returns ``num_envs * num_steps``."""
        return self.num_envs * self.num_steps

    def updates(self, phase: str) -> int:
        """Returns the updates of ``phase``."""
        return (self.grab_frames if phase == "grab" else self.put_frames) // self.frames_per_update

    def a2c(self) -> ppo.PPOConfig:
        """Returns the ``PPOConfig`` of one update (``total_frames``: one update; the phases count their own)."""
        frames = self.frames_per_update
        return ppo.a2c_config(
            env_id="WatchAndHelp-Subgoal",
            network="household-low",
            preset=self.preset,
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            recurrence=self.num_steps,
            minibatch_frames=frames,
            total_frames=frames,
            lr=self.lr,
            entropy_coef=self.entropy_coef,
            gamma=self.gamma,
            pool_resets=False,  # a household reset is one gather: no pools needed
        )

    def params(self, phase: str, split: str | None = None) -> SubgoalParams:
        """Returns the checked environment of ``phase`` on the run's tasks (or on task set ``split``)."""
        if split is not None:
            bank = T.cached_split(split, self.task_seed).states
        else:
            bank = T.load(self.tasks).states if self.tasks else T.cached_split(self.split, self.task_seed).states
        params = SubgoalParams(
            E.HouseholdParams(tasks=bank),
            self.max_steps,
            self.gamma,
            phase,
            self.teleport,
            self.reward,
            self.mask_invalid,
        )
        check_subgoal_params(params)
        return params
