"""Several servers of one model behind one client: the least busy answers, a failing one is
skipped.

`agent_url` may name several base URLs, comma-separated: replicas of the same model (vLLM
scaled by its own replicas, or several GPUs each with a server). `ReplicaPool` speaks the
`ChatClient` surface the model session uses. Each request goes to the replica with the fewest
requests in flight (ties: the one that has served fewest, then the first named). A replica
that fails a request — refused connection, timeout, 5xx or 429 after its own retries — is left
for that request and the next replica is asked; when every replica failed, the error names each
one and what it said. A request the server refused for what it is (a 400: too long, malformed)
is not retried elsewhere: another replica of the same model would refuse it the same way.

Every answer and every failed attempt carries the replica that served it (`server`), so each
call record names its server and `terrarium status` can show calls per server.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from terrarium_dagster.errors import AgentError, ConfigError, Interrupted, TerrariumError
from terrarium_dagster.model.client import (
    ChatClient,
    ChatResult,
    ClientConfig,
    FailedAttempt,
)
from terrarium_dagster.model.protocol import ModelInfo
from terrarium_dagster.model.server import ServerInfo, server_info
from terrarium_dagster.model.server_answers import ServerContextOverflow

P = ParamSpec("P")
R = TypeVar("R")

_HTTP_STATUS = re.compile(r"\bHTTP (\d{3})\b")


def split_urls(value: str) -> list[str]:
    """The base URLs of a comma-separated `agent_url`, in order, without blanks or repeats."""
    urls = [part.strip() for part in value.split(",")]
    return list(dict.fromkeys(url for url in urls if url))


def _no_retry_elsewhere(exc: BaseException) -> bool:
    """A refusal of the request itself (the same body would fail on every replica)."""
    if isinstance(exc, ServerContextOverflow | Interrupted | ConfigError | ValueError):
        return True
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        found = _HTTP_STATUS.search(str(exc))
        status = int(found.group(1)) if found else None
    return isinstance(status, int) and 400 <= status < 500 and status not in (408, 429)


def _arguments_of(
    method: Callable[Concatenate[ChatClient, P], R],
) -> Callable[[Callable[..., R]], Callable[Concatenate[ReplicaPool, P], R]]:
    """Give a pool method the signature of the `ChatClient` method it stands for: it takes the
    same arguments and passes them on unchanged to the replica that answers."""

    def typed(pool_method: Callable[..., R]) -> Callable[Concatenate[ReplicaPool, P], R]:
        return pool_method

    return typed


class ReplicaPool:
    """Replicas of one model as one client (thread-safe: several requests at once)."""

    def __init__(self, clients: Sequence[ChatClient]) -> None:
        if not clients:
            raise ValueError("a replica pool needs at least one client")
        self.clients = list(clients)
        self._lock = threading.Lock()
        self._in_flight = [0] * len(self.clients)
        self.served = [0] * len(self.clients)  # answered requests per replica
        self.failed = [0] * len(self.clients)  # requests a replica failed (then asked elsewhere)

    @classmethod
    def from_config(cls, config: ClientConfig, urls: Sequence[str]) -> ReplicaPool:
        def replica(url: str) -> ClientConfig:  # validated: the URL is normalised as usual
            return ClientConfig.model_validate({**dict(config), "base_url": url})

        return cls([ChatClient(replica(url)) for url in urls])

    # -- the ChatClient surface the session uses ---------------------------------------------

    @property
    def config(self) -> ClientConfig:
        return self.clients[0].config

    @property
    def servers(self) -> list[str]:
        return [client.config.root_url for client in self.clients]

    @property
    def model_info(self) -> ModelInfo | None:
        infos = [client.model_info for client in self.clients if client.model_info is not None]
        if not infos:
            return None
        windows = [info.max_model_len for info in infos if info.max_model_len]
        return infos[0].model_copy(update={"max_model_len": min(windows) if windows else None})

    @property
    def server_info(self) -> ServerInfo:
        """What the probe found, for every replica at once: the first replica's kind and
        counting, the smallest window, and tools only if every replica takes them."""
        infos = [server_info(client) for client in self.clients]
        windows = [info.window for info in infos if info.window]
        refusing = [info for info in infos if info.tools is False]
        update: dict[str, Any] = {"window": min(windows) if windows else None}
        if len(infos) > 1:
            update["url"] = ", ".join(info.url for info in infos)
        if refusing:
            update["tools"] = False
            update["tools_source"] = refusing[0].tools_source
        return infos[0].model_copy(update=update)

    @property
    def tokenize_supported(self) -> bool:
        return any(client.tokenize_supported for client in self.clients)

    def resolve_model(self) -> ModelInfo:
        """The model every reachable replica serves; its window is the smallest of theirs."""
        errors: list[str] = []
        for client in self.clients:
            try:
                client.resolve_model()
            except ConfigError:
                raise  # the configured model is not served there: a setting to fix
            except AgentError as exc:
                errors.append(f"{client.config.root_url}: {exc}")
        info = self.model_info
        if info is None:
            raise self._all_failed("asking for the served model", errors)
        return info

    def model_name(self) -> str:
        for client in self.clients:
            if client.config.model is not None or client.model_info is not None:
                return client.model_name()
        return self.clients[0].model_name()

    @_arguments_of(ChatClient.tokenize)
    def tokenize(self, *args: Any, **kwargs: Any) -> int | None:
        """`ChatClient.tokenize` on the least busy replica."""
        return self._ask(lambda client: client.tokenize(*args, **kwargs), "counting tokens")

    @_arguments_of(ChatClient.chat)
    def chat(self, *args: Any, **kwargs: Any) -> ChatResult:
        """`ChatClient.chat` on the least busy replica; the answer and the failed attempts name
        the replica that served them."""
        earlier: list[FailedAttempt] = []

        def ask(client: ChatClient) -> ChatResult:
            server = client.config.root_url
            try:
                result = client.chat(*args, **kwargs)
            except TerrariumError as exc:
                mine = tuple(
                    attempt.model_copy(update={"server": server})
                    for attempt in exc.failed_attempts
                    if isinstance(attempt, FailedAttempt)
                )
                exc.failed_attempts = (*earlier, *mine)
                exc.server = server  # type: ignore[attr-defined]
                if not _no_retry_elsewhere(exc):  # this replica's failure: asked elsewhere
                    earlier.extend(mine)
                    earlier.append(FailedAttempt(outcome=f"failed over: {exc}", server=server))
                raise
            attempts = tuple(
                a.model_copy(update={"server": server}) for a in result.failed_attempts
            )
            return result.model_copy(
                update={"server": server, "failed_attempts": (*earlier, *attempts)}
            )

        return self._ask(ask, "a chat request")

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def __enter__(self) -> ReplicaPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- routing -----------------------------------------------------------------------------

    def _order(self) -> list[int]:
        """Replicas to try, least busy first."""
        with self._lock:
            return sorted(
                range(len(self.clients)), key=lambda i: (self._in_flight[i], self.served[i], i)
            )

    def _ask(self, request: Any, what: str) -> Any:
        errors: list[str] = []
        last: BaseException | None = None
        for index in self._order():
            client = self.clients[index]
            with self._lock:
                self._in_flight[index] += 1
            try:
                answer = request(client)
            except (TerrariumError, ValueError) as exc:
                if _no_retry_elsewhere(exc) or len(self.clients) == 1:
                    raise
                with self._lock:
                    self.failed[index] += 1
                errors.append(f"{client.config.root_url}: {exc}")
                last = exc
                continue
            finally:
                with self._lock:
                    self._in_flight[index] -= 1
            with self._lock:
                self.served[index] += 1
            return answer
        error = self._all_failed(what, errors)
        error.failed_attempts = getattr(last, "failed_attempts", ())
        raise error from last

    def _all_failed(self, what: str, errors: list[str]) -> AgentError:
        listed = "; ".join(errors) if errors else "no replica answered"
        return AgentError(f"every server failed {what} ({len(self.clients)} tried): {listed}")


ModelClient = ChatClient | ReplicaPool
"""What the model session talks to: one server, or replicas of one model."""
