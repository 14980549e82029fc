"""Translation to the outside: the MCP stdio server, the CLI and their text renderings."""

import os

# Our processes start here. pydantic looks for plugins (entry points of every installed distribution) when it
# builds its first model: ~30 ms of CPU in every one-shot command, for plugins no answer of ours uses. A value
# set by the person (say, to trace with one) is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
