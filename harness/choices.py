"""The closed sets of names a flag takes, in a module with no imports: the CLI's --help needs them, not the harness."""

from typing import Literal, get_args

GatewayPolicy = Literal["enforce", "audit"]
GATEWAY_POLICIES: tuple[GatewayPolicy, ...] = get_args(GatewayPolicy)
DEFAULT_GATEWAY_POLICY: GatewayPolicy = "enforce"  # the one place it is written: a run given no --gateway
ResponseFormat = Literal["json_schema", "json_object", "none"]
ProviderName = Literal["openai", "azure", "vllm", "ollama", "llamacpp", "deepseek", "dashscope", "gemini", "generic"]
