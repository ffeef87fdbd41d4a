"""Two type errors."""


def total(prices: list[int]) -> int:
    return sum(prices)


count: int = "three"
name: str = total([1, 2])
