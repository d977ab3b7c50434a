"""The package version, in one place (imported by the CLI, the trace header and ``loopact``)."""

__version__ = "0.1.0"
