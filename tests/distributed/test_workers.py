"""The one Ray stack (envs.remote): seeds dealt to workers and gathered back, and its
place among the layers (no Ray, no training module, until a worker is made)."""

from __future__ import annotations

from envs.remote.workers import deal, gather
from tests.fresh import run_python


def test_deal_is_the_seeds_rule_and_gather_undoes_it() -> None:
    seeds = list(range(11, 18))
    shares = deal(seeds, 3)
    # Episode i (seed 11 + i) belongs to worker i mod 3.
    assert shares == [[11, 14, 17], [12, 15], [13, 16]]
    assert gather(shares) == seeds
    # Fewer items than workers: the idle workers get nothing to do.
    assert deal([5], 4) == [[5]]
    assert gather(deal(list(range(9)), 1)) == list(range(9))
    assert gather([[f"w{w}e{i}" for i in range(w, 10, 4)] for w in range(4)]) == [
        f"w{i % 4}e{i}" for i in range(10)]


def test_the_stack_sits_below_training_and_loads_ray_on_first_use() -> None:
    code = (
        "import sys\n"
        "import envs.remote.battles, envs.remote.cluster, envs.remote.workers\n"
        "import envs.remote_multi_battalion_env\n"
        "assert 'ray' not in sys.modules, 'Ray was imported'\n"
        "above = sorted(m for m in sys.modules if m.split('.')[0] in ('training', 'models',\n"
        "                                                            'benchmarks'))\n"
        "assert not above, above\n"
        "from envs.remote.workers import remote_class\n"
        "from envs.remote_multi_battalion_env import MultiBattalionBatchEnv as E\n"
        "import envs.remote_multi_battalion_env as m\n"
        "assert m.RemoteMultiBattalionEnv is remote_class(E)  # one actor class\n"
        "print('ok')\n"
    )
    assert run_python(["-c", code], timeout=300).strip() == "ok"
