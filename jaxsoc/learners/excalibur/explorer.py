"""EXCALIBUR's explorer trained for what its exploration reveals to the answerer: PPO (``rl_run.train_rl``) on the
explorer's view ``envs.excalibur.explorer_env.MemoryExplorerEnv`` (``train``, ``ppo_config``), ``load_explorer`` to
read a run back (or ``model:excalibur-memory-explorer``, the pretrained one), and ``MemoryPolicyAgent`` to play a
trained explorer in ``play.evaluate`` (the same observation, built from a state).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc import models
from jaxsoc.envs.excalibur import memory as MEM
from jaxsoc.envs.excalibur import observation as O
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur.explorer_env import (
    MemoryExplorerEnv,
    answer_action,
    answerer_read,
    answering,
    make_params,
    observe,
)


class MemoryPolicyAgent(struct.PyTreeNode):
    """A trained explorer (a network reading ``observe``'s memory) as an agent of ``play.evaluate``: ``policy``
    (static) and ``policy_variables``, the answerer ``answerer`` (static) and ``answerer_variables``, ``view_size``
    and ``greedy`` (static). Its memory is ``{"net", "last", "objects"}``; each step writes the object memory, builds
    the explorer's observation as ``MemoryExplorerEnv`` does, and acts; in phases II and IV it gives the
    answerer's answer; ``allow_stop`` (static) as the run was trained (``ExplorerParams``)."""

    policy: Any = struct.field(pytree_node=False)
    policy_variables: Any
    answerer: Any = struct.field(pytree_node=False)
    answerer_variables: Any
    view_size: int = struct.field(pytree_node=False, default=7)
    greedy: bool = struct.field(pytree_node=False, default=True)
    allow_stop: bool = struct.field(pytree_node=False, default=False)

    def init(self, key: jax.Array, state: S.State) -> dict:
        """Returns ``{"net": policy.initial_memory(1), "last": NUM_ACTIONS, "objects": memory.empty(house)}``."""
        return {
            "net": self.policy.initial_memory(1),
            "last": jnp.int32(S.NUM_ACTIONS),
            "objects": MEM.empty(state.house),
        }

    def act(self, key: jax.Array, memory: dict, state: S.State) -> tuple[jax.Array, dict]:
        """Returns ``(action int32, memory)`` (class docstring)."""
        objects = MEM.write(memory["objects"], state)
        _, answers = answerer_read(self.answerer, self.answerer_variables, objects, state.house)
        obs = observe(O.observe(state, self.view_size, memory["last"]), state, objects, answers, self.allow_stop)
        obs = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], obs)
        context = self.policy.apply(self.policy_variables, obs, method="encode_context")
        log_probs, _, net = self.policy.apply(
            self.policy_variables, obs, context, memory["net"], train=False, method="step"
        )
        log_probs = log_probs[0]
        action = jnp.argmax(log_probs) if self.greedy else jax.random.categorical(key, log_probs)
        action = jnp.where(answering(state), answer_action(state, answers), action).astype(jnp.int32)
        return action, {"net": net, "last": action, "objects": objects}


# -- training and loading -----------------------------------------------------------------------------------------

EXPLORER_FILE = "explorer.json"
#: the family and kind of a memory-explorer model (``jaxsoc.models``; declared in ``learners.excalibur.family``)
MODEL_FAMILY, MODEL_KIND = "excalibur", "memory-explorer"


def ppo_config(**overrides: Any):
    """Returns the explorer's ``PPOConfig``: the ``excalibur`` network's ``tiny-memory`` preset, 64 worlds x 80
    steps per update, recurrence 20, lambda 0.95, advantages normalised (the setup of the first QA runs, with the
    memory), with lr 1e-3 and no discount (gamma 1: the episode is finite, and with gamma 0.999 the answers' reward
    comes sooner after a ``stop``, which paid for stopping at once in a first run)."""
    from jaxsoc.learners.ppo import PPOConfig

    base = dict(
        env_id="EXCALIBUR-v0",
        network="excalibur",
        preset="tiny-memory",
        num_envs=64,
        num_steps=80,
        recurrence=20,
        minibatch_frames=1280,
        total_frames=64 * 80 * 300,
        lr=1e-3,
        gamma=1.0,
        gae_lambda=0.95,
        normalize_advantages=True,
    )
    return PPOConfig(**{**base, **overrides})


