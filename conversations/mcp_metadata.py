"""The MCP endpoint's protected-resource metadata (RFC 9728; docs/adr/0052).

An MCP client that gets 401 at /mcp reads `resource_metadata` from the
`WWW-Authenticate` header (conversations.mcp_transport) and fetches this
document, or tries the well-known paths itself: first the one with the
endpoint's path appended, then the bare one. Both answer the same.

It names the resource (the absolute /mcp URL, as the request reached this
server: its scheme, with the proxy header Django trusts, and its host) and
says tokens go in the Authorization header. It lists no authorization
server: HAICO's tokens are personal access tokens made on the account page,
not issued by an OAuth flow, so a client has nothing to run and should ask
its user for a token. The metadata is public and the same for everyone, so
any origin may read it (a browser-based client's discovery included).
"""

from django.http import HttpResponse, JsonResponse
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

MCP_PATH = "/mcp"
METADATA_PATH = ".well-known/oauth-protected-resource"
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Access-Control-Allow-Headers": "mcp-protocol-version",
    "Access-Control-Max-Age": "86400",
}


def resource_metadata_url(request) -> str:
    return request.build_absolute_uri(reverse("mcp-resource-metadata-for-path"))


def resource_metadata(request) -> dict:
    return {
        "resource": request.build_absolute_uri(MCP_PATH),
        "bearer_methods_supported": ["header"],
        "resource_name": "HAICO",
        "resource_documentation": request.build_absolute_uri(reverse("tokens")),
    }


@require_http_methods(["GET", "HEAD", "OPTIONS"])
def protected_resource_metadata(request):
    if request.method == "OPTIONS":
        response = HttpResponse(status=204)
    else:
        response = JsonResponse(resource_metadata(request))
        response["Cache-Control"] = "public, max-age=3600"
    for name, value in CORS_HEADERS.items():
        response[name] = value
    return response


urlpatterns = [
    path(METADATA_PATH, protected_resource_metadata, name="mcp-resource-metadata"),
    path(f"{METADATA_PATH}{MCP_PATH}", protected_resource_metadata, name="mcp-resource-metadata-for-path"),
]
