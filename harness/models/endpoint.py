"""Checks what the user put in ``LLM_API_URL`` and ``LLM_API_KEY`` before anything is sent, one line per problem.

Credentials in the URL (``http://user:pass@host``) are refused: httpx would send them as Basic auth
and the Bearer key would be lost, and the URL is written into the manifest. A query string
(``?api-version=...``, as Azure needs) stays where it is, with ``/chat/completions`` inserted into the
path before it. Messages never repeat the URL or the key, which may hold secrets.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.errors import UserInputError

CHAT_PATH = "/chat/completions"
# Query parameters that are settings, not secrets: kept in the manifest as they are.
PUBLIC_QUERY = frozenset({"api-version"})


def chat_completions_url(url: str, *, name: str = "LLM_API_URL") -> str:
    """The full ``/chat/completions`` URL from a base URL or the full URL; a malformed URL is one line naming ``name``."""
    text = url.strip()
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise UserInputError(f"{name} contains whitespace or a control character")
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number in 0..65535
    except ValueError:
        raise UserInputError(f"{name} has an invalid port (it must be a number from 1 to 65535)") from None
    if parts.scheme not in ("http", "https"):
        raise UserInputError(f"{name} must start with http:// or https://")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UserInputError(f"{name} must not carry credentials (user:password@); put the key in LLM_API_KEY")
    if not parts.hostname:
        raise UserInputError(f"{name} has no host (expected e.g. http://127.0.0.1:8080/v1)")
    if port == 0:
        raise UserInputError(f"{name} has an invalid port (it must be a number from 1 to 65535)")
    if parts.fragment:
        raise UserInputError(f"{name} must not have a #fragment (it is never sent to the endpoint)")
    path = parts.path.rstrip("/")
    if not path.endswith(CHAT_PATH):
        path += CHAT_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def base_url(chat_url: str) -> str:
    """The base URL (``.../v1``) a ``/chat/completions`` URL belongs to, with its query kept."""
    parts = urlsplit(chat_url)
    path = parts.path[: -len(CHAT_PATH)] if parts.path.endswith(CHAT_PATH) else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def models_url(chat_url: str) -> str:
    """The ``/models`` listing next to a ``/chat/completions`` URL, with its query kept."""
    parts = urlsplit(chat_url)
    path = parts.path[: -len(CHAT_PATH)] if parts.path.endswith(CHAT_PATH) else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/") + "/models", parts.query, ""))


def public_url(chat_url: str) -> str:
    """The URL as the manifest shows it: query values other than settings such as ``api-version`` redacted."""
    parts = urlsplit(chat_url)
    query = [(k, v if k.lower() in PUBLIC_QUERY else "[redacted]") for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, safe="[]"), ""))


def check_key(key: str) -> str:
    """The key as it will go into a header; one line (never the key) when no HTTP header could carry it."""
    key = key.strip()
    if any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise UserInputError("LLM_API_KEY contains whitespace, a control or a non-ASCII character; "
                             "an HTTP header cannot carry it")
    return key
