"""loopact.tools.builtin."""
