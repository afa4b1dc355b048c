"""The closed sets of names a flag takes, in a module with no imports: the CLI's --help needs them, not the harness."""

from typing import Literal

GatewayPolicy = Literal["enforce", "audit"]
ResponseFormat = Literal["json_schema", "json_object", "none"]
ProviderName = Literal["openai", "azure", "vllm", "ollama", "llamacpp", "deepseek", "dashscope", "gemini", "generic"]
