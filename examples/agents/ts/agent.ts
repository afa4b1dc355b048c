// A TypeScript agent: its tools through the MCP SDK's client, its model through the openai package. Under bench
// both are the run's own (BENCH_MCP_URL; the openai client reads OPENAI_BASE_URL and OPENAI_API_KEY), see
// docs/agents.md; it resumes from BENCH_RESUME_CONVERSATION. Build: npm ci && npm run build; run: node dist/agent.js
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;
const env = process.env;
const SYSTEM = "You are an agent. Do the task with the tools and keep to the rules. If approval is requested, stop.";

const tools = new Client({ name: "bench-example-ts-agent", version: "1.0.0" });
await tools.connect(new StreamableHTTPClientTransport(new URL(env.BENCH_MCP_URL!)));
const offered: OpenAI.Chat.Completions.ChatCompletionTool[] = (await tools.listTools()).tools.map((tool) => ({
  type: "function",
  function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
}));
const model = new OpenAI();
let messages: Message[] = [
  { role: "system", content: SYSTEM },
  { role: "user", content: env.BENCH_TASK ?? "" },
];
if (env.BENCH_RESUME_CONVERSATION) {
  messages = JSON.parse(readFileSync(env.BENCH_RESUME_CONVERSATION, "utf8"));
  const decision = `${env.BENCH_RESUME_GATE}: ${env.BENCH_RESUME_DECISION}. ${env.BENCH_RESUME_NOTE ?? ""}`;
  messages.push({ role: "user", content: decision });
}
for (;;) {
  const reply = await model.chat.completions.create({ model: env.BENCH_MODEL ?? "bench", messages, tools: offered });
  const message = reply.choices[0].message;
  messages.push(message);
  if (!message.tool_calls?.length) {
    console.log(message.content);
    break;
  }
  for (const call of message.tool_calls) {
    if (call.type !== "function") continue;
    const result = await tools.callTool({ name: call.function.name, arguments: JSON.parse(call.function.arguments) });
    const parts = result.content as { type: string; text?: string }[];
    const text = parts.filter((part) => part.type === "text").map((part) => part.text).join("\n");
    messages.push({ role: "tool", tool_call_id: call.id, content: text });
  }
}
await tools.close();
