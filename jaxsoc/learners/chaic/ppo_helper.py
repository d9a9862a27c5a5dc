"""A policy trained with ``jaxsoc train ppo --env CHAIC-<Task>-Helper-v0`` (or ``CHAIC-All-Helper-v0``) as a CHAIC
helper agent, so ``play`` and ``jaxsoc chaic eval --helper ppo=RUN`` run it beside the rule-based helpers.

``NetworkHelper`` implements ``agents.HelperPolicy`` for any registered network (``networks.registry``): its helper
state is the network's memory for one world plus a PRNG key, and each act (the helper is ready: ``play`` calls it
only then) samples the action from the network's log-probabilities (``greedy``: the argmax). Under the helper view
(``ChaicHelperEnv``) the policy also acts at the steps where it was still busy and its action was ignored; run as an
agent it acts only when ready, so its memory sees fewer steps than in training (the same observations otherwise).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import state as S

#: the ``jaxsoc.models`` kind of a CHAIC helper over options (declared in ``learners.chaic.family``)
OPTIONS_KIND = "options-policy"


@dataclasses.dataclass(frozen=True)
class NetworkHelper:
    """``agents.HelperPolicy`` over a policy network (``model``: built as the registry builds it)."""

    model: Any
    greedy: bool = False

    def helper_init(self, key: jax.Array, state: S.State) -> dict:
        """Returns ``{"memory": the network's memory for one world, "key": key}``."""
        return {"memory": self.model.initial_memory(1), "key": key}

    def helper_act(self, params: Any, helper_state: dict, state: S.State, obs: dict) -> tuple[jax.Array, dict]:
        """Returns ``(action int32, helper_state)``: one step of the network on ``obs`` (one world's observation)."""
        batched = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], obs)
        log_probs, _, memory = self.model.apply(params, batched, helper_state["memory"], train=False)
        key, sample = jax.random.split(helper_state["key"])
        action = jnp.argmax(log_probs[0]) if self.greedy else jax.random.categorical(sample, log_probs[0])
        return action.astype(jnp.int32), {"memory": memory, "key": key}


def load_ppo_helper(run_dir: str | Path, greedy: bool = False) -> Any:
    """Returns the newest checkpoint of ``run_dir`` (``jaxsoc train ppo`` on a CHAIC helper view), or ``model:NAME``
    (a helper over options shipped in ``jaxsoc.models``, e.g. ``model:chaic-options-helper``), as an agent:
    ``agents.PolicyHelper`` seeing what the run's env showed the helper (goal, ray-cast image), or, for a run on
    the options view (``CHAIC-<Task>-Options-v0``, ``learners.chaic.options_ppo``), ``options.OptionPolicyHelper``
    choosing each option with the network (and stepping the view's partner model, ``env_args`` ``partner_run``).

    Raises:
        FileNotFoundError: no checkpoint.
        ValueError: a run that is not a policy trained on a CHAIC helper view; a model of another kind.
        KeyError: an unknown model name.
    """
    from jaxsoc import models
    from jaxsoc.envs.chaic.env import ChaicHelperEnv
    from jaxsoc.envs.chaic.options import ChaicOptionsEnv, OptionPolicyHelper
    from jaxsoc.learners.policy import load_policy

    if models.ref_name(run_dir) is not None:  # a CHAIC helper over options, or ValueError naming what it is
        models.open_ref(run_dir, OPTIONS_KIND, "chaic", arrays=False)
    env, env_params, model, variables = load_policy(run_dir)
    if isinstance(env, ChaicOptionsEnv):
        network = NetworkHelper(model, greedy)

        def choose(params, memory, obs, key):
            option, state = network.helper_act(params, {"memory": memory, "key": key}, None, obs)
            return option, state["memory"]

        light = env_params.replace(tasks=None)  # the observation needs no task bank
        return OptionPolicyHelper(choose, variables, model.initial_memory(1), light, env.partner, env.rooms)
    if not isinstance(env, ChaicHelperEnv):
        raise ValueError(f"{run_dir}: trained on {env.name}, not a CHAIC helper view (CHAIC-<Task>-Helper-v0)")
    helper = NetworkHelper(model, greedy)
    return A.PolicyHelper(helper, variables, sees_goal=env_params.sees_goal[S.HELPER], rays=env_params.rays)
