"""loopact.memory."""
