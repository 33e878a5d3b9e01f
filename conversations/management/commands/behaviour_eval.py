"""`manage.py behaviour_eval`: the system prompt's rules, scored against a
real model (conversations.behaviour_eval).

    manage.py behaviour_eval --base-url http://localhost:11434/v1 --model llama3.2
    manage.py behaviour_eval --model llama3.2 --model qwen2.5      # side by side
    manage.py behaviour_eval --compare                             # every model of HAICO_MODELS

It writes to the configured database: one throwaway user and thread per
scenario and model, removed at the end unless --keep.
"""

import asyncio

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from agent.builder import AgentProvider
from agent.model import PLACEHOLDER_API_KEY, HaicoChatOpenAI

from ...behaviour_eval import SCENARIOS, report, run_eval, scenarios_named


class Command(BaseCommand):
    help = "Run scripted conversations against a model and score how it follows the system prompt's rules."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL).")
        parser.add_argument("--api-key", default=None, help="API key (default: OPENAI_API_KEY; local servers need none).")
        parser.add_argument(
            "--model", action="append", default=[], help="Model to score; give it twice to compare two side by side."
        )
        parser.add_argument("--compare", action="store_true", help="Score every model of HAICO_MODELS side by side.")
        parser.add_argument(
            "--scenario", action="append", default=[], choices=[s.name for s in SCENARIOS], help="Only these scenarios."
        )
        parser.add_argument("--turn-timeout", type=float, default=300.0, help="Seconds one turn may take (default 300).")
        parser.add_argument("--keep", action="store_true", help="Keep the eval's users and threads to look at them.")

    def handle(self, *args, **options):
        models = list(dict.fromkeys(options["model"]))
        if options["compare"]:
            models += [name for name in getattr(settings, "HAICO_MODELS", []) or [] if name and name not in models]
        if not models and getattr(settings, "HAICO_MODEL", ""):
            models = [settings.HAICO_MODEL]
        if not models:
            raise CommandError("Name a model with --model (or set HAICO_MODEL / HAICO_MODELS and use --compare).")
        base_url = options["base_url"] or settings.OPENAI_BASE_URL or None
        api_key = options["api_key"] or settings.OPENAI_API_KEY or PLACEHOLDER_API_KEY
        if base_url is None and api_key == PLACEHOLDER_API_KEY:
            raise CommandError("Give --base-url (for example http://localhost:11434/v1) or set OPENAI_API_KEY.")

        def provider_for(model):
            # The eval's own endpoint and model, whatever the catalogue offers.
            return AgentProvider(
                model_factory=lambda _choice: HaicoChatOpenAI(
                    model=model,
                    base_url=base_url,
                    api_key=api_key,
                    timeout=options["turn_timeout"],
                    max_retries=settings.HAICO_MODEL_MAX_RETRIES,
                    max_tokens=settings.HAICO_MODEL_MAX_TOKENS or None,
                    stream_usage=True,
                )
            )

        try:
            scenarios = scenarios_named(options["scenario"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        # A process name of its own: under the server's HAICO_INSTANCE its
        # start-up would release the server's running turns as a dead
        # predecessor's (conversations.turns.slot).
        with override_settings(HAICO_INSTANCE=""):
            runs = asyncio.run(
                run_eval(
                    models=models,
                    provider_for=provider_for,
                    scenarios=scenarios,
                    turn_timeout=options["turn_timeout"],
                    keep=options["keep"],
                    progress=lambda line: self.stderr.write(f"running {line}"),
                )
            )
        self.stdout.write(report(runs))
