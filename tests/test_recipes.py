"""The four recipes of docs/architecture.md (add an id, a task, a network, a GPU-suite part), each done here with a toy
through the real registration path and checked to reach what the recipe promises: ``jaxsoc.make``, ``jaxsoc list``
(the command, in-process), the contract checks (``test_contract_every_id.check_traced_contract`` and its id list),
``jaxsoc train``'s network choice, and the GPU suite's parts and its generated table. Everything a toy adds is undone
after its test (``monkeypatch``, caches cleared), so no other test sees it. Cheap: a 5x5 MiniGrid world traced a few
times, nothing trained."""

from __future__ import annotations

import dataclasses
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import pytest
from test_contract_every_id import _ids as contract_ids
from test_contract_every_id import check_traced_contract

import jaxsoc
import jaxsoc.envs
import jaxsoc.gpu_suite.babyai
import jaxsoc.learners.babyai.family
from jaxsoc.cli import main
from jaxsoc.core import registry
from jaxsoc.envs import families as env_families
from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS
from jaxsoc.gpu_suite import core
from jaxsoc.learners import families as learner_families
from jaxsoc.learners.networks import registry as networks

EMPTY_CLS, EMPTY_KWARGS = MINIGRID_ENVS["MiniGrid-Empty-5x5-v0"]


class RecipeEmpty(EMPTY_CLS):
    """The toy env of the recipes: minigrid's Empty room, as a subclass (a new id's class)."""


@pytest.fixture
def fresh_ids(monkeypatch):
    """Returns ``register_all()``: registers every family's ids again, through the families' declarations, into an
    empty registry that replaces the real one for this test (the declarations' caches are cleared around it)."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_INSTANCES", {})
    added = set(sys.modules)
    env_families.families.cache_clear()
    core.family_parts.cache_clear()
    learner_families.families.cache_clear()

    def register_all() -> None:
        env_families.families.cache_clear()
        jaxsoc.envs._register_all()

    yield register_all
    for name in set(sys.modules) - added:  # a toy family's modules
        if name.startswith("jaxsoc."):
            del sys.modules[name]
    env_families.families.cache_clear()
    core.family_parts.cache_clear()
    learner_families.families.cache_clear()


def _listed(capsys) -> str:
    assert main(["list"]) == 0
    return capsys.readouterr().out


def _contract(env_id: str) -> None:
    assert env_id in {p if isinstance(p, str) else p.values[0] for p in contract_ids()}
    check_traced_contract(env_id, *jaxsoc.make(env_id))


def test_recipe_add_an_id(fresh_ids, monkeypatch, capsys):
    """Add an id to a family: one entry in the family's catalogue (here minigrid's ``MINIGRID_ENVS``: id -> class
    and keywords); the family's declaration registers it, lists it and owns it."""
    toy = "MiniGrid-RecipeToy-5x5-v0"
    monkeypatch.setitem(MINIGRID_ENVS, toy, (RecipeEmpty, dict(EMPTY_KWARGS)))
    fresh_ids()
    env, _ = jaxsoc.make(toy)
    assert type(env) is RecipeEmpty
    assert env_families.family_of(toy).name == "babyai" and toy in env_families.family("babyai").ids()
    assert toy in _listed(capsys).split("# MiniGrid", 1)[1]
    _contract(toy)


FAMILY_SOURCE = '''
"""A toy family's declaration (tests/test_recipes.py): one id per task."""
from jaxsoc.core.family import EnvFamily

#: the family's tasks and their data (a new task: one entry here)
SIZES = {"small": 5, "large": 6}


def _id(task):
    return f"RecipeToy-{task.title()}-v0"


def _register(add):
    from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

    cls, _ = MINIGRID_ENVS["MiniGrid-Empty-5x5-v0"]
    for task, size in SIZES.items():
        add(_id(task), lambda size=size: cls(size=size))


FAMILY = EnvFamily(
    name="recipetoy", title="RecipeToy", order=99, prefixes=("RecipeToy-",), ids=lambda: tuple(map(_id, SIZES)),
    tasks=tuple(SIZES), all_tasks="all", register=_register,
)
'''


def test_recipe_add_a_task(fresh_ids, monkeypatch, tmp_path, capsys):
    """Add a task to a family with named tasks: its name and data in the family's task catalogue; the declaration
    (``envs/<family>/family.py``) derives the task list, the task check and the ids from it. The toy family lives in
    a folder added to ``jaxsoc.envs``' package path, found as a real family's declaration is."""
    package = tmp_path / "envs" / "recipetoy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A toy family (tests/test_recipes.py)."""\n')
    (package / "family.py").write_text(FAMILY_SOURCE)
    monkeypatch.setattr(jaxsoc.envs, "__path__", [*jaxsoc.envs.__path__, str(tmp_path / "envs")])
    fresh_ids()
    family = env_families.family("recipetoy")
    assert family.check_task("large") == "large" and family.task_names("all") == ("small", "large")
    with pytest.raises(ValueError, match="unknown RecipeToy task 'huge'"):
        family.check_task("huge")
    env, params = jaxsoc.make("RecipeToy-Large-v0")
    assert params.width == 6 and env_families.family_of("RecipeToy-Large-v0") is family
    assert "RecipeToy-Large-v0" in _listed(capsys)
    _contract("RecipeToy-Large-v0")