def trainer(
    config,
    answerer: tuple[Any, Any],
    explore_budget: int,
    reenter_budget: int,
    gain_reward: float = 1.0,
    allow_stop: bool = False,
):
    """Returns a ``ppo.Trainer`` of ``config`` on ``MemoryExplorerEnv`` with ``answerer = (model, variables)``,
    the budgets, the gain's weight and ``allow_stop``, over the train bank."""
    from jaxsoc.learners.ppo import Trainer

    model, variables = answerer
    params = make_params(
        variables, gain_reward=gain_reward, allow_stop=allow_stop, explore_budget=explore_budget,
        reenter_budget=reenter_budget,
    )  # fmt: skip
    return Trainer(config, env=MemoryExplorerEnv(model, params), env_params=params)


def train(
    out: str | Path,
    answerer_dir: str | Path,
    *,
    explore_budget: int = 200,
    reenter_budget: int = 50,
    gain_reward: float = 1.0,
    allow_stop: bool = False,
    seed: int = 0,
    eval_episodes: int = 256,
    command: str = "",
    **overrides: Any,
) -> dict:
    """Trains an explorer by PPO (``ppo_config(**overrides)``) into ``out`` and returns the run's summary;
    ``explorer.json`` records the answerer, the budgets, the gain weight and ``command``."""
    from jaxsoc.learners.excalibur import answerer as ANS
    from jaxsoc.learners.rl_run import train_rl

    config = ppo_config(env_args=f"explore_budget={explore_budget},reenter_budget={reenter_budget}", **overrides)
    model, variables, meta = ANS.load(answerer_dir)
    tr = trainer(config, (model, variables), explore_budget, reenter_budget, gain_reward, allow_stop)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "answerer": str(answerer_dir),
        "answerer_preset": meta["preset"],
        "explore_budget": explore_budget,
        "reenter_budget": reenter_budget,
        "gain_reward": gain_reward,
        "allow_stop": allow_stop,
        "seed": seed,
        "config": dataclasses.asdict(config),
        "command": command,
    }
    (out / EXPLORER_FILE).write_text(json.dumps(record, indent=1))
    return train_rl(config, out, seed=seed, eval_episodes=eval_episodes, trainer=tr, progress=False)


def is_explorer_run(run: str | Path) -> bool:
    """Returns whether ``run`` is a run of ``train`` (it holds ``explorer.json``) or ``model:NAME`` of a
    memory-explorer model."""
    if models.ref_name(run) is not None:
        card = models.info(run)
        return (card.family, card.kind) == (MODEL_FAMILY, MODEL_KIND)
    return (Path(run) / EXPLORER_FILE).exists()


def load_explorer(run: str | Path) -> tuple[Any, Any, dict]:
    """Returns ``(model, variables, record)`` of the newest checkpoint of the explorer run ``run`` or of
    ``model:NAME`` (``record``: its ``explorer.json``). Raises ``ValueError`` for a run that is not an explorer run
    or whose checkpoint holds another network, or a model of another kind."""
    from jaxsoc.learners.policy import load_network

    if models.ref_name(run) is not None:
        return models.load(run, MODEL_KIND, MODEL_FAMILY)
    run = Path(run)
    if not is_explorer_run(run):
        raise ValueError(f"{run} is not an explorer run (no {EXPLORER_FILE})")
    model, variables, meta = load_network(run)
    if not getattr(model.config, "object_memory", False):
        network = meta.get("network")
        raise ValueError(f"{run / 'checkpoints'}: the policy does not read the object memory (network {network})")
    record = json.loads((run / EXPLORER_FILE).read_text())
    return model, variables, record
