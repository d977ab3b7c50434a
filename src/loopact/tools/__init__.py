"""loopact.tools."""
