"""loopact.nodes."""
