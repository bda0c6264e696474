"""The ``openai`` and ``local`` kinds: a chat agent over an OpenAI-compatible endpoint.

``openai`` calls the agent's declared endpoint; ``local`` calls the embedded model server (which
the run starts) and answers in JSON by default, since llama.cpp's server honours
``response_format`` but not tools (PERFORMANCE-NOTES). Both read the API key from the variable
named by ``api_key_env``, send the agent's ``headers`` and ``extra_body`` fields with every
request (an own module's ``off`` switch changes them, or the model or endpoint, in its ablation
variant) and put the response cache in front when the run has one (its key covering those
headers and fields, so that a variant never gets the full agent's cached answers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.adapters.balanced import BalancedBackend
from harness.adapters.cache import CachedBackend
from harness.adapters.chat import OpenAIBackend
from harness.adapters.kinds import BuildContext, chat_agent
from harness.adapters.openai import ChatPolicy, OpenAIChat
from harness.agent.agents import ChatAgent, ChatBackend
from harness.config.settings import AgentConfig, Settings
from mindledger.errors import ConfigError, UserError

__all__ = ["LOCAL", "OPENAI", "OpenAICompatible"]


@dataclass(frozen=True)
class OpenAICompatible:
    """An OpenAI-compatible kind: the declared endpoint, or the embedded model's."""

    name: str
    embedded: bool = False
    """Talk to the embedded model server instead of the declared endpoint."""
    paired_with_control: bool = True

    @property
    def switches(self) -> frozenset[str]:
        """Headers, body fields and the model; the endpoint too unless it is the embedded one."""
        return frozenset({"headers", "body", "model"} | (set() if self.embedded else {"endpoint"}))

    @property
    def needs_local_model(self) -> bool:
        return self.embedded

    @property
    def proxy_target(self) -> bool:
        """The declared endpoint can be proxied; the embedded model is the run's own."""
        return not self.embedded

    def concurrency(self, config: AgentConfig, settings: Settings) -> int:
        return config.concurrency or (4 if self.embedded else settings.concurrency)

    def build(self, config: AgentConfig, context: BuildContext) -> ChatAgent:
        urls = self._base_urls(config, context)
        policy = ChatPolicy(
            concurrency=self.concurrency(config, context.settings),
            rate_limit=config.rate_limit,
            # The embedded model is ours and only ever busy, never gone: a timeout would
            # cancel a generation it is still making and start it again.
            timeout=None if self.embedded else context.settings.timeout,
            max_retries=context.settings.max_retries,
        )
        backends: list[ChatBackend] = [
            OpenAIBackend(
                OpenAIChat(
                    url,
                    config.model,
                    api_key=_api_key(config),
                    policy=policy,
                    headers=config.headers,
                    extra_body=config.extra_body,
                )
            )
            for url in urls
        ]
        backend: ChatBackend = backends[0] if len(backends) == 1 else BalancedBackend(backends)
        if context.cache is not None:
            variant = {"headers": config.headers, "extra_body": config.extra_body}
            backend = CachedBackend(
                backend,
                context.cache,
                endpoint=urls[0],
                model=config.model,
                variant={k: dict(v) for k, v in variant.items() if v} or None,
            )
        return chat_agent(config, backend, auto_answer_mode="json" if self.embedded else "tools")

    def _base_urls(self, config: AgentConfig, context: BuildContext) -> tuple[str, ...]:
        if self.embedded:
            if not context.local_base_url:
                raise UserError("the embedded model is not running")
            url = context.local_base_url
            return (url,) if isinstance(url, str) else tuple(url)
        if not config.endpoint:
            raise ConfigError(
                f"the {self.name} adapter needs an endpoint URL", key=f"agents.{config.name}"
            )
        return (config.endpoint,)


def _api_key(config: AgentConfig) -> str | None:
    if not config.api_key_env:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ConfigError(
            f"${config.api_key_env} is not set; it should hold the API key",
            key=f"agents.{config.name}.api_key_env",
        )
    return key


OPENAI = OpenAICompatible("openai")
LOCAL = OpenAICompatible("local", embedded=True)
