"""Changes to CHAIC's task declaration do not silently change saved work: a task's training episodes do not depend
on its position in ``catalogue.TASKS`` (``catalogue.TASK_SEED``), and a behaviour model restored under other heads
(its class count or its constraint list, which grow with a new task or ability) is refused, naming what changed."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.learners.chaic import bm_run
from jaxsoc.learners.chaic.bm_config import BMConfig


def test_every_task_has_its_own_seed_and_reordering_tasks_keeps_each_tasks_episodes(monkeypatch):
    assert set(K.TASK_SEED) == set(K.TASKS) and len(set(K.TASK_SEED.values())) == len(K.TASKS)
    before = {task: T.split_episodes(task, "train", seed=3, size=4) for task in ("normal", "furniture")}
    # a new task inserted at the front, the others reordered: nobody else's episodes move
    monkeypatch.setattr(K, "TASKS", ("new_task", *reversed(K.TASKS)))
    monkeypatch.setitem(K.TASK_SEED, "new_task", max(K.TASK_SEED.values()) + 1)
    assert {task: T.split_episodes(task, "train", seed=3, size=4) for task in before} == before
    assert T.split_episodes("normal", "train", seed=4, size=4) != before["normal"]  # the seed still matters


def test_a_behaviour_model_restored_under_other_heads_is_refused_naming_them(tmp_path, monkeypatch):
    config = BMConfig()
    saved = bm_run.checkpointer(tmp_path, config)
    saved.save(0, {"w": jnp.zeros(3)})
    saved.close()
    monkeypatch.setattr(bm_run, "CONSTRAINTS", (*bm_run.CONSTRAINTS, "new_ability"))
    changed = bm_run.checkpointer(tmp_path, config)
    with pytest.raises(ValueError, match="constraints"):
        changed.restore({"w": jnp.zeros(3)})
    changed.close()
    monkeypatch.setattr(bm_run.K, "NUM_CLASSES", K.NUM_CLASSES + 1)
    monkeypatch.setattr(bm_run, "CONSTRAINTS", bm_run.CONSTRAINTS[:-1])
    grown = bm_run.checkpointer(tmp_path, config)
    with pytest.raises(ValueError, match="classes"):
        grown.restore({"w": jnp.zeros(3)})
    grown.close()


def test_a_shipped_behaviour_model_loaded_under_other_heads_is_refused_naming_them(monkeypatch):
    assert bm_run.load("model:chaic-bm")[0] == bm_run.config_of(
        bm_run.models.info("chaic-bm").spec["files"]["run.json"], "chaic-bm"
    )
    monkeypatch.setattr(bm_run, "CONSTRAINTS", (*bm_run.CONSTRAINTS, "new_ability"))
    with pytest.raises(ValueError, match="heads differ from this CHAIC: constraints: model"):
        bm_run.load("model:chaic-bm")
    monkeypatch.setattr(bm_run, "CONSTRAINTS", bm_run.CONSTRAINTS[:-1])
    monkeypatch.setattr(bm_run.K, "NUM_CLASSES", K.NUM_CLASSES + 1)
    with pytest.raises(ValueError, match="classes: model"):
        bm_run.load("model:chaic-bm")
