"""``jaxsoc train chaic-options``: the options helper's recipe (``learners.chaic.options_recipe``) calls
``options_ppo.train`` exactly as the former ``scripts/chaic_options_ppo.py`` did (same config and arguments, so the
same run; a tiny run through both paths gave identical parameters and metrics), without training here."""

from __future__ import annotations

import pytest

from jaxsoc.cli import main
from jaxsoc.learners.chaic import options_ppo
from jaxsoc.learners.chaic.options_recipe import OptionsRecipe, train_recipe


def _script_call(out, env, bc_batches, updates, n, checkpoint_every, seed, preset, teacher, follow, env_args, resume):
    """The arguments the former script passed to ``options_ppo.train``."""
    cfg = options_ppo.config(
        env, preset=preset, num_envs=n, minibatch_frames=10 * n, total_frames=n * 20 * updates, env_args=env_args
    )
    kw = dict(teacher=teacher, follow=follow, resume=resume, chunk_updates=5, checkpoint_every=checkpoint_every)
    kw.update(keep_checkpoints=None, eval_episodes=0)
    return (out, cfg, 0 if resume else bc_batches, seed), kw


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def train(*args, **kw):
        kw.pop("progress", None)
        seen.append((args, kw))
        return {"algo": "ppo", "title": "PPO", "updates": 1, "frames": 1, "wall_s": 0.0, "checkpoint": "c"}

    monkeypatch.setattr(options_ppo, "train", train)
    return seen


def test_recipe_defaults_are_the_scripts(calls, tmp_path):
    train_recipe(OptionsRecipe(), tmp_path)
    assert calls[-1] == _script_call(
        tmp_path, "CHAIC-All-Options-v0", 40, 1000, 32, 5, 0, "small", "rhp", "expert", "", False
    )


def test_verb_passes_the_scripts_arguments(calls, tmp_path):
    out = str(tmp_path / "run")
    args = ["train", "chaic-options", "--out", out, "--num-envs", "2", "--seed", "3", "--quiet", "--preset", "tiny"]
    sets = ["bc_batches=2", "updates=7", "checkpoint_every=1", "teacher=goal", "follow=policy", "env_args=a=b"]
    assert main([*args, *(x for s in sets for x in ("--set", s))]) == 0
    assert calls[-1] == _script_call(out, "CHAIC-All-Options-v0", 2, 7, 2, 1, 3, "tiny", "goal", "policy", "a=b", False)
    assert main([*args, "--resume", "--env", "CHAIC-Normal-Options-v0", "--set", "preset=small-partner"]) == 0
    expected = _script_call(
        out, "CHAIC-Normal-Options-v0", 40, 1000, 2, 5, 3, "small-partner", "rhp", "expert", "", True
    )
    assert calls[-1] == expected


def test_bad_recipe_is_refused(calls, tmp_path, capsys):
    assert main(["train", "chaic-options", "--out", str(tmp_path), "--set", "teacher=nobody"]) == 2
    assert "unknown CHAIC options teacher 'nobody'" in capsys.readouterr().err
    assert main(["train", "chaic-options", "--out", str(tmp_path), "--set", "updates=0"]) == 2
    assert not calls


def test_training_reads_validation_and_refuses_test(monkeypatch):
    """Training curves and model choices read the validation split: the options recipe's final evaluation plays the
    validation bank, and the checkpoint curve refuses the test split (scored once, by ``jaxsoc chaic eval``)."""
    import runpy
    import sys

    import numpy as np

    from jaxsoc.envs.chaic import tasks as T
    from jaxsoc.learners.ppo import trainer_for

    T.check_training_split("validation")
    with pytest.raises(ValueError, match="not 'test'.*scored once.*jaxsoc chaic eval"):
        T.check_training_split("test")
    trainer = trainer_for(options_ppo.config("CHAIC-Furniture-Options-v0"))
    params = options_ppo.validation_params(trainer)
    expected = T.cached_split("furniture", "validation").states
    np.testing.assert_array_equal(params.tasks.objects.pos, expected.objects.pos)
    assert params.tasks.objects.pos.shape[0] == T.VALIDATION_EPISODES
    monkeypatch.setattr(sys, "argv", ["chaic_options_tr_curve.py", "run", "checkpoints", "out", "--split", "test"])
    with pytest.raises(ValueError, match="scored once"):
        runpy.run_path("scripts/chaic_options_tr_curve.py", run_name="__main__")
