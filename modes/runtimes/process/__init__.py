"""Any agent in any language as a mode (``--mode agent:"CMD ..."``): the process, the MCP tool server in front of the
gateway and the OpenAI-compatible endpoint in front of the model port; docs/agents.md."""

from modes.runtimes.process.mode import PREFIX, ProcessAgent, is_process_agent, register_process_agent

__all__ = ["PREFIX", "ProcessAgent", "is_process_agent", "register_process_agent"]
