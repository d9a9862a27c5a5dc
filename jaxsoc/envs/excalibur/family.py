"""EXCALIBUR's declaration (``core.family.EnvFamily``): one id per reward variant (``env.VARIANTS``)."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily

#: the registered ids by reward variant (``env.VARIANTS``)
IDS = {
    "answers": "EXCALIBUR-v0",
    "qa": "EXCALIBUR-QA-v0",
    "novelty": "EXCALIBUR-Novelty-v0",
    "novelty_qa": "EXCALIBUR-NoveltyQA-v0",
}


def _register(add) -> None:
    """Registers one id per reward variant (each built on first ``make``: its house banks load then)."""

    def variant(name: str):
        def make():
            from jaxsoc.envs.excalibur.env import ExcaliburEnv

            return ExcaliburEnv(name)

        return make

    for name, env_id in IDS.items():
        add(env_id, variant(name))


FAMILY = EnvFamily(
    name="excalibur",
    title="EXCALIBUR",
    order=50,
    prefixes=("EXCALIBUR-",),
    ids=lambda: tuple(IDS.values()),
    register=_register,
)
