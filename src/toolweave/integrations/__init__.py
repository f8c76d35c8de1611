"""toolweave's scheduling inside other agent frameworks.

One module per framework, each importable alone and only with its extra:
`toolweave.integrations.langgraph` (``toolweave[langgraph]``),
`toolweave.integrations.pydantic_ai` (``toolweave[pydantic-ai]``) and
`toolweave.integrations.openai_agents` (``toolweave[openai-agents]``). This
package itself imports no framework: it holds what they share, the
`Declaration` a framework tool is given in place of `@tw.tool`'s options.
"""

from ._declaration import READ_ONLY as READ_ONLY
from ._declaration import UNDECLARED as UNDECLARED
from ._declaration import Declaration as Declaration

__all__ = ["READ_ONLY", "UNDECLARED", "Declaration"]
