"""A plain agent loop: the `mcp` client for the tools, httpx for an OpenAI-compatible model. Under bench both are the
run's own (BENCH_MCP_URL, OPENAI_BASE_URL, docs/agents.md); it resumes from BENCH_RESUME_CONVERSATION."""

import asyncio
import json
import os

import httpx
from mcp import Client

SYSTEM = "You are an agent. Do the task with the tools and keep to the rules. If approval is requested, stop."


async def main() -> None:
    env = os.environ
    headers = {"Authorization": f"Bearer {env['OPENAI_API_KEY']}"}
    async with Client(env["BENCH_MCP_URL"]) as tools, httpx.AsyncClient(headers=headers, timeout=300) as http:
        offered = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in (await tools.list_tools()).tools
        ]
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": env["BENCH_TASK"]}]
        if env.get("BENCH_RESUME_CONVERSATION"):  # bench resume: the conversation so far, then the decision
            with open(env["BENCH_RESUME_CONVERSATION"]) as saved:
                messages = json.load(saved)
            note = env.get("BENCH_RESUME_NOTE", "")
            messages.append(
                {"role": "user", "content": f"{env['BENCH_RESUME_GATE']}: {env['BENCH_RESUME_DECISION']}. {note}"}
            )
        while True:
            body = {"model": env.get("BENCH_MODEL", "bench"), "messages": messages, "tools": offered}
            reply = await http.post(f"{env['OPENAI_BASE_URL']}/chat/completions", json=body)
            message = reply.raise_for_status().json()["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                print(message.get("content"))
                return
            for call in message["tool_calls"]:
                result = await tools.call_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
                text = "\n".join(part.text for part in result.content if part.type == "text")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})


asyncio.run(main())
