"""Key popularity: each sampler's draws match its declared shape, checked by a chi-square test at a fixed seed.

No scipy here: the statistic is computed, and compared with the chi-square distribution's 0.999 quantile for
the test's degrees of freedom (from the standard tables), so a correct sampler fails it with probability 0.001
for a random seed, and at the fixed seed below, never."""

from __future__ import annotations

import random
from collections import Counter

from engine.workloads.keys import KeySampler
from engine.workloads.schema.operations import Keys

DRAWS = 20_000
CHI2_999 = {9: 27.877, 19: 43.820}  # chi-square 0.999 quantiles by degrees of freedom


def chi_square(sampler: KeySampler, expected: list[float], seed: int = 7) -> float:
    rng = random.Random(seed)
    counts = Counter(sampler.draw(rng) for _ in range(DRAWS))
    return sum((counts[i] - DRAWS * p) ** 2 / (DRAWS * p) for i, p in enumerate(expected))


def test_zipf_draws_match_1_over_rank_to_the_s() -> None:
    sampler = KeySampler(Keys(distribution="zipf", s=1.2), 20)
    pmf = sampler.pmf()
    assert abs(pmf[0] / pmf[1] - 2**1.2) < 1e-9
    assert chi_square(sampler, pmf) < CHI2_999[19]


def test_a_hot_set_takes_its_share() -> None:
    sampler = KeySampler(Keys(distribution="hot-set", hot_keys=2, hot_share=0.8), 10)
    pmf = sampler.pmf()
    assert abs(sum(pmf[:2]) - 0.8) < 1e-12
    assert chi_square(sampler, pmf) < CHI2_999[9]


def test_uniform_draws_are_uniform() -> None:
    sampler = KeySampler(Keys(distribution="uniform"), 10)
    assert chi_square(sampler, sampler.pmf()) < CHI2_999[9]


def test_the_test_tells_shapes_apart() -> None:
    """The same statistic rejects a Zipf sample read as uniform: the checks above have power."""
    zipf = KeySampler(Keys(distribution="zipf", s=1.0), 10)
    assert chi_square(zipf, [0.1] * 10) > 100 * CHI2_999[9]


def test_distinct_draws_are_distinct_even_when_they_want_every_key() -> None:
    sampler = KeySampler(Keys(distribution="zipf", s=3.0), 5)
    rng = random.Random(1)
    for _ in range(200):
        ranks = sampler.draw_distinct(rng, 5)
        assert sorted(ranks) == [0, 1, 2, 3, 4]
