"""Multi-host training: two processes on localhost (CPU, gloo collectives, two devices each) train PPO together
through ``train_rl(..., distributed=True)`` and must end where one process with four devices ends: the same
metrics, the same state, and a checkpoint that one process restores. The run takes the default path of
``jaxsoc train`` (pooled resets, BatchNorm over all processes' worlds) and ends with the final evaluation.

The three runs are subprocesses started together (the pair cannot share this process's JAX, and jax reads the
device count at start-up); compilation dominates, so they use one tiny config and a cheaper LLVM optimisation
level. Every process has a deadline: a pair that waits forever for a dead peer is killed and the test fails
with the tails of all their stderr.

Tolerance: the pair reduces across processes with gloo, the reference within one process, so float sums are
added in another order; Adam turns gradient noise ``dg`` on near-zero gradients into parameter noise
``lr / eps * dg = 10 dg``. Measured after two updates: parameters differ by 2e-7 RMS and 1.4e-5 at most, in
a handful of entries. A real error (a gradient averaged over one process's worlds only, misplaced worlds)
moves the parameters by about the learning rate (1e-4) per step and in every entry, so the test asks for
an RMS under 2% of ``lr`` and a maximum under half of it. Several minibatch steps per update on 4-sequence
BatchNorm batches would amplify the reordering to 2e-4 (as much as between one process's 2- and 4-device
meshes), so the config takes one minibatch of the whole update.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from contextlib import ExitStack
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxsoc.learners.checkpoint import restore_raw
from jaxsoc.learners.rl_run import CHECKPOINTS

FIELDS = dict(
    env_id="BabyAI-GoToRedBallGrey-v0",
    preset="tiny",
    num_envs=8,
    num_steps=4,
    recurrence=4,
    minibatch_frames=32,  # one gradient step per update: see the module docstring
    update_epochs=1,
    total_frames=8 * 4 * 2,  # two updates
)
UPDATES = 2
EVAL_EPISODES = 4
DEADLINE_S = 540  # for all three processes together
#: compile time dominates a two-update run; level 0 roughly halves it and both sides use the same flags
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
LR = 1e-4  # PPOConfig's default
PARAMS_RMS, PARAMS_MAX = 0.02 * LR, 0.5 * LR  # see the module docstring
METRICS_RTOL, METRICS_ATOL = 1e-3, 1e-5  # measured: 4e-4 relative (grad_norm); approx_kl is 5e-6 of noise
STATE_TOL = 1e-3  # other float state (memory, BatchNorm averages, optimizer moments); measured 5e-4

WORKER = textwrap.dedent(
    """
    import json, sys
    import jax
    from jaxsoc.learners import ppo
    from jaxsoc.learners.rl_run import train_rl

    run_dir, fields, cluster = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    if cluster:  # a process of the pair: coordinator, num_processes, process_id
        where = dict(distributed=True, **cluster)
    else:  # the reference: every device of this one process
        where = dict(devices=jax.devices())
    summary = train_rl(ppo.PPOConfig(**fields), run_dir, chunk_updates=2, eval_episodes=EVAL, progress=False, **where)
    print("SUMMARY", json.dumps(summary))
    """
).replace("EVAL", str(EVAL_EPISODES))

#: environment variables by which jax.distributed would auto-detect a cluster this test is not part of
CLUSTER_PREFIXES = ("SLURM_", "OMPI_", "PMI_", "PMIX_", "TPU_", "MEGASCALE_", "JAX_COORDINATOR", "KUBERNETES_")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name: str, run_dir: Path, devices: int, cluster: dict | None, logs: Path, files: ExitStack) -> tuple:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLUSTER_PREFIXES)}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={devices} {FAST_COMPILE}")
    out, err = (files.enter_context(open(logs / f"{name}.{kind}", "w+")) for kind in ("out", "err"))  # noqa: SIM115
    args = [sys.executable, "-c", WORKER, str(run_dir), json.dumps(FIELDS), json.dumps(cluster)]
    return name, subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True), out, err


def tails(procs: list[tuple], chars: int = 3000) -> str:
    parts = []
    for name, proc, _, err in procs:
        err.seek(0)
        parts.append(f"--- {name} (exit {proc.returncode}) stderr tail:\n{err.read()[-chars:]}")
    return "\n".join(parts)


def run_all(procs: list[tuple]) -> dict[str, dict]:
    """Waits for every process (killing all at the deadline or once one fails); returns their summaries."""
    deadline = time.monotonic() + DEADLINE_S
    try:
        while any(proc.poll() is None for _, proc, _, _ in procs):
            failed = [name for name, proc, _, _ in procs if proc.returncode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                reason = f"{failed} failed" if failed else f"not done within {DEADLINE_S} s"
                for _, proc, _, _ in procs:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait(10)
                pytest.fail(f"{reason}\n{tails(procs)}")
            time.sleep(0.5)
        if any(proc.returncode for _, proc, _, _ in procs):
            pytest.fail(f"a process failed\n{tails(procs)}")
        summaries = {}
        for name, _, out, _ in procs:
            out.seek(0)
            lines = [line for line in out.read().splitlines() if line.startswith("SUMMARY ")]
            assert lines, f"{name} printed no summary\n{tails(procs)}"
            summaries[name] = json.loads(lines[-1].removeprefix("SUMMARY "))
        return summaries
    finally:
        for _, proc, _, _ in procs:
            if proc.poll() is None:
                proc.kill()


def check_state(pair, ref, where: str) -> None:
    """Integer, boolean and key leaves (the worlds, counters, PRNG keys) equal; float leaves close."""
    paths = jax.tree_util.tree_leaves_with_path(ref)
    assert jax.tree_util.tree_structure(pair) == jax.tree_util.tree_structure(ref), where
    for (path, want), got in zip(paths, jax.tree_util.tree_leaves(pair)):
        name = where + jax.tree_util.keystr(path)
        want, got = np.asarray(want), np.asarray(got)
        assert got.shape == want.shape and got.dtype == want.dtype, name
        if np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=STATE_TOL, atol=STATE_TOL, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def check_params(pair, ref) -> None:
    """The parameters: RMS and largest difference against the learning rate (module docstring)."""
    flat = [np.concatenate([np.ravel(x) for x in jax.tree_util.tree_leaves(tree)]) for tree in (pair, ref)]
    diff = np.abs(flat[0] - flat[1])
    rms, worst = float(np.sqrt(np.mean(diff**2))), float(diff.max())
    assert rms < PARAMS_RMS and worst < PARAMS_MAX, f"parameters differ by {rms:.2e} RMS, {worst:.2e} at most"


def test_importing_jaxsoc_starts_no_jax_backend():
    # jax.distributed.initialize() refuses to run once a backend exists, so no import may create one
    code = (
        "import jaxsoc, jaxsoc.cli\nfrom jaxsoc.cli import common, learn\nfrom jaxsoc.learners import rl_run\n"
        "from jax._src import xla_bridge\nassert not xla_bridge.backends_are_initialized()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]


@pytest.mark.slow  # 90 s; so is test_ppo's four-device test (CI: the cluster reaches train_rl)
def test_two_processes_train_as_one_process_with_four_devices(tmp_path):
    # all three at once: on two cores the reference compiles while the pair waits on each other
    coordinator = f"127.0.0.1:{free_port()}"
    with ExitStack() as files:
        procs = [start("reference", tmp_path / "reference", 4, None, tmp_path, files)]
        for i in range(2):
            cluster = dict(coordinator=coordinator, num_processes=2, process_id=i)
            procs.append(start(f"process{i}", tmp_path / "pair", 2, cluster, tmp_path, files))
        summaries = run_all(procs)

    # both processes: four devices, and one evaluation (the same replicated parameters): the reference's up to
    # an action flipped by the parameters' rounding (at most one episode of the few)
    ref, first, second = (summaries[name] for name in ("reference", "process0", "process1"))
    evals = [key for key in ref if key.startswith("eval_")]
    assert evals and {key: first[key] for key in evals} == {key: second[key] for key in evals}
    for summary in (ref, first):
        assert summary["num_devices"] == 4 and summary["updates"] == UPDATES
    assert first["eval_episodes"] == ref["eval_episodes"] == EVAL_EPISODES
    assert abs(first["eval_success_rate"] - ref["eval_success_rate"]) <= 1 / EVAL_EPISODES

    # the metrics: one file, written by process 0 only, equal to the reference's
    rows = {run: json.loads((tmp_path / run / "metrics.json").read_text())["rows"] for run in ("pair", "reference")}
    assert [r["update"] for r in rows["pair"]] == [r["update"] for r in rows["reference"]] == [1, 2]
    for got, want in zip(rows["pair"], rows["reference"]):
        for key, value in want.items():
            if key in ("sps", "wall_s"):
                continue
            if value is None or isinstance(value, int):  # counts, and statistics of the episodes that ended
                assert got[key] == value, key
            else:
                assert got[key] == pytest.approx(value, rel=METRICS_RTOL, abs=METRICS_ATOL), (key, got[key], value)

    # the checkpoint the pair wrote together, restored in this one process, holds the reference's state
    pair = restore_raw(tmp_path / "pair" / CHECKPOINTS, UPDATES)
    ref_state = restore_raw(tmp_path / "reference" / CHECKPOINTS, UPDATES)
    assert sorted(pair) == sorted(ref_state)
    assert int(pair["update"]) == UPDATES
    check_params(pair["params"], ref_state["params"])
    for key in ref_state:
        check_state(pair[key], ref_state[key], key)


def test_the_command_line_passes_the_cluster_to_train_rl(monkeypatch, capsys):
    from jaxsoc.cli import main
    from jaxsoc.learners import rl_run

    calls = []

    def fake_train_rl(config, out, **kwargs):
        calls.append(kwargs)
        raise ValueError("stop here")

    monkeypatch.setattr(rl_run, "train_rl", fake_train_rl)
    base = ["train", "ppo", "--preset", "tiny", "--out", "unused", "--devices", "0"]
    cluster = ["--coordinator", "10.0.0.1:1234", "--num-processes", "2", "--process-id", "1"]
    assert main([*base, *cluster]) == 2 and "stop here" in capsys.readouterr().err
    assert main([*base, "--distributed"]) == 2
    # --devices is left to the distributed run (listing devices first would start JAX before it could join)
    want = dict(distributed=True, devices=None, coordinator="10.0.0.1:1234", num_processes=2, process_id=1)
    assert {key: calls[0][key] for key in want} == want
    auto = dict(distributed=True, devices=None, coordinator=None, num_processes=None, process_id=None)
    assert {key: calls[1][key] for key in auto} == auto
