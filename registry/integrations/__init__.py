"""Tool-search adapters for the Anthropic Messages API and the OpenAI Responses API.

Each turns a registry search into the blocks its API defines for client-side tool search,
as plain dicts (the vendors' SDKs are not dependencies of capreg); both reach the registry
only through `registry.client`.
"""
