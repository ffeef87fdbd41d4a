def old_name() -> int:
    return 42
