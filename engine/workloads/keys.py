"""Key popularity as pure samplers: given a seeded random.Random, the same draws every time.

Keys are ranks 0..n-1; rank 0 is the most popular under Zipf and the first of the hot set."""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass, field

from engine.workloads.schema.operations import Keys

_DISTINCT_TRIES = 64  # draws per wanted key before the rest are taken in order from the less popular ones


@dataclass(frozen=True)
class KeySampler:
    """Draws key ranks from 0..n-1 as `keys` says."""

    keys: Keys
    n: int
    _cumulative: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("a key sampler needs at least one key")
        cumulative: tuple[float, ...] = ()
        if self.keys.distribution == "zipf":
            cumulative = tuple(itertools.accumulate(1.0 / (r + 1) ** self.keys.s for r in range(self.n)))
        object.__setattr__(self, "_cumulative", cumulative)

    def pmf(self) -> list[float]:
        """The probability of each rank: what the draws should match."""
        n = self.n
        if self.keys.distribution == "zipf":
            total = self._cumulative[-1]
            previous = 0.0
            out = []
            for c in self._cumulative:
                out.append((c - previous) / total)
                previous = c
            return out
        if self.keys.distribution == "hot-set":
            hot = min(self.keys.hot_keys, n)
            if hot == n:
                return [1.0 / n] * n
            return [self.keys.hot_share / hot] * hot + [(1 - self.keys.hot_share) / (n - hot)] * (n - hot)
        return [1.0 / n] * n

    def draw(self, rng: random.Random) -> int:
        n = self.n
        if self.keys.distribution == "zipf":
            total = self._cumulative[-1]
            return min(n - 1, bisect.bisect_right(self._cumulative, rng.random() * total))
        if self.keys.distribution == "hot-set":
            hot = min(self.keys.hot_keys, n)
            if hot == n or rng.random() < self.keys.hot_share:
                return rng.randrange(hot)
            return hot + rng.randrange(n - hot)
        return rng.randrange(n)

    def draw_distinct(self, rng: random.Random, k: int) -> list[int]:
        """k distinct ranks, each drawn by popularity (a transaction's items); k ≤ n."""
        if k > self.n:
            raise ValueError(f"{k} distinct keys wanted from {self.n}")
        chosen: list[int] = []
        seen: set[int] = set()
        for _ in range(k * _DISTINCT_TRIES):
            if len(chosen) == k:
                return chosen
            r = self.draw(rng)
            if r not in seen:
                seen.add(r)
                chosen.append(r)
        # A skewed distribution asked for nearly all its keys: the rest in rank order, so it always ends.
        chosen.extend(r for r in range(self.n) if r not in seen)
        return chosen[:k]
