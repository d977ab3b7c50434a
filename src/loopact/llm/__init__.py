"""loopact.llm."""
