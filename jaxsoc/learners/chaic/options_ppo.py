"""PPO over CHAIC's helper options (``envs.chaic.options``, ``CHAIC-All-Options-v0``) after a behaviour-cloning warm
start on the RHP rules' options, the household Hybrid's pattern (``learners.expert_cloning``'s ``bc_loss`` and
``expert_rollout``, which the Hybrid's warm start uses too).

``train(out, ...)`` clones the expert's choices for ``bc_batches`` fresh batches of ``num_envs x num_steps`` options
(``bc_epochs`` Adam steps each; ``teacher``: ``"rhp"`` the RHP rules, ``OptionsState.expert``, or ``"goal"`` the
same rules told the true goal, ``options.expert_option(knows_goal=True)``, a privileged teacher whose choices a
policy can only match by reading the partner; ``follow="policy"``: DAgger, the worlds follow the policy's own sampled
options and the teacher labels them), writes ``bc.csv`` and ``warm_start.json``, then runs an ordinary PPO run
(``rl_run.train_rl``, the ``chaic`` network, advantages normalised) from the cloned parameters into ``out``, so
``load_ppo_helper(out)`` and ``jaxsoc chaic eval --helper ppo=OUT`` read it like any CHAIC PPO run. The worlds
train on the ``train`` task bank; the final evaluation (``eval_episodes``) plays the ``validation`` bank (a floor
plan training never sees); the test split is never read here.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxsoc.envs.chaic import env as E
from jaxsoc.envs.chaic.options import expert_option
from jaxsoc.learners.expert_cloning import bc_loss, expert_rollout, policy_rollout
from jaxsoc.learners.ppo import PPOConfig, trainer_for
from jaxsoc.learners.rl_run import train_rl


def config(env_id: str = "CHAIC-All-Options-v0", **overrides: Any) -> PPOConfig:
    """Returns the options PPO config: the ``chaic`` network (small), 32 worlds x 20 options per update,
    recurrence 10, lr 3e-4, gamma 0.99 and lambda 0.95 per option, rewards x 10, advantages normalised."""
    base = dict(
        env_id=env_id,
        network="chaic",
        preset="small",
        num_envs=32,
        num_steps=20,
        recurrence=10,
        minibatch_frames=320,
        total_frames=32 * 20 * 1000,
        lr=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        reward_scale=10.0,
        entropy_coef=0.01,
        normalize_advantages=True,
    )
    return PPOConfig(**{**base, **overrides})


TEACHERS = ("rhp", "goal")


def _goal_teacher(states, rooms: bool = False):
    return jax.vmap(lambda s: expert_option(s.helper.agent, s.world, knows_goal=True, rooms=rooms))(states)


FOLLOW = ("expert", "policy")


class Cloner:
    """The warm start's batches for ``cfg`` (``warm_start``'s arguments): ``start(key)`` returns ``(params,
    opt_state, carry)``, the policy's initial parameters (seed ``key``), its optimizer state and fresh worlds;
    ``batch(params, opt_state, carry, key)`` (one jitted program) returns them after one batch of ``cfg.num_envs x
    cfg.num_steps`` options and ``epochs`` Adam steps, with the batch's ``metrics`` (``bc_loss``'s, of the batch
    before its steps; with ``follow="policy"`` also ``reward``, the mean reward per option of the policy's own
    choices, made with the ``params`` given). Raises ``ValueError`` for an unknown teacher or ``follow``."""

    def __init__(self, cfg: PPOConfig, epochs: int = 4, lr: float = 1e-3, teacher: str = "rhp", follow: str = "expert"):
        if teacher not in TEACHERS:
            raise ValueError(f"unknown CHAIC options teacher {teacher!r}; choose from {list(TEACHERS)}")
        if follow not in FOLLOW:
            raise ValueError(f"follow must be one of {list(FOLLOW)}, got {follow!r}")
        self.cfg, self.follow = cfg, follow
        self.tr = tr = trainer_for(cfg)
        self.label = functools.partial(_goal_teacher, rooms=tr.env.rooms) if teacher == "goal" else None
        self.tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr))
        self.grad = jax.value_and_grad(functools.partial(bc_loss, tr.model), has_aux=True)
        self.epochs = epochs
        self.batch = jax.jit(self._batch)
        self._reset = jax.jit(jax.vmap(tr.env.reset_env, in_axes=(0, None)))

    def start(self, key: jax.Array):
        params = self.tr.init(key).params
        k_reset, _ = jax.random.split(key)
        obs, states = self._reset(jax.random.split(k_reset, self.cfg.num_envs), self.tr.env_params)
        carry = (obs, states, jnp.ones(self.cfg.num_envs, bool), self.tr.model.initial_memory(self.cfg.num_envs))
        return params, self.tx.init(params), carry

    def _rollout(self, params, carry, key):
        tr, steps = self.tr, self.cfg.num_steps
        if self.follow == "policy":
            return policy_rollout(tr.env, tr.env_params, tr.model, params, key, carry, steps, self.label)
        worlds, (seen, mask, expert) = expert_rollout(tr.env, tr.env_params, key, carry[:3], steps, self.label)
        return (*worlds, carry[3]), (seen, mask, expert, None)

    def _batch(self, params, opt_state, carry, key):
        carry, (obs, mask, expert, reward) = self._rollout(params, carry, key)

        def epoch(state, _):
            params, opt_state = state
            (_, metrics), grads = self.grad(params, obs, mask, expert)
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), metrics

        (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), None, length=self.epochs)
        metrics = jax.tree_util.tree_map(lambda v: v[0], metrics)
        if reward is not None:
            metrics["reward"] = reward.mean()
        return params, opt_state, carry, metrics


def warm_start(
    cfg: PPOConfig,
    key: jax.Array,
    batches: int,
    epochs: int = 4,
    lr: float = 1e-3,
    log=None,
    teacher: str = "rhp",
    follow: str = "expert",
):
    """Returns ``(params, rows)``: the policy's initial parameters (seed ``key``) after ``batches`` batches of
    ``cfg.num_envs x cfg.num_steps`` options labelled by ``teacher`` (``TEACHERS``, module docstring) with
    ``epochs`` Adam steps each (``Cloner``). ``follow``: whose choices the worlds follow, ``"expert"`` (behaviour
    cloning, ``expert_rollout``) or ``"policy"`` (DAgger, ``policy_rollout``: the policy's sampled options, the
    teacher's labels). ``rows``: one dict per batch (``batch``, ``options``, ``seconds``, and ``Cloner.batch``'s
    metrics). Raises ``ValueError`` for an unknown teacher or ``follow``."""
    cloner = Cloner(cfg, epochs, lr, teacher, follow)
    params, opt_state, carry = cloner.start(key)
    _, key = jax.random.split(key)
    rows, began = [], time.perf_counter()
    for b in range(batches):
        params, opt_state, carry, metrics = cloner.batch(params, opt_state, carry, jax.random.fold_in(key, b))
        row = {"batch": b + 1, "options": (b + 1) * cfg.frames_per_update, "seconds": time.perf_counter() - began}
        row.update({k: float(v) for k, v in jax.device_get(metrics).items()})
        rows.append(row)
        if log:
            log(row)
    return params, rows


def validation_params(trainer) -> Any:
    """Returns the options view's params (``trainer.env_params``) with the validation bank of its task(s) in place
    of the training one."""
    return trainer.env_params.replace(tasks=E.params_for(trainer.env.task, "validation").tasks)


def train(
    out: str | Path,
    cfg: PPOConfig,
    bc_batches: int = 40,
    seed: int = 0,
    teacher: str = "rhp",
    follow: str = "expert",
    **run_kw: Any,
) -> dict[str, Any]:
    """Warm start (``bc_batches``; 0: none) on ``teacher``'s options, following ``follow``'s choices (``warm_start``),
    then PPO into ``out`` (module docstring); returns ``train_rl``'s summary with ``bc`` (the last batch's row).
    ``run_kw`` go to ``train_rl``; its final evaluation (``eval_episodes``) plays the validation bank."""
    if teacher not in TEACHERS:
        raise ValueError(f"unknown CHAIC options teacher {teacher!r}; choose from {list(TEACHERS)}")
    if follow not in FOLLOW:
        raise ValueError(f"follow must be one of {list(FOLLOW)}, got {follow!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    params, rows = None, []
    if bc_batches:
        csv = out / "bc.csv"

        def log(row):
            if row["batch"] == 1:
                csv.write_text(",".join(row) + "\n")
            with csv.open("a") as f:
                f.write(",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row.values()) + "\n")

        params, rows = warm_start(
            cfg, jax.random.fold_in(jax.random.key(seed), 1), bc_batches, log=log, teacher=teacher, follow=follow
        )
        params = jax.device_get(params)
        meta = {"teacher": teacher, "follow": follow, "batches": bc_batches, **rows[-1]}
        (out / "warm_start.json").write_text(json.dumps(meta))
    trainer = trainer_for(cfg)
    summary = train_rl(
        cfg, out, seed=seed, init_params=params, trainer=trainer, eval_params=validation_params(trainer), **run_kw
    )
    if rows:
        summary["bc"] = rows[-1]
    return summary
