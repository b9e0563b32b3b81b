"""`certify --shard K/N`: one of N fixed shares of a matrix, so that CI runners can each run one and
`certify merge` joins them. Every shard runs its own baseline (the plan follows from what it shows),
then rows i of the plan where i % N == K-1: the shares are disjoint and their union is the plan."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.errors import BadInput
from harness.progress import say

T = TypeVar("T")
SHARD = re.compile(r"([0-9]+)/([0-9]+)")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (from 1) of `count`."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`K/N` with 1 <= K <= N; bad input saying what to write otherwise."""
        found = SHARD.fullmatch(text.strip())
        if not found or not 1 <= int(found[1]) <= int(found[2]):
            raise BadInput(f"--shard {text!r}: write K/N, a shard K from 1 to N (e.g. 2/4)")
        return cls(int(found[1]), int(found[2]))

    @property
    def name(self) -> str:
        return f"{self.index}/{self.count}"

    def share(self, plan: Sequence[T]) -> list[T]:
        """This shard's rows of `plan` (the rows after the baseline), in the plan's order."""
        return [row for i, row in enumerate(plan) if i % self.count == self.index - 1]


def shard_of(shard: Shard | None, plan: list[T]) -> list[T]:
    """The rows after the baseline this run tries: all of `plan`, or its shard's share (said)."""
    if shard is None:
        return plan
    share = shard.share(plan)
    say(f"shard {shard.name}: {len(share)} of the {len(plan)} rows after the baseline")
    return share
