"""The API's token authentication: DRF's own, named here once for the settings and the
AG-UI endpoint.

DRF's ``TokenAuthentication`` reads the token and its user in one query
(``select_related("user")``); its answers are "Invalid token." for an unknown key and
"User inactive or deleted." for an inactive user, and ``request.auth`` is the token row.
"""

from __future__ import annotations

from rest_framework import authentication


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``: DRF's, unchanged."""
