"""``--time-limit`` on the GPU suite: a part starts after the first only when its whole budget fits."""

from jaxsoc.gpu_suite import core


def _part(name: str, budget_s: float, ran: list[str]) -> core.Part:
    def run(ctx):
        ran.append(name)
        yield {"key": name}

    return core.Part(name, name, run, lambda rows: "", budget_s=budget_s, params={}, toy={})


def test_a_part_whose_budget_does_not_fit_is_not_started(tmp_path):
    ran: list[str] = []
    parts = [_part("first", 500, ran), _part("big", 400, ran), _part("small", 1, ran)]
    results = core.run_suite(parts, tmp_path, None, toy=True, budget_minutes=25, time_limit_s=100)
    # the first part runs although its budget is over the limit; "big" (400 s > ~100 s left) waits for a rerun
    assert ran == ["first", "small"] and set(results) == {"first", "small"}


def test_nothing_starts_once_the_limit_has_passed(tmp_path):
    ran: list[str] = []
    results = core.run_suite([_part("a", 1, ran)], tmp_path, None, toy=True, budget_minutes=25, time_limit_s=0)
    assert ran == [] and results == {}
