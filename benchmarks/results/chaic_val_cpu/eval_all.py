"""The test split scored once (issue 59): w/o, RHP, BM (the re-trained model) and the options helper's training
seeds, with the functions of `jaxsoc chaic eval` (`evaluation.evaluate`'s loop: the same episodes, keys and
`metrics.summary`), in one process so that the constrained agent alone is played once and the helper seeds share one
compiled player (their parameters are its argument). Usage: python eval_all.py OUT SEEDS BM_RUN RUN_S0 [RUN_S1 ...]"""

import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.compile_cache import enable_compile_cache
from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import metrics as M
from jaxsoc.envs.chaic import play as P
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic.episode import parse_timing
from jaxsoc.envs.chaic.options import OptionPolicyHelper
from jaxsoc.learners.chaic.evaluation import _player, format_table, learned_helper, write_results

out, seeds, bm_run, *runs = sys.argv[1:]
enable_compile_cache()  # as the jaxsoc command does
seeds = int(seeds)
timing = parse_timing(None)
main = A.make_agent("main")
ppo = [learned_helper("ppo", run) for run in runs]
h0 = ppo[0]


@jax.jit
def run_ppo(params, states, keys, timing):
    agent = OptionPolicyHelper(h0.choose, params, h0.net_memory, h0.env_params, h0.partner, h0.rooms)
    return P.play(states, main, agent, timing, keys)


players = {"none": _player("none", None), "rhp": _player("rhp", None)}
players["bm"] = P.make_player(main, learned_helper("bm", bm_run))
results = {}
for task in K.TASKS:
    states = T.cached_split(task, "test", 0).states
    count = int(states.total.shape[0])
    batch = jax.tree_util.tree_map(lambda x, n=count: jnp.repeat(x[:n], seeds, axis=0), states)
    keys = jax.random.split(jax.random.key(0), count * seeds)
    raw = {}
    for label, run in players.items():
        start = time.perf_counter()
        raw[label] = jax.tree_util.tree_map(np.asarray, run(batch, keys, timing))
        print(f"  {task} / {label}: {time.perf_counter() - start:.1f} s", flush=True)
    for s, helper in enumerate(ppo):
        start = time.perf_counter()
        raw[f"ppo_s{s}"] = jax.tree_util.tree_map(np.asarray, run_ppo(helper.params, batch, keys, timing))
        print(f"  {task} / ppo_s{s}: {time.perf_counter() - start:.1f} s", flush=True)
    for r in raw.values():
        r.pop("final", None)
    shape = (count, seeds)
    results[task] = {h: M.summary(r, None if h == "none" else raw["none"], shape) for h, r in raw.items()}
    print(task, {h: round(m["tr"], 3) for h, m in results[task].items()}, flush=True)
    setting = {
        "split": "test",
        "task_seed": 0,
        "seeds": seeds,
        "seed": 0,
        "episodes": None,
        "max_events": None,
        "timing": {k: float(v) for k, v in vars(timing).items()},
        "device": jax.devices()[0].device_kind,
        "runs": {"bm": bm_run, **{f"ppo_s{s}": r for s, r in enumerate(runs)}},
    }
    write_results(Path(out), setting, results)  # after every task: a partial table survives an interruption
print(format_table(results))
