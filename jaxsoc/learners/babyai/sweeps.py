"""The grid family's sample-efficiency reference (``REFERENCE``, found by ``learners.sweeps.reference_for``): the
BabyAI paper's Table 3 and the BabyAI 1.1 figures the sweep reports list beside the measured ones, the levels'
short names, the reference's RL window per level and the architecture of the paper's RL figures."""

from __future__ import annotations

from jaxsoc.learners.sweep_reference import SweepReference

#: the paper's Table 3, thousands of demonstrations (IL from the bot, a ``[k/√2, k]`` bracket) and of episodes
#: (RL, minimum and maximum over runs) to reach 99% success
PAPER_IL = {
    "GoToRedBallGrey": (5.7, 8.0),
    "GoToRedBall": (44.2, 62.5),
    "GoToLocal": (125.2, 177.0),
    "PickupLoc": (250.0, 354.0),
    "PutNextLocal": (354.0, 500.0),
    "GoTo": (250.0, 354.0),
}
#: the architecture of the paper's RL figures (ICLR19 ``expert_filmcnn``, jaxsoc's ``arch="original"``)
PAPER_RL_ARCH = "original"
PAPER_RL = {
    "GoToRedBallGrey": (377.0, 379.0),
    "GoToRedBall": (453.0, 470.0),
    "GoToLocal": (1167.0, 1320.0),
    "PickupLoc": (2591.0, 2608.0),
    "PutNextLocal": (1875.0, 2587.0),
    "GoTo": (1057.0, 2177.0),
}
#: BabyAI 1.1 (arXiv 2007.12770), thousands of RL episodes to 99% at lr 1e-4, per architecture: one figure per
#: level from a third-party summary of the paper (``models-and-excalibur.md`` §3.8), not checked against the PDF
BABYAI11_RL = {
    "original": {
        "GoToRedBallGrey": 21.0,
        "GoToRedBall": 273.0,
        "GoToLocal": 1311.0,
        "PickupLoc": 1797.0,
        "PutNextLocal": 2984.0,
        "GoTo": 1601.0,
    },
    "bow_endpool_res": {
        "GoToRedBallGrey": 24.0,
        "GoToRedBall": 177.0,
        "GoToLocal": 611.0,
        "PickupLoc": 982.0,
        "PutNextLocal": 876.0,
        "GoTo": 817.0,
    },
}


def level(env_id: str) -> str:
    """Returns the level's name in the tables: ``env_id`` without ``BabyAI-`` and ``-v0`` (``"GoToLocal"``)."""
    return env_id.removeprefix("BabyAI-").removesuffix("-v0")


def rl_window(env_id: str) -> int:
    """Returns the reference's ``rl_dataeff.py --window`` for a level, in logged rows: 10 for GoToRedBallGrey,
    100 otherwise (``EXPERIMENTS.md``)."""
    return 10 if level(env_id) == "GoToRedBallGrey" else 100


REFERENCE = SweepReference(
    level=level,
    rl_window=rl_window,
    rl_arch=PAPER_RL_ARCH,
    il_columns=(("paper", PAPER_IL),),
    rl_columns=(
        ("paper (ICLR19, original)", PAPER_RL),
        *((f"1.1 {arch}", BABYAI11_RL[arch]) for arch in ("original", "bow_endpool_res")),
    ),
    rl_note="The paper's figures are for the ICLR19 model (`arch=original`): compare rows run with that "
    "architecture. The BabyAI 1.1 figures (one per level and architecture, lr 1e-4) come from a third-party summary "
    "of arXiv 2007.12770 quoted in the reference notes and are not checked against the paper; — where none is "
    "known. ",
)
