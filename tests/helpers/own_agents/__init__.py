"""LangGraph agents written the way the framework's documentation writes them, run by bench as users' own agents."""
