"""loopact.agent."""
