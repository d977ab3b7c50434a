"""loopact.channels."""
