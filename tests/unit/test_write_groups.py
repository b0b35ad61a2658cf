"""Due partitions grouped into write tasks: each once, consecutive, and shares of like bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from segcompact.format.attributes import Compression
from segcompact.spark.materialize import _TASK_FIXED_BYTES, Plan, groups
from segcompact.storage import Storage


def _plan(topic: str, partition: int, read_bytes: int) -> Plan:
    return Plan(
        topic, partition, 1, 0, 10, Compression.NONE, 1 << 30, 4096, "/out", Storage(),
        f"v1-{topic}-{partition}", ("forced",), False, 0, 0, read_bytes,
    )  # fmt: skip


_PLANS = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 50)),
    st.integers(0, 1 << 32),
    max_size=60,
).map(lambda d: [_plan(t, p, b) for (t, p), b in d.items()])


@given(_PLANS, st.integers(1, 16))
def test_every_plan_is_written_once_in_partition_order(plans: list[Plan], tasks: int) -> None:
    grouped = groups(plans, tasks)
    flat = [(p.topic, p.partition) for g in grouped for p in g]
    assert flat == sorted((p.topic, p.partition) for p in plans)
    assert all(grouped)


@given(_PLANS, st.integers(1, 16))
def test_a_group_holds_one_share_unless_one_partition_is_bigger(
    plans: list[Plan], tasks: int
) -> None:
    weight = {(p.topic, p.partition): p.read_bytes + _TASK_FIXED_BYTES for p in plans}
    share = -(-sum(weight.values()) // tasks) if plans else 0
    grouped = groups(plans, tasks)
    for group in grouped:
        size = sum(weight[(p.topic, p.partition)] for p in group)
        assert size <= share or len(group) == 1
    # Greedy packing in order: at most about twice the tasks asked for.
    assert len(grouped) <= 2 * tasks


def test_small_partitions_share_a_task() -> None:
    plans = [_plan("t", p, 1000) for p in range(4096)]
    grouped = groups(plans, 4)
    assert len(grouped) == 4 and {len(g) for g in grouped} == {1024}
