"""Token counts as the usage pages and the limit messages write them: 100 000."""

from django import template

from agent.usage import tokens_text

register = template.Library()


@register.filter
def tokens(value) -> str:
    try:
        return tokens_text(int(value))
    except (TypeError, ValueError):
        return ""
