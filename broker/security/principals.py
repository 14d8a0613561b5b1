"""Principals from certificates (Kafka's ssl.principal.mapping.rules) and the node naming
convention: the node with id N authenticates as User:kraft-node-N."""

from __future__ import annotations

import dataclasses
import re

ANONYMOUS = "User:ANONYMOUS"
NODE_PREFIX = "kraft-node-"
# Kafka's grammar: DEFAULT or RULE:pattern/replacement/ with an optional L or U (case).
_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU])?)\s*(?:,|$)")


class PrincipalRulesError(ValueError):
    """ssl.principal.mapping.rules does not parse."""


def node_principal(node_id: int) -> str:
    return f"User:{NODE_PREFIX}{node_id}"


def node_id_of(principal: str) -> int | None:
    """The node id a principal speaks for (User:kraft-node-N), or None for anyone else."""
    prefix = f"User:{NODE_PREFIX}"
    if principal.startswith(prefix) and principal[len(prefix) :].isdigit():
        return int(principal[len(prefix) :])
    return None


def common_name(subject: str) -> str | None:
    """The CN of a distinguished name ("CN=kraft-node-1,O=kraft" -> "kraft-node-1")."""
    for part in re.split(r"(?<!\\),", subject):
        key, sep, value = part.strip().partition("=")
        if sep and key.strip().upper() == "CN":
            return value.strip()
    return None


@dataclasses.dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            # Kafka's DEFAULT is the whole DN; kraft's is the CN (what people mean by "the user"),
            # falling back to the whole DN when there is no CN.
            return common_name(subject) or subject
        match = self.pattern.fullmatch(subject)
        if match is None:
            return None
        name = match.expand(re.sub(r"\$(\d)", r"\\\1", self.replacement))
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalRules:
    """Kafka's ssl.principal.mapping.rules: the first rule that matches the certificate's
    subject names the user; a subject no rule matches gets the DEFAULT rule's name."""

    def __init__(self, text: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            match = _RULE.match(text, pos)
            if match is None or match.end() == pos:
                raise PrincipalRulesError(
                    f"ssl.principal.mapping.rules: cannot parse {text[pos:]!r}; write rules as "
                    "RULE:^CN=(.*?),.*$/$1/,DEFAULT"
                )
            if match.group(1) == "DEFAULT":
                self.rules.append(_Rule(None))
            else:
                pattern = match.group(2).replace("\\/", "/")
                try:
                    compiled = re.compile(pattern)
                except re.error as exc:
                    raise PrincipalRulesError(
                        f"ssl.principal.mapping.rules: {pattern!r} is not a "
                        f"regular expression ({exc})"
                    ) from None
                self.rules.append(
                    _Rule(compiled, match.group(3).replace("\\/", "/"), match.group(4) or "")
                )
            pos = match.end()
        self._cache: dict[str, str] = {}

    def principal(self, subject: str) -> str:
        """`User:<name>` for a certificate subject."""
        cached = self._cache.get(subject)
        if cached is not None:
            return cached
        name = None
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                break
        if name is None:
            name = common_name(subject) or subject
        if len(self._cache) < 10_000:  # bounded: subjects come from trusted certificates
            self._cache[subject] = f"User:{name}"
        return f"User:{name}"
