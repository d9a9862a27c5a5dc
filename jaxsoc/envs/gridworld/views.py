"""Observation kinds of the grid families (every ``MiniGrid-*`` and ``BabyAI-*`` id), minigrid 3.2.0's wrappers in JAX.

``jaxsoc.make(name, observation=kind)`` (or ``env.with_observation(kind)``) selects one; each replaces
``obs["image"]`` and keeps the other keys (``direction``, and ``mission`` where the env observes it), as
minigrid's ``ObservationWrapper``s do:

- ``partial`` (the default, no wrapper): ``uint8[V, V, 3]``, the egocentric view with occlusion, ``[i, j]``;
- ``full`` (``FullyObsWrapper``): ``uint8[W, H, 3]``, the whole grid indexed ``[x, y]``, the agent's cell
  ``(AGENT, RED, direction)``;
- ``rgb_partial`` (``RGBImgPartialObsWrapper``): ``uint8[V * t, V * t, 3]``, the view in pixels (``get_pov_render``),
  drawn from the ``partial`` image;
- ``rgb`` (``RGBImgObsWrapper``): ``uint8[H * t, W * t, 3]``, the world in pixels with the seen cells highlighted
  (``get_full_render``), drawn from the state and the ``partial`` image (for the highlight);
- ``one_hot_partial`` (``OneHotPartialObsWrapper``): ``uint8[V, V, 20]``, the ``partial`` image as type (11),
  colour (6) and state (3) bits.

``V`` is ``params.view_size`` (7), ``W``/``H`` the grid's width and height, ``t`` the tile size (minigrid's wrapper
default 8; ``with_observation(kind, tile_size=...)``). ``params.see_through_walls`` turns occlusion off for every
kind that shows it (the partial kinds, and the highlight of ``rgb``). ``"default"`` names ``partial``.

Each view is a few vectorised array operations on one world (a gather of sprites for the pixel kinds), so it
adds little to a step: docs/observations.md lists the equations and steps per second of each kind.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core import spaces
from jaxsoc.core.wrappers import Wrapper
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.rendering import render_image_view, render_state_seen, sprites
from jaxsoc.envs.gridworld.state import GridParams, GridState

#: the kinds, the default (minigrid's own observation) first
KINDS = ("partial", "full", "rgb_partial", "rgb", "one_hot_partial")
#: the kinds drawn in pixels (they take ``tile_size``)
PIXEL_KINDS = ("rgb_partial", "rgb")
#: minigrid's ``tile_size`` default of ``RGBImgObsWrapper`` and ``RGBImgPartialObsWrapper``
TILE_SIZE = 8
NUM_TYPES, NUM_STATES = len(C.OBJECT_NAMES), len(C.STATE_NAMES)
#: bits per cell of ``one_hot_partial``: object type (11), colour (6), state (3), minigrid's order
ONE_HOT_BITS = NUM_TYPES + C.NUM_COLORS + NUM_STATES

_AGENT_RED = np.array([C.AGENT, C.RED], np.uint8)


def full_grid(world: GridState) -> jax.Array:
    """Returns minigrid's ``FullyObsWrapper`` image: ``uint8[W, H, 3]`` indexed ``[x, y]``, every cell's
    ``(type, colour, state)`` and the agent's cell ``(AGENT, RED, direction)`` (what the agent carries is not shown)."""
    grid = jnp.swapaxes(world.grid[..., :3], 0, 1)
    agent = jnp.concatenate([jnp.asarray(_AGENT_RED), world.agent_dir.astype(jnp.uint8)[None]])
    return grid.at[world.agent_pos[0], world.agent_pos[1]].set(agent)


def one_hot(image: jax.Array) -> jax.Array:
    """Returns minigrid's ``OneHotPartialObsWrapper`` image of an encoded image ``uint8[..., 3]``: ``uint8[...,
    ONE_HOT_BITS]``, bit ``type``, bit ``NUM_TYPES + colour`` and bit ``NUM_TYPES + NUM_COLORS + state`` set.

    Three broadcast comparisons, no gather: XLA:CPU runs a byte-wise gather as a scalar loop, which made the
    one-hot step 7x slower inside a ``lax.scan`` of ``vmap(env.step)`` (DoorKey-8x8, 1,024 worlds)."""
    code = image.astype(jnp.int32)
    bits = [
        jax.nn.one_hot(code[..., c], n, dtype=jnp.uint8)
        for c, n in ((C.TYPE, NUM_TYPES), (C.COLOR, C.NUM_COLORS), (C.STATE, NUM_STATES))
    ]
    return jnp.concatenate(bits, axis=-1)


def view_image(kind: str, obs: dict[str, jax.Array], world: GridState, params: GridParams, tile_size: int) -> jax.Array:
    """Returns the ``image`` of ``kind`` (see the module table) for one world, from its default observation
    ``obs`` (``partial``) and its ``GridState``."""
    if kind == "partial":
        return obs["image"]
    image = obs["image"]
    if kind == "full":
        return full_grid(world)
    if kind == "rgb_partial":
        return render_image_view(image, tile_size=tile_size)
    if kind == "rgb":
        return render_state_seen(world, image, tile_size=tile_size)
    if kind == "one_hot_partial":
        return one_hot(image)
    raise ValueError(f"unknown grid observation {kind!r}; the kinds are {list(KINDS)}")


