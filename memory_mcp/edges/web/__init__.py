"""Browser view: a thin, loopback-only edge over MemoryService (server-rendered HTML, a little JS).

Every page is one or two service calls rendered through an autoescaped Jinja2 template; every rule about
memories stays in the service. The package:

- `guard.py`: binds nothing itself, but refuses any request whose Host is not the loopback address and
  port served and any request carrying a foreign Origin, and adds the security headers;
- `app.py`: the routes (`WebView`), the per-process form token and the sha256-guarded edit;
- `forms.py`: the edit form's values and the changes it asks for;
- `render.py` + `templates/`: the pages; `static/`: the stylesheet, script and icon;
- `serve.py`: the uvicorn server on a 127.0.0.1 socket (`make_server`).
"""

from .app import DONE, MAX_FORM_BYTES, PAGE_SIZE, SEARCH_LIMIT, TOKEN_FIELD, TOKEN_HEADER, WebView
from .guard import LOOPBACK, LoopbackGuard
from .serve import DEFAULT_PORT, UiServer, bind_loopback, make_server

__all__ = [
    "DEFAULT_PORT",
    "DONE",
    "LOOPBACK",
    "MAX_FORM_BYTES",
    "PAGE_SIZE",
    "SEARCH_LIMIT",
    "TOKEN_FIELD",
    "TOKEN_HEADER",
    "LoopbackGuard",
    "UiServer",
    "WebView",
    "bind_loopback",
    "make_server",
]
