"""Recurrent PPO and A2C for jaxsoc environments, PureJaxRL style, with the BabyAI recipe as the default.

One *update* collects ``num_steps`` frames in each of ``num_envs`` worlds (a ``lax.scan`` over the batched
env step and the policy), computes GAE advantages, and runs the algorithm's epochs of minibatch gradient
steps over sequences of ``recurrence`` frames (truncated BPTT: each sequence starts from the memory recorded
while acting). Everything is a pure function of the ``Runner`` pytree::

    trainer = Trainer(PPOConfig(env_id="BabyAI-GoToRedBallGrey-v0"))
    runner = trainer.init(jax.random.key(0))
    runner, metrics = trainer.run(runner, num_updates=10)         # jitted lax.scan over 10 updates
    train = jax.jit(jax.vmap(trainer.train))                      # whole run, vmapped over seeds
    runners, metrics = train(jax.random.split(key, 4))

The BabyAI recipe (``babyai/rl/algos/ppo.py`` of the reference) is matched as follows: the mask of an
env's frame is ``1 - done`` of its previous frame and multiplies the memory before the policy call; GAE uses
``next_mask = 1 - done`` (a truncation is a termination, as in the reference); returns are ``value +
advantage``; advantages are not normalised (``normalize_advantages=True``: per minibatch, to mean 0 and standard
deviation 1, the PPO implementations' usual choice); the policy and the value loss are clipped (value loss
``max(unclipped, clipped)``); the loss is averaged over the ``recurrence`` sub-steps; rewards are scaled by
``reward_scale`` for training (metrics report the env's rewards). BatchNorm (``norm="batch"``) runs in train
mode while acting and while learning, as the reference does (batch statistics over the worlds, running
averages updated). The reference writes recomputed memories back into its buffer only inside a sequence,
never into another sequence's start, so that write-back cannot change the result and is not reproduced.

An environment whose step is a semi-MDP option (the Hybrid helper's) reports ``info["option_discount"]``
(``gamma ** tau`` for an option of ``tau`` primitive steps); the transitions then carry it and ``gae`` uses it
in place of ``gamma`` frame by frame. Every other environment's frames are discounted by ``gamma`` exactly as
before.

A2C (``algo="a2c"``) shares everything but the loss and the schedule: one pass over the whole batch, loss
``-advantage * log_prob - entropy_coef * entropy + value_coef * (value - return)^2``, RMSprop.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

import jaxsoc
from jaxsoc.core.autoreset import batched_step, pool_sizes, pooled, select_rows
from jaxsoc.learners import families
from jaxsoc.learners.networks import registry

ALGOS = ("ppo", "a2c")
#: the family whose recipe the defaults are (``learners.families.default``: BabyAI's)
_DEFAULT = families.default()


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """A training run's hyper-parameters; the defaults are the BabyAI PPO recipe (64 x 40 frames per update).

    Attributes:
        env_id: a registered environment (its observations must fit the network).
        env_args: overrides of the env's default params, ``"name=value,name=value"`` (``jaxsoc.make(env_id,
            **env_kwargs(env_args))``; e.g. ``"shaping=1.0,rays=32"`` for a CHAIC helper view); "" for none.
        algo: ``"ppo"`` or ``"a2c"``.
        network: a registered policy network (``networks.registry``): ``"babyai"`` (``ACModel``, needs
            ``image`` and ``mission``) or ``"grid"`` (any numeric observations).
        preset: the network's preset (BabyAI: ``"small"``, ``"large"``, ``"tiny"``); ``arch`` and ``norm``
            override its fields.
        arch, norm: BabyAI ``ModelConfig`` fields (None keeps the preset's).
        num_envs: worlds stepped in parallel.
        num_steps: frames per world per update (a multiple of ``recurrence``).
        total_frames: frames of the whole run (``num_updates = total_frames // (num_envs * num_steps)``).
        recurrence: BPTT length of the training sequences.
        update_epochs: passes over the collected frames per update (PPO).
        minibatch_frames: frames per gradient step (a multiple of ``recurrence`` dividing the update's frames).
        optimizer: ``"adam"`` or ``"rmsprop"``.
        lr, adam_eps, rmsprop_alpha: optimizer settings (``adam_eps`` is also RMSprop's eps).
        gamma, gae_lambda: discount and GAE parameter.
        clip_eps: PPO clipping of the ratio and of the value.
        entropy_coef, value_coef: loss weights.
        max_grad_norm: global gradient-norm clip.
        reward_scale: training rewards are the env's times this.
        pool_resets: reset ended worlds from a pool of fresh levels sized to the number that ended
            (``jaxsoc.core.autoreset``), and encode the per-episode context (the mission) of those worlds
            only. To vmap over seeds keep it on and use ``run_seeds`` of ``trainer_for(config,
            seed_axis="seeds")`` (a plain ``vmap`` would turn the pool's switch into a select over all sizes).
        cache_context: while acting, compute the network's per-episode context (``encode_context``) once per
            episode and world instead of at every step (same actions and losses, less work).
        normalize_advantages: normalise the advantages of each minibatch to mean 0, standard deviation 1.
    """

    env_id: str = _DEFAULT.default_env_id
    env_args: str = ""
    algo: str = "ppo"
    network: str = _DEFAULT.network
    preset: str = "small"
    arch: str | None = None
    norm: str | None = None
    num_envs: int = 64
    num_steps: int = 40
    total_frames: int = 2_560_000
    recurrence: int = 20
    update_epochs: int = 4
    minibatch_frames: int = 1280
    optimizer: str = "adam"
    lr: float = 1e-4
    adam_eps: float = 1e-5
    rmsprop_alpha: float = 0.99
    gamma: float = 0.99
    gae_lambda: float = 0.99
    clip_eps: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 20.0
    pool_resets: bool = True
    cache_context: bool = True
    normalize_advantages: bool = False

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {self.algo!r}")
        env_kwargs(self.env_args)  # a malformed value fails here, before anything is built
        if self.optimizer not in ("adam", "rmsprop"):
            raise ValueError(f"optimizer must be 'adam' or 'rmsprop', got {self.optimizer!r}")
        for name in ("num_envs", "num_steps", "total_frames", "recurrence", "update_epochs", "minibatch_frames"):
            if getattr(self, name) < 1:
                raise ValueError(f"PPOConfig.{name} must be positive, got {getattr(self, name)}")
        if self.num_steps % self.recurrence:
            raise ValueError(f"num_steps ({self.num_steps}) must be a multiple of recurrence ({self.recurrence})")
        if self.minibatch_frames % self.recurrence or self.frames_per_update % self.minibatch_frames:
            raise ValueError(
                f"minibatch_frames ({self.minibatch_frames}) must be a multiple of recurrence ({self.recurrence}) "
                f"and divide the frames per update ({self.num_envs} x {self.num_steps} = {self.frames_per_update})"
            )
        if self.total_frames < self.frames_per_update:
            raise ValueError(f"total_frames ({self.total_frames}) is less than one update ({self.frames_per_update})")
        for name in ("lr", "adam_eps", "max_grad_norm", "reward_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"PPOConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("gamma", "gae_lambda", "rmsprop_alpha"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"PPOConfig.{name} must be in [0, 1], got {getattr(self, name)}")

    @property
    def frames_per_update(self) -> int:
        """Returns ``num_envs * num_steps``."""
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """Returns the number of updates of the run."""
        return self.total_frames // self.frames_per_update

    def model_config(self, num_actions: int):
        """Returns the network's config: the preset with this config's overrides.

        Raises:
            ValueError: an unknown network or preset, or overrides the network does not have.
        """
        return registry.network_config(self.network, self.preset, num_actions, arch=self.arch, norm=self.norm)


def env_kwargs(env_args: str) -> dict[str, Any]:
    """Returns ``{name: value}`` from ``"name=value,name=value"`` (values: true/false, integers, floats, else the
    text). Raises ``ValueError`` for an item without ``=``."""
    out: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in env_args.split(","))):
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"env_args takes name=value[,name=value], got {item!r}")
        lowered = text.lower()
        if lowered in ("true", "false"):
            out[name] = lowered == "true"
            continue
        for kind in (int, float):
            try:
                out[name] = kind(text)
                break
            except ValueError:
                continue
        else:
            out[name] = text
    return out


#: env arguments that name a run whose model the env carries: ``name -> core.family.RunArgument`` (the env's keyword
#: and the loader), as the learner families declare them. The learner layer loads the run and hands the env the model
#: (environments import no learner): ``partner_run=RUN`` (CHAIC's options view, a ``chaic-bm`` run) becomes
#: ``partner=bm.load_partner(RUN)``.
RUN_ARGUMENTS = families.run_arguments()


def make_env_from(env_id: str, env_args: str = "") -> tuple[Any, Any]:
    """Returns ``(env, params)``: ``env_id`` with ``env_args`` (``env_kwargs``): the names that are fields of the
    env's params override them, the others go to its constructor (``make``'s ``init_kwargs``, e.g. ``rooms=true``
    for CHAIC's options view), the ``RUN_ARGUMENTS`` loaded first. Raises ``ValueError`` for a name neither takes,
    or a run that does not load."""
    kwargs = env_kwargs(env_args)
    for name, argument in RUN_ARGUMENTS.items():
        if name in kwargs:
            kwargs[argument.keyword] = argument.load(str(kwargs.pop(name)))
    fields = {f.name for f in dataclasses.fields(jaxsoc.make(env_id)[1])}
    init_kwargs = {k: v for k, v in kwargs.items() if k not in fields}
    overrides = {k: v for k, v in kwargs.items() if k in fields}
    try:
        return jaxsoc.make(env_id, init_kwargs or None, **overrides)
    except TypeError as error:
        raise ValueError(
            f"{env_id}: unknown env arguments {sorted(init_kwargs)}: not fields of its params {sorted(fields)} "
            f"nor taken by its constructor ({error})"
        ) from error


def make_env(config: PPOConfig) -> tuple[Any, Any]:
    """Returns ``(env, params)``: ``config.env_id`` with ``config.env_args`` (``make_env_from``)."""
    return make_env_from(config.env_id, config.env_args)


def paper_config(**overrides: Any) -> PPOConfig:
    """Returns the BabyAI paper's recipe: 64 worlds x 40 frames, 4 epochs of 2 minibatches (one gradient step
    per 320 frames), lr 1e-4, on the ICLR19 ``original`` image architecture of the paper's RL figures, with
    ``overrides``. It is the recipe whose episodes-to-99% compare with the paper's tables; a GPU is filled by
    running many seeds of it at once (``trainer_for(config, seed_axis="seeds").run_seeds``), not by more
    worlds per run."""
    return PPOConfig(**{"arch": "original", **overrides})


#: the throughput recipe at full scale (``throughput_config``) and at the CPU scale its tests and scripts run
THROUGHPUT = dict(num_envs=4096, num_steps=20, minibatch_frames=10_240, update_epochs=4, lr=5e-4)


def throughput_config(scale: float = 1.0, **overrides: Any) -> PPOConfig:
    """Returns the recipe for thousands of worlds on an accelerator: 4096 worlds x 20 frames (81,920 frames an
    update), 4 epochs of 8 minibatches of 10,240 frames (one gradient step per 2,560 frames, 32 steps an
    update), lr 5e-4. Against the paper's recipe it trades sample efficiency (8x fewer gradient steps per
    frame, partly made up by the larger learning rate on the larger minibatches) for 64x the worlds, whose
    frames a GPU produces almost for free; ``benchmarks/gpu_suite.py`` (part ``ppo``) measures its wall-clock
    time to 99%. ``scale`` multiplies the worlds and the minibatch (0.0625: 256 worlds, the CPU scale that
    shows it learning); ``overrides`` replace fields."""
    fields = dict(THROUGHPUT, total_frames=200_000_000)
    num_envs = round(fields["num_envs"] * scale)
    sequences = round(fields["minibatch_frames"] * scale) // fields["num_steps"]
    if not (scale > 0 and num_envs >= 1 and sequences >= 1):
        raise ValueError(f"scale {scale!r} leaves no world or no minibatch sequence; use at least {1 / 512}")
    fields.update(num_envs=num_envs, minibatch_frames=sequences * fields["num_steps"])
    fields.update(overrides)
    return PPOConfig(**fields)


def a2c_config(**overrides: Any) -> PPOConfig:
    """Returns A2C as Watch-And-Help trains its helpers: RMSprop (lr 1e-3, alpha 0.99, eps 1e-5), one
    gradient step per update over all the frames, 64 worlds x 20 frames, BPTT 20, no reward scaling."""
    fields = dict(
        algo="a2c",
        optimizer="rmsprop",
        lr=1e-3,
        num_steps=20,
        recurrence=20,
        update_epochs=1,
        minibatch_frames=64 * 20,
        gae_lambda=1.0,
        reward_scale=1.0,
    )
    fields.update(overrides)
    return PPOConfig(**fields)


@struct.dataclass
class Runner:
    """Everything a run carries from one update to the next (``N`` worlds).

    Attributes:
        params, batch_stats: the model's variables (``batch_stats`` empty without BatchNorm).
        opt_state: the optimizer's state.
        env_states, obs: the worlds' states and current observations (leading axis ``N``).
        done: ``bool[N]`` the previous frame ended the world's episode (its memory is reset).
        memory: the policy's memory (a pytree, leading axis ``N``).
        key: the run's PRNG key.
        update: ``int32[]`` updates done.
        episode_return, episode_length: ``[N]`` of the episodes in progress (env rewards).
    """

    params: Any
    batch_stats: Any
    opt_state: Any
    env_states: Any
    obs: Any
    done: jax.Array
    memory: jax.Array
    key: jax.Array
    update: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array


class Transition(struct.PyTreeNode):
    """One frame of every world: ``obs`` ``[N, ...]``, and ``[N]`` arrays. ``discount`` is the frame's own
    discount ``float32[N]`` when the environment reports one (``info["option_discount"]``: a semi-MDP step
    that took several primitive steps), else None (the config's ``gamma``)."""

    obs: Any
    mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array
    discount: jax.Array | None = None


def gae(values, rewards, dones, last_value, gamma: float, lam: float, discounts: jax.Array | None = None):
    """Returns ``(advantages, returns)`` ``float32[T, N]`` from ``[T, N]`` values, rewards and dones (the frame
    ended its episode) and the bootstrap ``last_value [N]``; ``next_mask = 1 - done`` as the reference.

    ``discounts`` (``float32[T, N]``, optional) replaces ``gamma`` frame by frame (a semi-MDP's ``gamma ** tau``
    for a step of ``tau`` primitive steps): ``delta_t = r_t + d_t V_{t+1} (1 - done_t) - V_t`` and ``A_t = delta_t
    + d_t lam (1 - done_t) A_{t+1}``. Without it every frame's discount is ``gamma`` (the same computation as
    before discounts existed, bit for bit)."""

    def body(carry, x):
        advantage, next_value = carry
        if discounts is None:
            value, reward, done = x
            discount = gamma
        else:
            value, reward, done, discount = x
        next_mask = 1.0 - done
        delta = reward + discount * next_value * next_mask - value
        advantage = delta + discount * lam * next_mask * advantage
        return (advantage, value), advantage

    xs = (values, rewards, dones.astype(jnp.float32))
    if discounts is not None:
        xs = xs + (jnp.asarray(discounts, jnp.float32),)
    _, advantages = jax.lax.scan(body, (jnp.zeros_like(last_value), last_value), xs, reverse=True)
    return advantages, advantages + values


def _tree_index(tree: Any, index: Any) -> Any:
    return jax.tree_util.tree_map(lambda x: x[index], tree)


class Trainer:
    """PPO/A2C for one config (module docstring). ``env`` and ``env_params`` default to ``make(config.env_id)``;
    the policy is ``network`` (any module of the policy protocol, ``networks.registry``) or, by default, the
    registered network ``config.network`` built from the config.

    Raises:
        ValueError: an environment whose observations do not fit the network (e.g. the BabyAI network on an
            env without ``mission``, or token ids beyond its vocabulary).
    """

    def __init__(
        self,
        config: PPOConfig,
        env: Any = None,
        env_params: Any = None,
        network: Any = None,
        seed_axis: str | None = None,
    ) -> None:
        if env is None:
            env, made = make_env(config)
            env_params = made if env_params is None else env_params
        env_params = env.default_params() if env_params is None else env_params
        from jaxsoc.core.multi_agent import MultiAgentEnvironment

        if isinstance(env, MultiAgentEnvironment):
            stem = config.env_id.rsplit("-v", 1)[0] + "-"
            views = [name for name in jaxsoc.registered_envs() if name.startswith(stem) and name != config.env_id]
            hint = f"; train one agent's view instead: {', '.join(views)}" if views else ""
            raise ValueError(f"{config.env_id} has several agents ({', '.join(env.agents)}){hint}")
        self.config = config
        self.env, self.env_params = env, env_params
        self.num_actions = int(env.action_space(env_params).n)
        if network is None:
            space = env.observation_space(env_params)
            try:
                network = registry.build(config.network, config.model_config(self.num_actions), space)
            except ValueError as error:
                raise ValueError(f"{config.env_id}: {error}") from error
        self.model = network
        self.model_config = network.config
        self.tx = self._optimizer()
        self._pool_sizes = pool_sizes(config.num_envs)
        self.seed_axis = seed_axis
        if config.pool_resets:
            self._env_step = batched_step(env, axis_name=seed_axis)
        else:
            vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))
            self._env_step = lambda key, s, a, p: vstep(jax.random.split(key, a.shape[0]), s, a, p)

    def _optimizer(self) -> optax.GradientTransformation:
        c = self.config
        if c.optimizer == "adam":
            opt = optax.adam(c.lr, eps=c.adam_eps)
        else:  # PyTorch's RMSprop adds eps outside the square root, as optax's default
            opt = optax.rmsprop(c.lr, decay=c.rmsprop_alpha, eps=c.adam_eps)
        return optax.chain(optax.clip_by_global_norm(c.max_grad_norm), opt)

    # -- state ---------------------------------------------------------------------------------------------
    @functools.partial(jax.jit, static_argnums=0)
    def init(self, key: jax.Array) -> Runner:
        """Returns a fresh ``Runner``: model initialised from ``key``, ``num_envs`` reset worlds."""
        c = self.config
        key, key_model, key_env = jax.random.split(key, 3)
        reset = jax.vmap(self.env.reset_env, in_axes=(0, None))
        obs, env_states = reset(jax.random.split(key_env, c.num_envs), self.env_params)
        memory = self.model.initial_memory(c.num_envs)
        variables = self.model.init(key_model, obs, memory)
        params = variables["params"]
        zeros = jnp.zeros(c.num_envs)
        return Runner(
            params=params,
            batch_stats=variables.get("batch_stats", {}),
            opt_state=self.tx.init(params),
            env_states=env_states,
            obs=obs,
            done=jnp.zeros(c.num_envs, bool),
            memory=memory,
            key=key,
            update=jnp.zeros((), jnp.int32),
            episode_return=zeros,
            episode_length=zeros.astype(jnp.int32),
        )

    def variables(self, runner: Runner) -> dict[str, Any]:
        """Returns the model variables ``{"params", "batch_stats"?}`` of ``runner`` (for the network's ``apply``)."""
        out = {"params": runner.params}
        if runner.batch_stats:
            out["batch_stats"] = runner.batch_stats
        return out

    def _apply(self, params, batch_stats, obs, memory, context):
        """Returns ``((log_probs, value, memory), batch_stats)``: the network's ``step`` in train mode (batch
        statistics) on ``obs`` with its per-episode ``context``."""
        variables = {"params": params}
        args = (obs, context, memory)
        if batch_stats:
            variables["batch_stats"] = batch_stats
            out, updates = self.model.apply(variables, *args, train=True, mutable=["batch_stats"], method="step")
            return out, updates["batch_stats"]
        return self.model.apply(variables, *args, train=True, method="step"), batch_stats

    def context(self, params, obs):
        """Returns the network's per-episode context of ``obs`` (leading axis ``N``) under ``params``."""
        return self.model.apply({"params": params}, obs, method="encode_context")

    def _refresh_context(self, params, obs, done, context):
        """Returns ``context`` recomputed for the worlds that start a new episode (``done``): in a pool sized to
        their number with ``pool_resets``, else for every world and selected."""
        if not self.config.cache_context:
            return self.context(params, obs)
        if not self.config.pool_resets:
            return select_rows(done, self.context(params, obs), context)

        def encode(rows):
            return self.context(params, jax.tree_util.tree_map(lambda x: x[rows], obs))

        return pooled(done, encode, context, self._pool_sizes, self.seed_axis)

    # -- acting --------------------------------------------------------------------------------------------
    def _act(self, carry, _):
        runner, context = carry
        c = self.config
        key, key_action, key_env = jax.random.split(runner.key, 3)
        mask = 1.0 - runner.done.astype(jnp.float32)
        memory = registry.reset_memory(runner.memory, mask)
        (log_probs, value, new_memory), batch_stats = self._apply(
            runner.params, runner.batch_stats, runner.obs, memory, context
        )
        action = jax.random.categorical(key_action, log_probs)
        log_prob = jnp.take_along_axis(log_probs, action[:, None], axis=-1)[:, 0]
        obs, env_states, reward, terminated, truncated, info = self._env_step(
            key_env, runner.env_states, action, self.env_params
        )
        done = terminated | truncated
        episode_return = runner.episode_return + reward
        episode_length = runner.episode_length + 1
        stats = {
            "episodes": done.sum(),
            "successes": (done & info["success"]).sum(),
            "return_sum": jnp.where(done, episode_return, 0.0).sum(),
            "length_sum": jnp.where(done, episode_length, 0).sum(),
        }
        discount = info.get("option_discount")  # a semi-MDP env's gamma ** tau; None: the config's gamma
        discount = None if discount is None else jnp.asarray(discount, jnp.float32)
        transition = Transition(runner.obs, mask, action, log_prob, value, reward * c.reward_scale, done, discount)
        runner = runner.replace(
            batch_stats=batch_stats,
            env_states=env_states,
            obs=obs,
            done=done,
            memory=new_memory,
            key=key,
            episode_return=jnp.where(done, 0.0, episode_return),
            episode_length=jnp.where(done, 0, episode_length),
        )
        context = self._refresh_context(runner.params, obs, done, context)
        return (runner, context), (transition, stats)

    def _collect(self, runner: Runner):
        """Returns ``(runner, context, transitions [T, N], start_memory [C, N, ...], stats)`` for one update's
        frames; ``start_memory[c]`` is the (unmasked) memory at frame ``c * recurrence`` and ``context`` the
        per-episode context of the final observations. The context is computed afresh here (the parameters
        changed since the last update) and then only for worlds that start an episode."""
        c = self.config

        def chunk(carry, _):
            start = carry[0].memory
            carry, (transitions, stats) = jax.lax.scan(self._act, carry, None, length=c.recurrence)
            return carry, (start, transitions, stats)

        carry = (runner, self.context(runner.params, runner.obs))
        (runner, context), (starts, transitions, stats) = jax.lax.scan(
            chunk, carry, None, length=c.num_steps // c.recurrence
        )
        merge = lambda x: x.reshape((c.num_steps,) + x.shape[2:])  # noqa: E731
        transitions = jax.tree_util.tree_map(merge, transitions)
        stats = jax.tree_util.tree_map(lambda x: x.sum(), stats)
        return runner, context, transitions, starts, stats

    # -- learning ------------------------------------------------------------------------------------------
    def _sequence_loss(self, params, batch_stats, start_memory, seq: Transition, advantages, returns):
        """Returns ``(loss, (batch_stats, metrics))`` of a minibatch of sequences (``seq`` arrays ``[R, M]``)."""
        c = self.config

        def step(carry, x):
            memory, batch_stats = carry
            t, adv, ret, context = x
            (log_probs, value, memory), batch_stats = self._apply(
                params, batch_stats, t.obs, registry.reset_memory(memory, t.mask), context
            )
            log_prob = jnp.take_along_axis(log_probs, t.action[:, None], axis=-1)[:, 0]
            entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1).mean()
            if c.algo == "ppo":
                ratio = jnp.exp(log_prob - t.log_prob)
                clipped = jnp.clip(ratio, 1.0 - c.clip_eps, 1.0 + c.clip_eps)
                policy_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
                value_clipped = t.value + jnp.clip(value - t.value, -c.clip_eps, c.clip_eps)
                value_loss = jnp.maximum((value - ret) ** 2, (value_clipped - ret) ** 2).mean()
                clip_frac = (jnp.abs(ratio - 1.0) > c.clip_eps).mean()
                kl = (t.log_prob - log_prob).mean()
            else:
                policy_loss = -(adv * log_prob).mean()
                value_loss = ((value - ret) ** 2).mean()
                clip_frac = kl = jnp.zeros(())
            loss = policy_loss - c.entropy_coef * entropy + c.value_coef * value_loss
            metrics = {
                "loss": loss,
                "policy_loss": policy_loss,
                "value_loss": value_loss,
                "entropy": entropy,
                "clip_fraction": clip_frac,
                "approx_kl": kl,
                "value": value.mean(),
            }
            return (memory, batch_stats), metrics

        # the contexts (missions) of all R x M frames in one batched pass: they do not depend on the memory
        steps, num = seq.action.shape
        flat = jax.tree_util.tree_map(lambda x: x.reshape((steps * num,) + x.shape[2:]), seq.obs)
        context = jax.tree_util.tree_map(lambda x: x.reshape((steps, num) + x.shape[1:]), self.context(params, flat))
        xs = (seq, advantages, returns, context)
        (_, batch_stats), metrics = jax.lax.scan(step, (start_memory, batch_stats), xs)
        metrics = jax.tree_util.tree_map(jnp.mean, metrics)
        return metrics["loss"], (batch_stats, metrics)

    def _learn(self, runner: Runner, transitions: Transition, starts, advantages, returns):
        """Returns ``(runner, metrics)`` after the algorithm's epochs of minibatch steps."""
        c = self.config
        n = c.num_envs
        chunks = c.num_steps // c.recurrence
        num_sequences = chunks * n
        per_batch = c.minibatch_frames // c.recurrence
        num_batches = num_sequences // per_batch

        # [T, N] -> [C, R, N] -> sequences [S = C * N, R]
        def to_seq(x):
            x = jnp.swapaxes(x.reshape((chunks, c.recurrence, n) + x.shape[2:]), 1, 2)
            return x.reshape((num_sequences, c.recurrence) + x.shape[3:])

        data = jax.tree_util.tree_map(to_seq, (transitions, advantages, returns))
        starts = jax.tree_util.tree_map(lambda x: x.reshape((num_sequences,) + x.shape[2:]), starts)
        grad_fn = jax.value_and_grad(self._sequence_loss, has_aux=True)

        def minibatch(carry, ids):
            params, batch_stats, opt_state = carry
            seq, adv, ret = jax.tree_util.tree_map(lambda x: jnp.swapaxes(x[ids], 0, 1), data)
            if c.normalize_advantages:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            start = jax.tree_util.tree_map(lambda x: x[ids], starts)
            (_, (batch_stats, metrics)), grads = grad_fn(params, batch_stats, start, seq, adv, ret)
            updates, opt_state = self.tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            metrics["grad_norm"] = optax.tree.norm(grads)
            return (params, batch_stats, opt_state), metrics

        def epoch(carry, key):
            order = jax.random.permutation(key, num_sequences) if c.algo == "ppo" else jnp.arange(num_sequences)
            return jax.lax.scan(minibatch, carry, order.reshape(num_batches, per_batch))

        key, key_epochs = jax.random.split(runner.key)
        epochs = c.update_epochs if c.algo == "ppo" else 1
        carry = (runner.params, runner.batch_stats, runner.opt_state)
        (params, batch_stats, opt_state), metrics = jax.lax.scan(epoch, carry, jax.random.split(key_epochs, epochs))
        runner = runner.replace(params=params, batch_stats=batch_stats, opt_state=opt_state, key=key)
        return runner, jax.tree_util.tree_map(jnp.mean, metrics)

    def update(self, runner: Runner) -> tuple[Runner, dict[str, jax.Array]]:
        """Returns ``(runner, metrics)`` after one update (collect, GAE, learn). ``metrics`` are scalars:
        ``frames`` (of the run so far), ``episodes``, ``success_rate``/``mean_return``/``mean_length`` of the
        episodes that ended in this update (NaN if none), and the mean losses."""
        c = self.config
        runner, context, transitions, starts, stats = self._collect(runner)
        memory = registry.reset_memory(runner.memory, 1.0 - runner.done.astype(jnp.float32))
        (_, last_value, _), _ = self._apply(runner.params, runner.batch_stats, runner.obs, memory, context)
        advantages, returns = gae(
            transitions.value,
            transitions.reward,
            transitions.done,
            last_value,
            c.gamma,
            c.gae_lambda,
            transitions.discount,
        )
        runner, metrics = self._learn(runner, transitions, starts, advantages, returns)
        runner = runner.replace(update=runner.update + 1)
        episodes = stats["episodes"]
        per_episode = lambda x: jnp.where(episodes > 0, x / jnp.maximum(episodes, 1), jnp.nan)  # noqa: E731
        metrics.update(
            update=runner.update,
            frames=runner.update * c.frames_per_update,
            episodes=episodes,
            success_rate=per_episode(stats["successes"]),
            mean_return=per_episode(stats["return_sum"]),
            mean_length=per_episode(stats["length_sum"]),
        )
        return runner, metrics

    @functools.partial(jax.jit, static_argnums=(0, 2), donate_argnums=1)
    def run(self, runner: Runner, num_updates: int, stop: jax.Array | int | None = None):
        """Returns ``(runner, metrics)`` after ``num_updates`` updates (one jitted ``lax.scan``); every metric
        has a leading axis ``[num_updates]``. ``runner``'s buffers are donated (do not use it afterwards).

        With ``stop`` (a traced ``int32[]``: no recompilation per value) the updates that would go beyond
        update number ``stop`` are computed but discarded: the runner stays at ``stop`` and their metrics have
        ``active`` False. One compiled length then serves a run whose length is not a multiple of it."""
        return self._run(runner, num_updates, stop)

    def _run(self, runner: Runner, num_updates: int, stop: jax.Array | int | None):
        stop = jnp.iinfo(jnp.int32).max if stop is None else stop

        def body(runner, _):
            new, metrics = self.update(runner)
            active = runner.update < stop
            kept = jax.tree_util.tree_map(lambda x, y: jax.lax.select(active, x, y), new, runner)
            return kept, dict(metrics, active=active)

        return jax.lax.scan(body, runner, None, length=num_updates)

    @functools.partial(jax.jit, static_argnums=0)
    def init_seeds(self, keys: jax.Array) -> Runner:
        """Returns one ``Runner`` per key of ``keys`` (``[S]``), stacked on a leading seed axis."""
        return jax.vmap(self.init)(keys)

    @functools.partial(jax.jit, static_argnums=(0, 2), donate_argnums=1)
    def run_seeds(self, runners: Runner, num_updates: int, stop: jax.Array | int | None = None):
        """``run`` for ``S`` independent runs at once (``init_seeds``), ``vmap``ped over the seed axis (named
        ``seed_axis``, so pooled resets keep a real switch: ``trainer_for(config, seed_axis="seeds")``);
        every output has a leading seed axis."""
        run = functools.partial(self._run, num_updates=num_updates, stop=stop)
        return jax.vmap(run, axis_name=self.seed_axis)(runners)

    def train(self, key: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        """Returns ``(runner, metrics [num_updates])`` of a whole run from ``key``; pure, so
        ``jax.jit(jax.vmap(trainer.train))(keys)`` trains one model per key (use ``pool_resets=False``)."""
        runner = self.init(key)
        return jax.lax.scan(lambda r, _: self.update(r), runner, None, length=self.config.num_updates)

    def __hash__(self) -> int:  # jit's static self: one compiled run per trainer
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


@functools.lru_cache(maxsize=8)
def _cached_trainer(config: PPOConfig, seed_axis: str | None) -> Trainer:
    return Trainer(config, seed_axis=seed_axis)


def trainer_for(config: PPOConfig, seed_axis: str | None = None) -> Trainer:
    """Returns a ``Trainer`` for ``config`` on ``make(config.env_id)``, shared by every config that differs
    only in ``total_frames`` (so a resumed or extended run reuses the compiled updates). Use ``config`` itself,
    not the trainer's, for the number of updates. ``seed_axis`` names the seed axis of ``run_seeds``."""
    return _cached_trainer(dataclasses.replace(config, total_frames=config.frames_per_update), seed_axis)
