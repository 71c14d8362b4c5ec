"""The rate-limit gate: AIMD concurrency on 429 and rpm/tpm budgets, on a fake clock."""

from __future__ import annotations

import threading

import pytest

from geval_core.run.pacing import Gate


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_429_halves_the_calls_in_flight_and_successes_grow_them_back():
    gate = Gate(16)
    for _ in range(3):
        assert gate.enter()
        gate.leave(throttled=True)
    assert gate.current == 2 and gate.throttled == 3
    grown = 0
    while gate.current < 16:
        gate.enter()
        gate.leave()
        grown += 1
    # Additive increase: about limit successes per step from 2 to 16 (sum of k for k = 2..15 ~ 119).
    assert 100 <= grown <= 130
    assert gate.current == 16


def test_the_limit_holds_the_calls_in_flight():
    gate = Gate(2)
    assert gate.enter() and gate.enter()
    stop = threading.Event()
    entered = []
    thread = threading.Thread(target=lambda: entered.append(gate.enter(stop=stop)))
    thread.start()
    thread.join(0.3)
    assert entered == []  # a third waits
    gate.leave()
    thread.join(2)
    assert entered == [True]
    stop.set()
    assert gate.enter(stop=stop) is False


@pytest.mark.parametrize(
    "rpm, tpm, tokens, expected", [(10, None, 0, 60.0), (None, 1000, 100, 60.0), (None, 1000, 400, 60.0)]
)
def test_budgets_space_requests_over_the_minute(rpm, tpm, tokens, expected):
    clock = Clock()
    gate = Gate(100, rpm=rpm, tpm=tpm, clock=clock)
    sent = 0
    limit = rpm or tpm // tokens
    while gate._budget_wait(tokens) <= 0:
        gate.enter(tokens)
        gate.leave()
        sent += 1
        clock.now += 0.01
    assert sent == limit
    assert gate._budget_wait(tokens) == pytest.approx(expected - 0.01 * sent, abs=1e-6)
    clock.now = 60.0  # the first request left the window
    assert gate._budget_wait(tokens) <= 0
