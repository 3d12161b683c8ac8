"""SampleSynchronizer, ArrivalPairer and StampedBuffer: pairs by stamp independent of arrival
order, unstamped samples in arrival order, the joint state of a stamp."""

from __future__ import annotations

import itertools

import pytest

from humanoid_balance.core.sync import ArrivalPairer, SampleSynchronizer, StampedBuffer
from humanoid_balance.exceptions import ConfigurationError

MS = 1_000_000


def _sets(order: list[tuple[str, int]], tolerance: int = MS) -> list[tuple[int, int, int]]:
    sync = SampleSynchronizer(("left", "right"), tolerance)
    out = []
    for side, stamp in order:
        joined = sync.push(side, stamp, f"{side}{stamp}")
        if joined is not None:
            out.append((joined.stamp_ns, joined.samples["left"][0], joined.samples["right"][0]))
    return out


def test_equal_stamps_pair_whatever_the_arrival_order() -> None:
    """Feet stamped alike pair one to one whether left or right arrives first, or a foot runs ahead."""
    stamps = [k * MS for k in range(1, 6)]
    in_turn = [(side, t) for t in stamps for side in ("left", "right")]
    right_first = [(side, t) for t in stamps for side in ("right", "left")]
    left_ahead = [("left", stamps[0]), ("left", stamps[1]), ("right", stamps[0]), ("right", stamps[1]),
                  *[(side, t) for t in stamps[2:] for side in ("left", "right")]]
    expected = [(t, t, t) for t in stamps]
    for order in (in_turn, right_first, left_ahead):
        assert _sets(order) == expected


def test_unsynchronised_clocks_pair_within_the_tolerance() -> None:
    """Right stamped 0.4 ms after left: pairs within a 0.5 ms tolerance, set stamp = newest."""
    order = list(itertools.chain.from_iterable(
        (("left", k * MS), ("right", k * MS + 400_000)) for k in range(1, 4)))
    assert _sets(order, 500_000) == [(k * MS + 400_000, k * MS, k * MS + 400_000) for k in range(1, 4)]
    assert _sets(order, 300_000) == []


def test_a_sample_without_partner_is_dropped_and_counted() -> None:
    """A left sample whose right partner never came is skipped over and counted once paired past."""
    sync = SampleSynchronizer(("left", "right"), 0)
    sync.push("left", 1 * MS, None)
    sync.push("left", 2 * MS, None)
    joined = sync.push("right", 2 * MS, None)
    assert joined is not None and joined.samples["left"][0] == 2 * MS
    assert sync.dropped == 1


def test_each_sample_is_used_once() -> None:
    """A repeated stamp of one foot does not make a second set with an already used partner."""
    sync = SampleSynchronizer(("left", "right"), 0)
    assert sync.push("left", MS, 1) is None
    assert sync.push("right", MS, 2) is not None
    assert sync.push("right", MS, 3) is None


def test_time_going_back_restarts_the_pairing() -> None:
    """A replay started again (both feet's stamps back to 1 ms): sets form again from there."""
    stamps = [k * MS for k in range(1, 6)]
    once = [(side, t) for t in stamps for side in ("left", "right")]
    assert _sets(once + once) == [(t, t, t) for t in stamps] * 2


def test_time_going_back_drops_what_waited() -> None:
    """The first foot back in time restarts the pairing: what waited is dropped and counted, and
    the other foot's first sample after the restart pairs with it."""
    sync = SampleSynchronizer(("left", "right"), 0)
    sync.push("left", 5 * MS, None)
    assert sync.push("right", 5 * MS, None) is not None
    sync.push("right", 6 * MS, None)
    assert sync.push("left", 1 * MS, None) is None  # left restarted; right's 6 ms is dropped
    joined = sync.push("right", 1 * MS, None)
    assert joined is not None and joined.stamp_ns == 1 * MS
    assert sync.dropped == 1


def test_queue_is_bounded() -> None:
    """Samples of a foot whose partner is silent are kept up to queue_size, older ones dropped."""
    sync = SampleSynchronizer(("left", "right"), 0, queue_size=10)
    for k in range(25):
        assert sync.push("left", k * MS, k) is None
    assert sync.dropped == 15


@pytest.mark.parametrize("kwargs", [{"sensors": (), "tolerance_ns": 0},
                                    {"sensors": ("a",), "tolerance_ns": -1},
                                    {"sensors": ("a",), "tolerance_ns": 0, "queue_size": 0}])
def test_bad_configuration_is_refused(kwargs: dict[str, object]) -> None:
    """No sensor, a negative tolerance or an empty queue: ConfigurationError."""
    with pytest.raises(ConfigurationError):
        SampleSynchronizer(**kwargs)  # type: ignore[arg-type]