def image_space(kind: str, params: GridParams, tile_size: int) -> spaces.Box:
    """Returns the space of ``view_image``'s ``image`` for ``kind`` (shapes in the module table)."""
    size, height, width = params.view_size, params.height, params.width
    if kind == "partial":
        return spaces.Box(0, C.AGENT, (size, size, 3), jnp.uint8)
    if kind == "full":
        return spaces.Box(0, C.AGENT, (width, height, 3), jnp.uint8)
    if kind == "rgb_partial":
        return spaces.Box(0, 255, (size * tile_size, size * tile_size, 3), jnp.uint8)
    if kind == "rgb":
        return spaces.Box(0, 255, (height * tile_size, width * tile_size, 3), jnp.uint8)
    if kind == "one_hot_partial":
        return spaces.Box(0, 1, (size, size, ONE_HOT_BITS), jnp.uint8)
    raise ValueError(f"unknown grid observation {kind!r}; the kinds are {list(KINDS)}")


class GridView(Wrapper):
    """A grid env (``GridEnvironment`` or ``BabyAIEnvironment``) observing ``kind`` instead of its egocentric view.

    Everything but the observation is the inner env's: states, params, actions, rewards, ``info``, ``render``,
    ``pooled_resets``, attributes (``mission_text``, ``import_minigrid``, ...). ``reset_env``/``step_env`` replace
    ``obs["image"]`` by ``view_image``, so ``step``'s auto-reset, ``info["final_observation"]``,
    ``core.autoreset.batched_step`` and ``jax.vmap(env.step)`` all see the new kind. ``name`` is the inner env's
    (the registered id); ``observation_kind`` and ``tile_size`` say what it observes.

    The inner env supplies ``grid_world(state) -> GridState`` (its world) and ``observe(state, params)`` (its default
    observation)."""

    def __init__(self, env: Any, kind: str, tile_size: int = TILE_SIZE) -> None:
        if kind not in KINDS[1:]:
            raise ValueError(f"GridView: kind must be one of {list(KINDS[1:])}, got {kind!r}")
        self.observation_kind = kind
        self.tile_size = tile_size
        self.pooled_resets = env.pooled_resets
        super().__init__(env)

    @property
    def name(self) -> str:
        return self._env.name

    def _view(self, obs: dict[str, jax.Array], state: Any, params: Any) -> dict[str, jax.Array]:
        world = self._env.grid_world(state)
        return {**obs, "image": view_image(self.observation_kind, obs, world, params, self.tile_size)}

    def reset_env(self, key: jax.Array, params: Any):
        """Returns ``(obs, state)`` of the inner env's new episode, observing ``observation_kind``."""
        obs, state = self._env.reset_env(key, params)
        return self._view(obs, state, params), state

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        """The inner env's raw transition (no reset), observing ``observation_kind``."""
        obs, state, reward, terminated, truncated, info = self._env.step_env(key, state, action, params)
        return self._view(obs, state, params), state, reward, terminated, truncated, info

    def observe(self, state: Any, params: Any = None) -> dict[str, jax.Array]:
        """Returns the observation of ``state`` (one world; jittable, vmap it for a batch)."""
        params = self.default_params() if params is None else params
        return self._view(self._env.observe(state, params), state, params)

    def observation_space(self, params: Any = None) -> spaces.Dict:
        """Returns the inner env's space with ``image`` replaced by ``image_space``."""
        space = self._env.observation_space(params)
        params = self.default_params() if params is None else params
        return spaces.Dict({**space.spaces, "image": image_space(self.observation_kind, params, self.tile_size)})

    def mission_text(self, state: Any, params: Any = None) -> str:
        """Returns the inner env's mission string of one (unbatched) state: the view keeps the inner states."""
        return self._env.mission_text(state, params)

    def observation_kinds(self) -> tuple[str, ...]:
        return self._env.observation_kinds()

    def with_observation(self, kind: str, **options: Any) -> Any:
        """Returns the inner env with observation ``kind`` (see ``with_view``)."""
        return self._env.with_observation(kind, **options)


def with_view(env: Any, kind: str, tile_size: int | None = None) -> Any:
    """Returns ``env`` (a grid env, unwrapped) observing ``kind``: ``env`` itself for ``"partial"``/``"default"``,
    else a ``GridView``. ``tile_size`` (pixels per cell, default ``TILE_SIZE``) applies to the pixel kinds only.

    Raises:
        TypeError: ``kind`` is not a string, or ``tile_size`` is given for a kind that is not drawn in pixels.
        ValueError: an unknown kind (the message lists ``KINDS``), or a ``tile_size`` that is not a positive int.
    """
    kind = env.check_observation_kind(kind)
    if tile_size is not None and kind not in PIXEL_KINDS:
        raise TypeError(f"{env.name}: tile_size applies to the pixel observations {list(PIXEL_KINDS)}, not {kind!r}")
    if kind == KINDS[0]:
        return env
    tile_size = TILE_SIZE if tile_size is None else tile_size
    if kind in PIXEL_KINDS:
        if isinstance(tile_size, bool) or not isinstance(tile_size, numbers.Integral) or tile_size < 1:
            raise ValueError(f"{env.name}: tile_size must be a positive int, got {tile_size!r}")
        tile_size = int(tile_size)
        sprites(tile_size)  # draw the tiles now, on the host, not inside the first trace
    return GridView(env, kind, tile_size)
