"""loopact.skills."""
