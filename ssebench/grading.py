"""Placeholder: replaced by the part that owns this command."""


def register(sub) -> None:  # noqa: ANN001
    pass