@dataclasses.dataclass(frozen=True)
class RecipeConfig:
    """The toy network's config (``num_actions`` set from the env)."""

    hidden: int = 16
    num_actions: int = 7


class RecipeMLP(nn.Module):
    """A memoryless MLP on the flattened observation: the policy protocol (``networks.registry``) at its smallest."""

    config: RecipeConfig

    def initial_memory(self, batch: int) -> jax.Array:
        return jnp.zeros((batch, 1), jnp.float32)

    def encode_context(self, obs: dict) -> tuple:
        return ()

    @nn.compact
    def step(self, obs: dict, context: tuple, memory: jax.Array, train: bool = False):
        leaves = [obs[k] for k in sorted(obs)]
        x = jnp.concatenate([v.reshape(v.shape[0], -1).astype(jnp.float32) for v in leaves], axis=-1)
        x = nn.relu(nn.Dense(self.config.hidden)(x / 10))
        return jax.nn.log_softmax(nn.Dense(self.config.num_actions)(x)), nn.Dense(1)(x)[:, 0], memory

    def __call__(self, obs: dict, memory: jax.Array, train: bool = False):
        return self.step(obs, self.encode_context(obs), memory, train)


def test_recipe_add_a_network(monkeypatch, capsys):
    """Give a family's PPO a new network: register a ``NetworkSpec`` (``networks.registry.register``, in
    ``learners/networks/<family>.py``) and name it as the family's ``network`` (``learners/<family>/family.py``);
    ``jaxsoc train ppo`` on the family's ids then builds it, and a checkpoint's description rebuilds it."""
    monkeypatch.setattr(networks, "NETWORKS", dict(networks.NETWORKS))
    presets = {"small": RecipeConfig(), "tiny": RecipeConfig(hidden=8)}
    networks.register("recipe-mlp", networks.NetworkSpec(RecipeMLP, RecipeConfig, presets))
    declared = jaxsoc.learners.babyai.family.FAMILY
    monkeypatch.setattr(jaxsoc.learners.babyai.family, "FAMILY", dataclasses.replace(declared, network="recipe-mlp"))
    learner_families.families.cache_clear()
    try:
        env_id = "MiniGrid-Empty-5x5-v0"
        assert learner_families.network_for(env_id) == "recipe-mlp"
        from jaxsoc.learners import rl_run

        seen = []

        def stop(config, *args, **kwargs):
            seen.append(config)
            raise ValueError("stopped before training")

        monkeypatch.setattr(rl_run, "train_rl", stop)
        assert main(["train", "ppo", "--env", env_id, "--out", "unused", "--preset", "tiny"]) == 2
        assert "stopped before training" in capsys.readouterr().err
        assert seen[0].network == "recipe-mlp"

        env, params = jaxsoc.make(env_id)
        config = networks.network_config("recipe-mlp", "tiny", env.action_space(params).n)
        model = networks.build("recipe-mlp", config, env.observation_space(params))
        obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 2), params)
        variables = model.init(jax.random.key(1), obs, model.initial_memory(2))
        log_probs, value, _ = model.apply(variables, obs, model.initial_memory(2))
        assert log_probs.shape == (2, config.num_actions) and value.shape == (2,)
        rebuilt = networks.from_description(networks.describe(model))
        assert type(rebuilt) is RecipeMLP and rebuilt.config == config
    finally:
        learner_families.families.cache_clear()


def _toy_run(ctx: core.Context):
    """A part's run: one row per size, an earlier run's row yielded again (``ctx.previous``)."""
    for n in ctx.params["num_envs"]:
        key = f"N={n}"
        yield ctx.previous(key) or {"key": key, "num_envs": n, "steps_per_s": 1000.0 * n}


def _toy_render(rows: list[dict]) -> str:
    return "\n".join(
        ["| N | steps/s |", "|---:|---:|", *(f"| {r['num_envs']} | {r['steps_per_s']:.3g} |" for r in rows)]
    )


def test_recipe_add_a_gpu_suite_part(fresh_ids, monkeypatch, tmp_path):
    """Add a GPU-suite part: one ``Part`` in the family's ``gpu_suite/<family>.py`` ``PARTS`` (a run, a table, full
    and toy parameters, a rank); ``core.family_parts`` puts it in the suite in rank order and the generated markdown
    shows its table."""
    part = core.Part(
        "recipe_toy",
        "A toy part of the recipes",
        _toy_run,
        _toy_render,
        budget_s=0,
        params=dict(num_envs=[4096]),
        toy=dict(num_envs=[2, 4]),
        rank=10.5,
    )
    monkeypatch.setattr(jaxsoc.gpu_suite.babyai, "PARTS", (*jaxsoc.gpu_suite.babyai.PARTS, part))
    core.family_parts.cache_clear()
    parts = core.family_parts()
    names = [p.name for p in parts]
    assert names.index("classic") < names.index("recipe_toy") < names.index("babyai")
    results_md = tmp_path / "RESULTS.md"
    core.run_suite([part], tmp_path, results_md, toy=True, budget_minutes=25, registry=parts)
    text = results_md.read_text()
    assert "### A toy part of the recipes (toy sizes" in text and "| 4 | 4e+03 |" in text
