"""``--model local`` on Ray: one bundled llama.cpp server per node, owned by an actor on that node.

The driver starts a ``ModelServer`` actor pinned to each alive node that has CPUs (hard node affinity), and each
actor starts the bundled model's server on its node and asks it one small chat request (``preflight``) before it
says where it listens. Every batch is then pinned to a node that has a server and given that node's URL: a task
asks the server beside it at 127.0.0.1, never across the network. Ray's own restarts are off for the actors, as its
retries are off for the tasks (the driver owns retries): a node whose actor is gone gets no more batches, and its
lost batches go again to the nodes left.

No orphan server: Ray kills the children of a worker process that exits, and the server process is started with a
parent-death signal besides (``server.LAUNCH_WITH_PARENT``), which holds where Ray's clean-up does not run. The
actor reserves no CPU in Ray's accounting (the server's threads are not Ray tasks); the tasks that ask it reserve
theirs.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UserInputError
from harness.models.config import LiveOptions
from harness.models.live import LiveConfig

STARTUP_TIMEOUT_S = 180.0  # a server's start on a busy node (the model loads in seconds on an idle one)
STOP_WAIT_S = 15.0  # how long the end of a matrix waits for the actors to stop their servers before killing them


class ModelServer:
    """The actor: the bundled model's server on this node for the actor's life."""

    def __init__(self, options: LiveOptions, startup_timeout_s: float) -> None:
        from harness.models.server import LocalModelServer

        self._options = options
        self._server = LocalModelServer(startup_timeout_s=startup_timeout_s).start()

    def where(self) -> tuple[str, str, int | None, str | None]:
        """This node's id, the server's base URL and process id, and a note when its first request was slow; an
        endpoint that does not answer as one raises (the driver reports it in one line)."""
        import ray

        from harness.models.dead_endpoint import preflight
        from harness.models.setup import local_endpoint

        note = preflight(local_endpoint(self._server.base_url, self._server.model, self._options))
        return ray.get_runtime_context().get_node_id(), self._server.base_url, self._server.pid, note

    def stop(self) -> None:
        self._server.stop()


@dataclass
class NodeServers:
    """The nodes with a model server, each one's URL, and how many tasks each has in flight."""

    config: LiveConfig  # the endpoint every task asks, its URL replaced by its node's
    urls: dict[str, str]  # node id -> its server's base URL
    pids: dict[str, int]  # node id -> its server's process id (on that node)
    actors: dict[str, Any] = field(default_factory=dict)  # node id -> its ModelServer actor
    busy: Counter[str] = field(default_factory=Counter)

    def pick(self) -> str:
        """The node with a server and the fewest tasks in flight (ties: the order the nodes were found in)."""
        if not self.urls:
            raise UserInputError(
                "--executor ray: every node's model server is gone (their nodes left the cluster); "
                "bench run --resume continues the matrix on the nodes there are then"
            )
        return min(self.urls, key=lambda node: self.busy[node])

    def chat_url(self, node: str) -> str:
        """The chat completions URL of ``node``'s server."""
        from harness.models.endpoint import chat_completions_url

        return chat_completions_url(self.urls[node])

    def manifest_facts(self) -> dict[str, Any]:
        """What the manifest says of the servers instead of one endpoint's URL."""
        return {
            "endpoint": f"the bundled llama.cpp server on each of {len(self.urls)} Ray nodes, at 127.0.0.1 there",
            "ray_model_servers": len(self.urls),
        }

    def forget_dead(self, ray: Any) -> list[str]:
        """Drops the nodes that left the cluster or whose actor died; returns them."""
        alive = {node["NodeID"] for node in ray.nodes() if node.get("Alive")}
        gone = [node for node in self.urls if node not in alive or not _actor_alive(ray, self.actors[node])]
        for node in gone:
            self.urls.pop(node)
            self.pids.pop(node, None)
        return gone


def _actor_alive(ray: Any, actor: Any) -> bool:
    try:
        ray.get(actor.__ray_ready__.remote(), timeout=5)
    except Exception:  # any failure to answer: the actor is not usable
        return False
    return True


@contextlib.contextmanager
def node_model_servers(ray: Any, options: LiveOptions, concurrency: int) -> Iterator[NodeServers]:
    """A model server on every alive node with CPUs, each given ``STARTUP_TIMEOUT_S`` to start, stopped (and its
    actor killed) when the block ends."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from harness.models.setup import local_endpoint

    nodes = [node["NodeID"] for node in ray.nodes() if node.get("Alive") and node["Resources"].get("CPU", 0) > 0]
    remote = ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(ModelServer)
    actors = {
        node: remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
            options, STARTUP_TIMEOUT_S
        )
        for node in nodes
    }
    try:
        answers = _answers(ray, actors)
        config = local_endpoint(answers[0][1], _model_alias(), options, concurrency=concurrency)
        yield NodeServers(
            config,
            urls={node: url for node, url, _, _ in answers},
            pids={node: pid for node, _, pid, _ in answers if pid is not None},
            actors={node: actors[node] for node, _, _, _ in answers},
        )
    finally:
        _stop(ray, list(actors.values()))


def _answers(ray: Any, actors: dict[str, Any]) -> list[tuple[str, str, int | None, str | None]]:
    """Each started server's node, URL, pid and note. A server that failed to start (its actor's construction
    raised: the model missing, the server exiting) stops the matrix in one line; a node lost meanwhile (listed
    alive a moment ago, or removed while its server started) is left out; no server at all is one line too."""
    answers, lost = [], []
    for node, actor in actors.items():
        try:
            answers.append(ray.get(actor.where.remote()))
        except ray.exceptions.RayActorError as exc:
            if exc.actor_init_failed:
                raise UserInputError(f"--executor ray: the model server on node {node[:12]}: {_cause(exc)}") from None
            lost.append(f"node {node[:12]}: {_cause(exc)}")
        except ray.exceptions.RayTaskError as exc:  # the first request failed: the server is no endpoint
            raise UserInputError(f"--executor ray: the model server on node {node[:12]}: {_cause(exc)}") from None
    if not answers:
        raise UserInputError(f"--executor ray: no node could start a model server ({'; '.join(lost)[:300]})")
    return answers


def _cause(exc: BaseException) -> str:
    """The last line of what went wrong (a traceback's last line names the error), at most 300 characters."""
    cause = getattr(exc, "cause", None)
    text = str(cause if isinstance(cause, BaseException) else exc).strip().splitlines()
    return (text[-1] if text else type(exc).__name__)[:300]


def _stop(ray: Any, actors: list[Any]) -> None:
    """Stops each server in order, then kills the actors (a server an actor could not stop dies with it)."""
    with contextlib.suppress(Exception):
        ray.wait([actor.stop.remote() for actor in actors], num_returns=len(actors), timeout=STOP_WAIT_S)
    for actor in actors:
        with contextlib.suppress(Exception):
            ray.kill(actor)


def _model_alias() -> str:
    from harness.models.server import MODEL_ALIAS

    return MODEL_ALIAS
