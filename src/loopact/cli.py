"""Command-line interface (placeholder until the CLI lands)."""


def main() -> None:
    """Entry point of the ``loopact`` command."""
    raise SystemExit("loopact: CLI not built yet")
