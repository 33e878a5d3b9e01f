"""The bare floor of the load bench: N concurrent agent turns with no Django at all.

One process, one event loop: a bare `langchain.agents.create_agent` around
the real `ChatOpenAI` (same settings as agent/model.py: timeout 60 s, 3
retries, max_tokens 4096, stream_usage) pointed at the bench model server,
and an AsyncSqliteSaver on a temporary file with the same pragmas the app's
saver uses (WAL, synchronous=NORMAL). Tools: with --spec (the default in
bench/load.py), HAICO's sixteen tools, same names, descriptions and argument
schemas, with no-op bodies, and HAICO's system prompt as a static string, so
each model request carries what the app's does; without, one no-op
`set_objective` and no prompt (bench/load.py's "floor-1tool" row). Each turn is
`astream({"messages": [HumanMessage]}, fresh thread_id,
stream_mode=["updates", "messages"])`, consumed to the end; answer tokens are
found with the same regex the WebSocket clients use and their first receipt
time recorded, so "model -> consumer" delays compare like for like with
"model -> browser" in the app.

Protocol (driven by bench/load.py, which may run several of these at once so
that a two-process floor starts at the same moment): the process warms up
(imports, a concurrent warm-up round on the same graph and saver), prints
"READY", waits for one line on stdin, then releases all N turns at once and
prints "RESULT <json>" (t0 and last turn end as wall-clock times, token delays
in ms, errors, its own CPU seconds over the round and peak RSS).

Run alone: echo go | .venv/bin/python -m bench.floor --base-url http://127.0.0.1:PORT/v1 --n 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import uuid

for _name in list(os.environ):
    if _name.startswith(("LANGSMITH_", "LANGCHAIN_")):
        del os.environ[_name]

from bench.common import (  # noqa: E402  (after the LangSmith variables are gone)
    cpu_seconds,
    peak_rss_mb,
    raise_open_file_limit,
    record_tokens,
    token_delays_ms,
)

MESSAGE = "Help me plan a short essay."


def build_graph(base_url: str, saver, spec: dict | None = None):
    """The bare agent: with `spec` (bench/floor_spec.py), HAICO's own tool
    list as no-op tools and its system prompt as a static string; without,
    one no-op set_objective and no prompt."""
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel, Field

    model = ChatOpenAI(
        model="bench-model",
        base_url=base_url,
        api_key="bench",
        timeout=60.0,
        max_retries=3,
        max_tokens=4096,
        stream_usage=True,
    )
    if spec is not None:

        async def noop(**kwargs) -> str:
            return '{"success": true, "summary": "ok"}'

        tools = [
            StructuredTool(name=t["name"], description=t["description"], args_schema=t["parameters"], coroutine=noop)
            for t in spec["tools"]
        ]
        return create_agent(model=model, tools=tools, system_prompt=spec["system_prompt"], checkpointer=saver)

    class SetObjectiveArgs(BaseModel):
        action_and_reasoning: str = Field(description="One short sentence shown to the user saying what you are doing and why.")
        text: str = Field(description="Your one-line understanding of what the user is trying to achieve.")

    async def set_objective(text: str, action_and_reasoning: str) -> str:
        return '{"success": true, "summary": "Objective set."}'

    tool = StructuredTool.from_function(
        coroutine=set_objective,
        name="set_objective",
        description="Record or replace your one-line understanding of what the user is trying to achieve.",
        args_schema=SetObjectiveArgs,
    )
    return create_agent(model=model, tools=[tool], checkpointer=saver)


async def one_turn(graph, start: asyncio.Event, timeout: float, expected_tokens: int) -> dict:
    from langchain_core.messages import AIMessage, HumanMessage

    await start.wait()
    seen: dict[str, float] = {}
    error = None
    config = {"configurable": {"thread_id": f"floor-{uuid.uuid4().hex}"}, "recursion_limit": 100}
    try:
        async with asyncio.timeout(timeout):
            async for mode, payload in graph.astream(
                {"messages": [HumanMessage(content=MESSAGE)]}, config, stream_mode=["updates", "messages"]
            ):
                if mode != "messages":
                    continue
                chunk, metadata = payload
                if metadata.get("langgraph_node") == "model" and isinstance(chunk, AIMessage) and chunk.content:
                    record_tokens(str(chunk.content), seen, time.time())
    except TimeoutError:
        error = f"no turn end within {timeout:.0f} s"
    except Exception as exc:  # a failed turn is a figure, not a crash
        error = f"{type(exc).__name__}: {exc}"[:300]
    end = time.time()
    if error is None and len(seen) < expected_tokens:
        error = f"answer incomplete: {len(seen)} of {expected_tokens} tokens"
    return {"end": end, "delays": token_delays_ms(seen), "error": error}


async def round_of(graph, n: int, timeout: float, expected_tokens: int, before_start=None) -> tuple[float, list[dict]]:
    start = asyncio.Event()
    tasks = [asyncio.create_task(one_turn(graph, start, timeout, expected_tokens)) for _ in range(n)]
    await asyncio.sleep(0)  # every task is now waiting on the event
    if before_start is not None:
        await before_start()
    t0 = time.time()
    start.set()
    return t0, await asyncio.gather(*tasks)


async def main(args) -> None:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    raise_open_file_limit()
    workdir = tempfile.mkdtemp(prefix="haico-floor-")
    conn = await aiosqlite.connect(os.path.join(workdir, "floor.sqlite3"), timeout=15.0)
    try:
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        spec = None
        if args.spec:
            with open(args.spec) as handle:
                spec = json.load(handle)
        graph = build_graph(args.base_url, saver, spec)

        if args.warmup:
            await round_of(graph, args.warmup, args.timeout, args.tokens)
        print("READY", flush=True)

        async def wait_for_go():
            # The orchestrator's go line; read off-loop so nothing else waits on it.
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

        cpu_before = [0.0]

        async def go():
            await wait_for_go()
            cpu_before[0] = cpu_seconds()

        t0, turns = await round_of(graph, args.n, args.timeout, args.tokens, before_start=go)
        cpu = cpu_seconds() - cpu_before[0]
    finally:
        await conn.close()
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "n": args.n,
        "t0": t0,
        "t_end": max(t["end"] for t in turns),
        "delays": [d for t in turns for d in t["delays"]],
        "errors": [t["error"] for t in turns if t["error"]],
        "cpu": cpu,
        "rss_mb": peak_rss_mb(),
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the bench model server, e.g. http://127.0.0.1:PORT/v1")
    parser.add_argument("--n", type=int, default=50, help="concurrent turns in the measured round")
    parser.add_argument("--warmup", type=int, default=8, help="concurrent turns in the warm-up round")
    parser.add_argument("--tokens", type=int, default=60, help="answer tokens the model server sends per turn")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a turn counts as failed")
    parser.add_argument("--spec", help="bench/floor_spec.py output: HAICO's tools and prompt (default: one tool, no prompt)")
    asyncio.run(main(parser.parse_args()))
