"""CHAIC's PPO helper: the set-encoder network (masking, order invariance), the helper view's reward shaping and
the all-task bank, ``env_args``, and a toy ``train_rl`` run on a cheap helper view (the constrained agent waits, so
the program is small): resume equals the uninterrupted run, and the run plays as a helper in
``jaxsoc chaic eval --helper ppo=RUN`` (``--append`` keeping the earlier rows)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.cli import main as jaxsoc_main
from jaxsoc.core.registry import register, unregister
from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import env as E
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.learners import ppo
from jaxsoc.learners.chaic import evaluation as C
from jaxsoc.learners.chaic.ppo_helper import load_ppo_helper
from jaxsoc.learners.checkpoint import restore_raw, to_storable
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.chaic import MASKED_LOGIT, NUM_GLOBAL_ACTIONS
from jaxsoc.learners.rl_run import CHECKPOINTS, train_rl

#: a helper view whose constrained agent always waits: the same observations and actions, a much smaller program
TOY_ENV = "CHAIC-TestWaiting-Helper-v0"
CHUNK = 1
TOY = ppo.PPOConfig(
    env_id=TOY_ENV,
    env_args="shaping=1.0,events_per_step=2",
    network="chaic",
    preset="tiny",
    num_envs=4,
    num_steps=4,
    recurrence=2,
    minibatch_frames=8,
    update_epochs=1,
    lr=1e-3,
    total_frames=4 * 4 * 2 * CHUNK,
)
HALF = dataclasses.replace(TOY, total_frames=TOY.total_frames // 2)


@pytest.fixture(autouse=True, scope="module")
def _toy_env():
    """Registers ``TOY_ENV`` while this module runs (``jaxsoc list`` in other modules must not see it)."""
    register(TOY_ENV, lambda: E.ChaicHelperEnv("normal", main=A.NoHelper(inactive=False)))
    yield
    unregister(TOY_ENV)


def quiet_run(config, run_dir, **kwargs):
    return train_rl(config, run_dir, chunk_updates=CHUNK, checkpoint_every=1, eval_episodes=0, progress=False, **kwargs)


@pytest.fixture(scope="module")
def toy():
    """``(env, params, model, variables, obs)``: the toy view, a tiny network's variables, 16 reset worlds."""
    env, params = ppo.make_env(TOY)
    model = registry.build("chaic", TOY.model_config(S.NUM_ACTIONS), env.observation_space(params))
    obs, _ = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))(jax.random.split(jax.random.key(0), 16), params)
    variables = jax.jit(model.init)(jax.random.key(1), obs, model.initial_memory(16))
    return env, params, model, variables, obs


@pytest.fixture(scope="module")
def apply(toy):
    _, _, model, variables, _ = toy
    return jax.jit(lambda obs: model.apply(variables, obs, model.initial_memory(obs["pose"].shape[0])))


def test_invalid_actions_get_no_probability_and_are_never_sampled(toy, apply):
    *_, obs = toy
    log_probs, value, _ = apply(obs)
    valid = np.asarray(obs["action_mask"])
    assert valid.any(-1).all() and not valid.all(-1).any()  # something is masked in every world
    lp = np.asarray(log_probs)
    assert (lp[~valid] < MASKED_LOGIT / 2).all() and np.isfinite(lp).all() and np.isfinite(np.asarray(value)).all()
    np.testing.assert_allclose(np.exp(lp).sum(-1), 1.0, rtol=1e-5)
    actions = np.asarray(jax.random.categorical(jax.random.key(2), log_probs, shape=(2000, 16)))
    assert valid[np.arange(16)[None, :], actions].all()
    entropy = -(np.exp(lp) * lp).sum(-1)
    assert np.isfinite(entropy).all() and (entropy <= np.log(valid.sum(-1)) + 1e-4).all()


def test_no_valid_action_leaves_the_row_unmasked(toy, apply):
    *_, obs = toy
    none_valid = dict(obs, action_mask=jnp.zeros_like(obs["action_mask"]))
    lp = np.asarray(apply(none_valid)[0])
    assert (lp > MASKED_LOGIT / 2).all()


