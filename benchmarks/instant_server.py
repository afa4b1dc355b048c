"""An OpenAI-compatible endpoint that answers at once, for throughput benchmarks: asyncio, HTTP/1.1 keep-alive.

Every POST gets the same chat-completions answer (a next action: finish), every GET the model list. It
parses just enough HTTP to frame requests, so the client, not the server, is what a benchmark measures.
Run: python benchmarks/instant_server.py PORT  (prints "ready" once it listens)
"""

from __future__ import annotations

import asyncio
import json
import sys

ANSWER = json.dumps(
    {
        "id": "bench",
        "object": "chat.completion",
        "model": "instant",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": json.dumps({"step": {"action": "finish", "args": {}}})},
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }
).encode()
MODELS = json.dumps({"object": "list", "data": [{"id": "instant", "object": "model", "owned_by": "bench"}]}).encode()


def response(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            writer.write(response(MODELS if head.startswith(b"GET") else ANSWER))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
