def total(prices: list[int]) -> int:
    return sum(prices)


print(total([1, 2, 3]))