def test_buffer_gives_the_newest_at_or_before_and_knows_coverage() -> None:
    """at_or_before picks the newest value not after the stamp; covers says a later one arrived."""
    buffer: StampedBuffer[str] = StampedBuffer(5)
    for k in (1, 2, 4):
        buffer.push(k * MS, f"q{k}")
    assert buffer.at_or_before(3 * MS) == (2 * MS, "q2")
    assert buffer.at_or_before(4 * MS) == (4 * MS, "q4")
    assert buffer.at_or_before(0) is None
    assert buffer.covers(4 * MS) and not buffer.covers(5 * MS)
    assert buffer.newest() == (4 * MS, "q4")
    assert StampedBuffer(5).newest() is None


def test_buffer_restarts_when_time_goes_back() -> None:
    """A stamp older than the newest (a replay restarted) clears the buffer first."""
    buffer: StampedBuffer[int] = StampedBuffer(5)
    buffer.push(10 * MS, 1)
    buffer.push(2 * MS, 2)
    assert len(buffer) == 1 and buffer.at_or_before(10 * MS) == (2 * MS, 2)


# --- ArrivalPairer: the FSR arrays' join ---------------------------------------------------


def _joined_skews(lost: set[int], batches: int = 1,
                  periods: int = 2000) -> tuple[list[int], ArrivalPairer]:
    """Both feet's arrays every 1 ms (payload: its period), the right's of ``lost`` never
    arriving, each foot's delivered in batches of ``batches`` periods (one foot's batch before
    the other's); the left-minus-right period of every join, and the pairer."""
    pairer = ArrivalPairer(("left", "right"), max_age_ns=100 * MS)
    skews = []
    for start in range(0, periods, batches):
        for side in ("left", "right"):
            for k in range(start, start + batches):
                if side == "right" and k in lost:
                    continue
                joined = pairer.push(side, (start + batches) * MS, k)
                if joined is not None:
                    skews.append(joined.samples["left"][1] - joined.samples["right"][1])
    return skews, pairer


def test_lost_arrays_of_one_foot_are_resynchronised() -> None:
    """40 right arrays lost: the joins are 40 periods apart only until RESYNC_JOINS joins in a
    row left the left foot's arrays waiting, then period with period again (before: 40 ms apart
    for as long as the stream ran)."""
    skews, pairer = _joined_skews(set(range(100, 140)))
    assert skews[:100] == [0] * 100
    shifted = [s for s in skews if s != 0]
    assert shifted == [-40] * ArrivalPairer.RESYNC_JOINS  # the left array 40 periods older
    assert skews[-1000:] == [0] * 1000
    assert pairer.resyncs == 1 and pairer.dropped == 40


def test_batches_of_one_foot_before_the_other_are_no_loss() -> None:
    """Each foot's arrays handed over in batches of 20 (the left's first): every array is joined
    with the other foot's of its period, nothing dropped, no resynchronisation."""
    skews, pairer = _joined_skews(set(), batches=20)
    assert len(skews) == 2000 and set(skews) == {0}
    assert pairer.resyncs == 0 and pairer.dropped == 0


def test_arrivals_pair_stamped_with_the_later_one() -> None:
    """A pair takes the later arrival as its stamp; a sample older than max_age is dropped."""
    pairer = ArrivalPairer(("left", "right"), max_age_ns=10 * MS)
    assert pairer.push("left", 1 * MS, "a") is None
    joined = pairer.push("right", 3 * MS, "b")
    assert joined is not None and joined.stamp_ns == 3 * MS
    assert joined.samples == {"left": (1 * MS, "a"), "right": (3 * MS, "b")}
    pairer.push("left", 4 * MS, "c")
    assert pairer.push("right", 15 * MS, "d") is None  # "c" waited 11 ms: dropped
    assert pairer.dropped == 1


def test_set_limits_changes_what_each_joiner_uses() -> None:
    """set_limits: the synchronizer takes the tolerance, the pairer the longest wait."""
    sync = SampleSynchronizer(("left", "right"), 0)
    sync.set_limits(tolerance_ns=MS, max_age_ns=5 * MS)
    sync.push("left", 0, None)
    assert sync.push("right", MS, None) is not None
    pairer = ArrivalPairer(("left", "right"), max_age_ns=MS)
    pairer.set_limits(tolerance_ns=0, max_age_ns=50 * MS)
    pairer.push("left", 0, None)
    assert pairer.push("right", 40 * MS, None) is not None
