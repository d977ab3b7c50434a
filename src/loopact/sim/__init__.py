"""loopact.sim."""
