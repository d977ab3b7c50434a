"""loopact.robot."""