def test_the_encoder_does_not_depend_on_the_order_of_the_objects(toy, apply):
    *_, obs = toy
    objects = obs["objects"]
    assert np.asarray(objects["visible"]).any(-1).sum() >= 4, "some worlds should see objects"
    perm = np.random.default_rng(0).permutation(S.MAX_OBJECTS)
    permuted_mask = np.asarray(obs["action_mask"]).copy()
    for base in (S.PICK, S.REMOVE):
        permuted_mask[:, base : base + S.MAX_OBJECTS] = permuted_mask[:, base + perm]
    permuted = dict(obs, objects={k: v[:, perm] for k, v in objects.items()}, action_mask=jnp.asarray(permuted_mask))
    (lp, value, memory), (lp2, value2, memory2) = apply(obs), apply(permuted)
    np.testing.assert_allclose(value2, value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(memory2["h"], memory["h"], rtol=1e-5, atol=1e-5)
    lp, lp2 = np.asarray(lp), np.asarray(lp2)
    np.testing.assert_allclose(lp2[:, :NUM_GLOBAL_ACTIONS], lp[:, :NUM_GLOBAL_ACTIONS], rtol=1e-5, atol=1e-5)
    for base in (S.PICK, S.REMOVE):  # the pointers move with their objects
        np.testing.assert_allclose(lp2[:, base : base + S.MAX_OBJECTS], lp[:, base + perm], rtol=1e-5, atol=1e-4)


def test_the_network_refuses_other_observations():
    config = registry.network_config("chaic", "tiny", S.NUM_ACTIONS)
    _, babyai_params = jaxsoc.make("BabyAI-GoToRedBallGrey-v0")
    babyai_space = jaxsoc.make("BabyAI-GoToRedBallGrey-v0")[0].observation_space(babyai_params)
    with pytest.raises(ValueError, match="needs a CHAIC observation"):
        registry.build("chaic", config, babyai_space)
    env, params = jaxsoc.make("CHAIC-Normal-Helper-v0")
    with pytest.raises(ValueError, match=r"rays=16 needs obs\['depth'\].*rays=16"):
        registry.build("chaic", dataclasses.replace(config, rays=16), env.observation_space(params))
    with pytest.raises(ValueError, match="num_actions"):
        registry.network_config("chaic", "tiny", 7)


def test_the_ray_image_option_runs_on_an_env_with_rays():
    env, params = jaxsoc.make(TOY_ENV, rays=16)
    config = registry.network_config("chaic", "tiny", S.NUM_ACTIONS, rays=16)
    model = registry.build("chaic", config, env.observation_space(params))
    obs, _ = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))(jax.random.split(jax.random.key(0), 2), params)
    variables = jax.jit(model.init)(jax.random.key(1), obs, model.initial_memory(2))
    assert "ray_1" in variables["params"]
    log_probs, _, _ = jax.jit(model.apply)(variables, obs, model.initial_memory(2))
    assert log_probs.shape == (2, S.NUM_ACTIONS) and np.isfinite(np.asarray(log_probs)).all()


def test_env_args_are_typed_and_checked():
    assert ppo.env_kwargs("shaping=1.5, rays=8,sees_goal_flag=true,name=x") == {
        "shaping": 1.5,
        "rays": 8,
        "sees_goal_flag": True,
        "name": "x",
    }
    assert ppo.env_kwargs("") == {}
    with pytest.raises(ValueError, match="name=value"):
        ppo.PPOConfig(env_args="shaping")
    with pytest.raises(ValueError, match=r"unknown env arguments \['no_such_field'\]: not fields of its params"):
        ppo.make_env(dataclasses.replace(TOY, env_args="no_such_field=1"))


def test_shaping_adds_the_change_of_the_helper_potential():
    task = jax.tree_util.tree_map(lambda x: x[0], T.cached_split("normal", "test").states)
    goal = np.flatnonzero((np.asarray(task.goal_count)[np.asarray(task.objects.cls)] > 0) & (task.objects.cls > 0))
    target = int(goal[0])
    holding = task.replace(
        agents=task.agents.replace(hands=task.agents.hands.at[S.HELPER, 0].set(target)),
        objects=task.objects.replace(holder=task.objects.holder.at[target].set(S.HELPER)),
    )
    gained = float(E.helper_potential(holding) - E.helper_potential(task))
    far = float(jnp.linalg.norm(task.scene.goal_pos - task.agents.pos[S.HELPER]))
    assert gained > 0.5 / float(task.total) - 0.01 * min(far, 20.0) - 1e-6  # half a target's share, less the walk
    env = E.ChaicHelperEnv("normal", main=A.NoHelper(inactive=False))
    plain = env.default_params().replace(events_per_step=2)
    shaped = plain.replace(shaping=2.0)
    _, state = env.reset_env(jax.random.key(3), plain)
    step = jax.jit(env.step_env)
    key = jax.random.key(4)
    _, after, r_plain, *_ = step(key, state, jnp.int32(S.MOVE), plain)
    _, after2, r_shaped, *_ = step(key, state, jnp.int32(S.MOVE), shaped)
    delta = float(E.helper_potential(after.world) - E.helper_potential(state.world))
    assert delta != 0.0 and float(r_shaped) == pytest.approx(float(r_plain) + 2.0 * delta, abs=1e-6)


def test_the_all_task_view_draws_from_every_task():
    env, params = jaxsoc.make("CHAIC-All-Helper-v0")
    sizes = [int(T.cached_split(task, "train").states.total.shape[0]) for task in K.TASKS]
    assert params.tasks.total.shape[0] == sum(sizes)
    assert set(np.asarray(params.tasks.task).tolist()) == set(range(len(K.TASKS)))
    with pytest.raises(ValueError, match="unknown CHAIC task"):
        E.ChaicHelperEnv("everything")


# -- a toy training run ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def half_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("half")
    quiet_run(HALF, path)
    return path


def _leaves_equal(a, b) -> bool:
    a, b = to_storable(a), to_storable(b)
    return all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


