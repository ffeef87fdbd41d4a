"""An undefined name."""


def broken():
    return missing_helper()
