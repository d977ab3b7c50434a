"""loopact.testing."""
