"""A learned BabyAI agent decides from what it observes (issue 59): the stored quick-start PPO policy
(``babyai-quickstart-ppo``), at states of its own rollouts, takes the same action distribution when the hidden parts
of the true state are scrambled — the cells outside its 7x7 view, the cells behind a wall, what is packed in boxes,
the per-episode object ids the verifier keys on, the step count — and a different one when a cell in view changes
(so the test can fail).

The view is worked out here from minigrid's geometry (the agent at the bottom middle of a ``7 x 7`` window, looking
ahead), not with the env's own gathering, and the policy is applied as ``evaluate.play`` applies it: ``step`` on the
observation, the mission's context and the memory, in evaluation mode. ``play`` (hence ``jaxsoc eval`` and
``jaxsoc models eval``) hands the policy nothing but ``env.step_env``'s observation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc import models
from jaxsoc.envs.gridworld import constants as C

MODEL = "babyai-quickstart-ppo"
WORLDS, STEPS = 6, 4  # rollouts of the policy; the hidden state is scrambled at every step of each
VIEW = 7
OBJECTS = (C.KEY, C.BALL, C.BOX)


@pytest.fixture(scope="module")
def agent():
    """``(env, params, decide, observe, rollout)``: the stored policy's ``decide(obs, context, memory) -> log_probs``
    (jitted once), the env's ``observe`` over a batch of states, and a rollout of ``STEPS`` sampled steps in
    ``WORLDS`` levels: per step the states, observations, contexts and memories the policy decided from."""
    env, params, model, variables = models.load(MODEL, kind="policy")
    decide = jax.jit(lambda o, c, m: model.apply(variables, o, c, m, train=False, method="step"))
    observe = jax.jit(jax.vmap(lambda s: env.observe(s, params)))
    step = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, None)))
    obs, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(jax.random.key(59), WORLDS), params)
    context = jax.jit(lambda o: model.apply(variables, o, method="encode_context"))(obs)
    memory, key, rollout = model.initial_memory(WORLDS), jax.random.key(1), []
    for _ in range(STEPS):
        rollout.append((states, obs, memory))
        log_probs, _, memory = decide(obs, context, memory)
        key, k_action, k_step = jax.random.split(key, 3)
        action = jax.random.categorical(k_action, log_probs)
        obs, states, *_ = step(jax.random.split(k_step, WORLDS), states, action, params)
    return env, params, decide, observe, context, rollout


def in_view(agent_pos, agent_dir, height: int, width: int) -> np.ndarray:
    """``bool[H, W]``: the world cells inside the agent's ``VIEW x VIEW`` window (minigrid's geometry: up to
    ``VIEW - 1`` cells ahead, ``VIEW // 2`` to either side)."""
    forward = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]])[int(agent_dir)]
    right = np.array([-forward[1], forward[0]])
    y, x = np.mgrid[:height, :width]
    offset = np.stack([x - int(agent_pos[0]), y - int(agent_pos[1])], -1)
    ahead, side = offset @ forward, offset @ right
    return (ahead >= 0) & (ahead < VIEW) & (np.abs(side) <= VIEW // 2)


def random_cells(rng: np.random.Generator, count: int) -> np.ndarray:
    """``uint8[count, NUM_CHANNELS]``: walls, empty cells, doors and keys, balls and boxes of random colours, with
    random object ids and box contents."""
    cells = np.zeros((count, C.NUM_CHANNELS), np.uint8)
    cells[:, C.TYPE] = rng.choice([C.EMPTY, C.WALL, C.DOOR, *OBJECTS], count)
    cells[:, C.COLOR] = rng.integers(0, C.NUM_COLORS, count)
    cells[:, C.STATE] = np.where(cells[:, C.TYPE] == C.DOOR, rng.integers(0, 3, count), 0)
    cells[:, C.CONTENTS] = np.where(cells[:, C.TYPE] == C.BOX, rng.integers(0, 64, count), 0)
    cells[:, C.OBJ_ID] = rng.integers(0, 256, count)
    return cells


def scramble_hidden(states, rng: np.random.Generator, hidden_of):
    """Returns ``states`` (a batch) with every cell of ``hidden_of(world) -> bool[H, W]`` shuffled among those cells
    and half of them replaced by ``random_cells``, every object id and box's contents redrawn (in view too), the
    carried object's id and the step count redrawn."""
    world = jax.device_get(states.world)
    grid, carrying = np.array(world.grid), np.array(world.carrying)
    for b in range(grid.shape[0]):
        hidden = hidden_of(jax.tree.map(lambda x, b=b: x[b], world))
        cells = grid[b][hidden]
        cells = cells[rng.permutation(len(cells))]
        redraw = rng.random(len(cells)) < 0.5
        cells[redraw] = random_cells(rng, int(redraw.sum()))
        grid[b][hidden] = cells
    grid[..., C.OBJ_ID] = rng.integers(0, 256, grid.shape[:-1])
    grid[..., C.CONTENTS] = np.where(grid[..., C.TYPE] == C.BOX, rng.integers(0, 64, grid.shape[:-1]), 0)
    carrying[:, C.OBJ_ID] = rng.integers(0, 256, carrying.shape[0])
    steps = rng.integers(0, 50, np.shape(world.step_count))
    new = world.replace(
        grid=jnp.asarray(grid), carrying=jnp.asarray(carrying), step_count=jnp.asarray(steps, jnp.int32)
    )
    return states.replace(world=new)


def out_of_view(world) -> np.ndarray:
    """The cells outside the view window (the agent's own cell is in it)."""
    return ~in_view(world.agent_pos, world.agent_dir, *world.grid.shape[:2])


def same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_scrambling_cells_out_of_view_changes_neither_observation_nor_decision(agent):
    env, params, decide, observe, context, rollout = agent
    rng = np.random.default_rng(0)
    changed = 0
    for states, obs, memory in rollout:
        scrambled = scramble_hidden(states, rng, out_of_view)
        changed += int(np.sum(np.asarray(scrambled.world.grid) != np.asarray(states.world.grid)))
        seen = observe(scrambled)
        assert same(seen, obs), "a cell outside the 7x7 view (or a hidden channel) reached the observation"
        assert same(decide(seen, context, memory), decide(obs, context, memory))
    assert changed > 100, "the scramble left the true states (nearly) as they were"


def test_a_change_in_view_changes_the_decision(agent):
    """The control: a ball of another colour on a cell in front of the agent (or, where that cell holds a ball, a
    key) changes the observation and the action distribution in every world at every step."""
    env, params, decide, observe, context, rollout = agent
    for states, obs, memory in rollout:
        world = jax.device_get(states.world)
        grid = np.array(world.grid)
        for b in range(grid.shape[0]):
            x, y = np.asarray(world.agent_pos[b]) + C.DIR_TO_VEC[int(world.agent_dir[b])]
            before = grid[b, y, x, C.TYPE]
            grid[b, y, x, :3] = (C.KEY if before == C.BALL else C.BALL, C.PURPLE, 0)
        changed = observe(states.replace(world=world.replace(grid=jnp.asarray(grid))))
        log_probs, old = np.asarray(decide(changed, context, memory)[0]), np.asarray(decide(obs, context, memory)[0])
        assert not np.any(np.all(np.asarray(changed["image"]) == np.asarray(obs["image"]), axis=(1, 2, 3)))
        assert not np.any(np.all(log_probs == old, axis=-1)), "a policy blind to its view cannot be told apart"


def test_cells_behind_a_wall_are_hidden_and_an_opening_shows_them(agent):
    """Occlusion (minigrid's ``see_through_walls=False``): the agent at the bottom of the room facing north, a wall
    across the room two cells ahead; scrambling everything beyond the wall changes nothing the policy sees or does.
    With the wall cell in front of the agent opened, the same scramble is seen (the test's control)."""
    env, params, decide, observe, context, rollout = agent
    assert not params.see_through_walls
    states, obs, memory = rollout[0]
    world = jax.device_get(states.world)
    grid = np.array(world.grid)
    height, width = grid.shape[1:3]
    row = height - 4  # the wall; the agent stands on the last row inside the room, two cells below it
    grid[:, 1 : height - 1, 1 : width - 1] = C.EMPTY_CELL
    grid[:, row, 1 : width - 1] = C.WALL_CELL
    pos = np.tile([width // 2, height - 2], (grid.shape[0], 1)).astype(np.int32)
    walled = states.replace(
        world=world.replace(
            grid=jnp.asarray(grid), agent_pos=jnp.asarray(pos), agent_dir=jnp.full_like(world.agent_dir, 3)
        )
    )
    beyond = lambda w: np.arange(w.grid.shape[0])[:, None] < row + np.zeros(w.grid.shape[:2], int)  # noqa: E731
    seen = observe(walled)
    rng = np.random.default_rng(1)
    scrambled = scramble_hidden(walled, rng, beyond)
    assert np.sum(np.asarray(scrambled.world.grid)[:, :row] != grid[:, :row]) > 50
    assert same(observe(scrambled), seen), "a cell behind the wall reached the observation"
    assert same(decide(observe(scrambled), context, memory), decide(seen, context, memory))

    opened = np.array(scrambled.world.grid)
    opened[:, row, width // 2] = C.EMPTY_CELL
    for world_grid in opened:  # a ball straight ahead beyond the opening, whatever the scramble put there
        world_grid[row - 1, width // 2, :3] = (C.BALL, C.RED, 0)
    shown = observe(scrambled.replace(world=scrambled.world.replace(grid=jnp.asarray(opened))))
    assert not np.any(np.all(np.asarray(shown["image"]) == np.asarray(seen["image"]), axis=(1, 2, 3)))