def test_resume_equals_the_uninterrupted_run(half_run, tmp_path):
    whole = quiet_run(TOY, tmp_path / "whole")
    split = shutil.copytree(half_run, tmp_path / "split")
    resumed = quiet_run(TOY, split, resume=True)
    assert whole["updates"] == resumed["updates"] == 2 * CHUNK
    a, b = (restore_raw(run / CHECKPOINTS, 2 * CHUNK) for run in (tmp_path / "whole", split))
    assert _leaves_equal(a["params"], b["params"]) and _leaves_equal(a, b)


def test_eval_helpers_are_parsed_with_clear_errors(half_run, tmp_path):
    helper = load_ppo_helper(half_run)
    assert isinstance(helper, A.PolicyHelper) and helper.sees_goal is False and helper.rays == 0
    assert C.parse_helpers(["rhp", f"ppo={half_run}"]) == {"rhp": None, "ppo": str(half_run)}
    assert C.parse_helpers(["rhp_options", "goal_options", f"ppo_greedy={half_run}"]) == {
        "rhp_options": None,
        "goal_options": None,
        "ppo_greedy": str(half_run),
    }
    assert C.learned_helper("ppo_greedy", str(half_run)).policy.greedy
    for items, match in (
        (["ppo"], "needs its run"),
        (["rhp=x"], "unknown helper"),
        (["rhp_options=x"], "unknown helper"),
        (["gpt4"], "unknown helper"),
        (["ppo=a", "ppo=b"], "given twice"),
    ):
        with pytest.raises(ValueError, match=match):
            C.parse_helpers(items)
    other = shutil.copytree(half_run, tmp_path / "other")
    rewritten = 0
    for path in (other / CHECKPOINTS).rglob("*"):
        if path.is_file() and "meta" in path.parts and TOY_ENV in path.read_text(errors="ignore"):
            path.write_text(path.read_text().replace(TOY_ENV, "CHAIC-Normal-v0"))
            rewritten += 1
    assert rewritten
    with pytest.raises(ValueError, match="not a CHAIC helper view"):
        load_ppo_helper(other)
    # a run on the options view (CHAIC-<Task>-Options-v0) loads as the options helper, never as a primitive-action one
    for path in (other / CHECKPOINTS).rglob("*"):
        if path.is_file() and "meta" in path.parts and "CHAIC-Normal-v0" in path.read_text(errors="ignore"):
            path.write_text(path.read_text().replace("CHAIC-Normal-v0", "CHAIC-Normal-Options-v0"))
    from jaxsoc.envs.chaic.options import OptionPolicyHelper

    assert isinstance(load_ppo_helper(other), OptionPolicyHelper)


def test_the_loaded_helper_takes_valid_actions_in_play(half_run):
    """The run's checkpoint as a helper in ``play`` (beside a constrained agent that waits, as in training): it
    acts, with more than one action, and every action it takes is valid in the world then (the network's mask is
    the helper's own)."""
    from jaxsoc.envs.chaic import play as P

    states = jax.tree_util.tree_map(lambda x: x[:2], T.cached_split("normal", "test").states)
    run = P.make_player(A.NoHelper(inactive=False), load_ppo_helper(half_run), max_events=24, record=True)
    out = jax.device_get(run(states, jax.random.split(jax.random.key(5), 2)))
    actions, valid = out["actions"][..., S.HELPER], out["valid"][..., S.HELPER]
    acted = actions >= 0
    assert acted.sum() >= 4 and len(set(actions[acted].tolist())) > 1
    assert valid[acted].all(), actions[acted & ~valid]


def test_eval_command_with_a_ppo_run_and_append(half_run, tmp_path, capsys):
    out = tmp_path / "eval"
    base = ["chaic", "eval", "--tasks", "normal", "--episodes", "1", "--seeds", "1", "--max-events", "30"]
    assert jaxsoc_main([*base, "--helper", f"ppo={half_run}", "--out", str(out)]) == 0
    first = json.loads((out / "chaic_eval.json").read_text())["results"]["normal"]
    assert set(first) == {"none", "ppo"} and 0.0 <= first["ppo"]["tr"] <= 1.0 and first["ppo"]["complete"] >= 0
    capsys.readouterr()
    assert jaxsoc_main([*base, "--helper", "none", "--out", str(out), "--append"]) == 0  # the earlier ppo row kept
    assert "| normal | ppo |" in capsys.readouterr().out
    saved = json.loads((out / "chaic_eval.json").read_text())["results"]["normal"]
    assert saved == first
    assert jaxsoc_main([*base[:-2], "--max-events", "31", "--helper", "rhp", "--out", str(out), "--append"]) == 2
    assert "max_events" in capsys.readouterr().err


def test_a_two_agent_env_is_refused_with_the_helper_view_named(capsys):
    with pytest.raises(ValueError, match="several agents.*instead: CHAIC-Normal-Helper-v0, CHAIC-Normal-Options-v0$"):
        ppo.Trainer(dataclasses.replace(TOY, env_id="CHAIC-Normal-v0", env_args=""))
    assert jaxsoc_main(["train", "ppo", "--env", "CHAIC-Normal-v0", "--out", "unused", "--preset", "tiny"]) == 2
    assert "CHAIC-Normal-Helper-v0" in capsys.readouterr().err
