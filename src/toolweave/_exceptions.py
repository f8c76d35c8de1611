"""The one error tree of toolweave.

```
ToolweaveError
├── UsageError (ValueError)            misuse of the library: bad config, bad tool definition
│   ├── ToolDefinitionError            @tool could not build a tool from a function
│   ├── ConfigError                    a setting is invalid or inconsistent
│   └── MissingExtraError              a feature's optional dependencies are not installed
│                                      (also a ModuleNotFoundError; names the pip extra)
├── ToolError                          one call failed; becomes an error ToolResult
│   ├── UnknownToolError               the model named a tool that is not registered
│   ├── ToolInputError                 the input failed schema or `validate_input` checks
│   ├── ToolTimeoutError               the call ran past its timeout
│   ├── PermissionDeniedError          a rule, hook, mode or handler refused the call
│   ├── WorkspaceEscapeError           a path leads outside the workspace root
│   └── MCPConnectionError             an MCP server would not start, or its connection broke
├── ModelError                         a provider failed (translated from the SDKs at one seam)
│   ├── RateLimitedError               429; carries `retry_after` seconds when the server sent one
│   ├── OverloadedError                overloaded / 529 / 503
│   ├── PromptTooLongError             the request does not fit the context window
│   ├── AuthenticationError            401 / 403
│   │   └── MissingAPIKeyError         no key given and its variable unset: nothing was sent
│   ├── BadRequestError                400 and other 4xx the request itself caused
│   ├── ModelConnectionError           transport failure, timeout, or a stream cut mid-way
│   ├── ModelServerError               5xx other than overload
│   ├── UnexpectedResponseError        the server answered with something that is not the API's
│   │                                  response (an HTML page, plain text, JSON of another shape…)
│   └── UnexpectedModelCallError       a ScriptedModel was called past the end of its script
├── ControlSignal                      raised by a tool on purpose to steer the loop
│   ├── ModelRetry                     "tell the model this and let it try again"
│   └── StopRun                        end the run after this batch
├── StoreError                         the session store could not read or write (or is damaged)
│   └── SessionBusyError               another live owner holds the session's lease
├── ClusterError                       a Ray task or worker failed (crashed, cancelled, lost)
└── InternalError                      a broken invariant inside toolweave (a bug: please report it)
```

Tool failures never raise out of `Dispatcher.dispatch`: they become
`ToolResult(is_error=True)`. Provider errors are raised as the most specific
`ModelError` subclass with the SDK exception chained as `__cause__`; a
`ModelError`'s ``reached_model`` says whether the request may have reached a
model at all (False: it was never sent, found no server, or found no API).
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ClusterError",
    "ConfigError",
    "ControlSignal",
    "InternalError",
    "MCPConnectionError",
    "MissingAPIKeyError",
    "MissingExtraError",
    "ModelConnectionError",
    "ModelError",
    "ModelRetry",
    "ModelServerError",
    "OverloadedError",
    "PermissionDeniedError",
    "PromptTooLongError",
    "RateLimitedError",
    "SessionBusyError",
    "StopRun",
    "StoreError",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputError",
    "ToolTimeoutError",
    "ToolweaveError",
    "UnexpectedModelCallError",
    "UnexpectedResponseError",
    "UnknownToolError",
    "UsageError",
    "WorkspaceEscapeError",
]


class ToolweaveError(Exception):
    """Base class of every error toolweave raises on purpose."""


class UsageError(ToolweaveError, ValueError):
    """The library was used in a way it does not support."""


class ToolDefinitionError(UsageError):
    """A function could not be turned into a tool (bad signature, bad options)."""


class ConfigError(UsageError):
    """A configuration value is invalid or inconsistent with another."""


class MissingExtraError(UsageError, ModuleNotFoundError):
    """A feature needs an optional dependency group (a pip extra) that is not installed.

    Raised when the feature is imported or first used, instead of the bare
    ``ModuleNotFoundError`` of the missing package; its message says what to
    install (``pip install 'toolweave[openai-agents]'``). Still a
    `ModuleNotFoundError` (and so an `ImportError`): code that probes for an
    optional feature with ``except ImportError`` keeps working.
    """

    def __init__(self, message: str, *, extra: str, module: str | None) -> None:
        ModuleNotFoundError.__init__(self, message, name=module)
        self.extra = extra
        """The extra that installs it, such as ``"openai-agents"``."""

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild_missing_extra, (str(self), self.extra, self.name)


def _rebuild_missing_extra(
    message: str, extra: str, module: str | None
) -> MissingExtraError:
    return MissingExtraError(message, extra=extra, module=module)


class ToolError(ToolweaveError):
    """One tool call failed. The lifecycle turns it into an error result."""


class UnknownToolError(ToolError):
    """The model asked for a tool that is not registered (a hallucinated name)."""


class ToolInputError(ToolError):
    """The call's input failed validation; the message tells the model what was wrong."""


class ToolTimeoutError(ToolError):
    """The call ran past its timeout. A tool error, never a run abort."""


class PermissionDeniedError(ToolError):
    """A deny rule, a hook, the permission mode or the ask handler refused the call."""


class WorkspaceEscapeError(ToolError):
    """A path resolves outside the workspace root (via `..`, an absolute path or a link)."""


class MCPConnectionError(ToolError):
    """An MCP server could not be started or initialised, or its connection broke.

    A call gets it as an error result; the server is started again on the next
    call. `open_mcp_servers` raises it when a server fails its first start.
    """


class ModelError(ToolweaveError):
    """A model provider failed. Subclasses say whether a retry can help."""

    retryable: bool = False
    reached_model: bool = True
    """False when the request is known never to have reached a model: it was
    not sent (no API key, a base URL that cannot be one), no server took the
    connection (refused, unknown host), or what answered is not the API (a 404
    on the API's path, a page that is not the API's answer). True otherwise,
    which only means that it may have: an error the API itself sent, a cut
    stream, a timeout after the request went out."""


class RateLimitedError(ModelError):
    """The provider rate-limited the request (HTTP 429)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds the server asked us to wait, parsed from Retry-After; None if absent."""


class OverloadedError(ModelError):
    """The provider is overloaded (Anthropic 529, HTTP 503)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds the server asked us to wait, parsed from Retry-After; None if absent."""


class PromptTooLongError(ModelError):
    """The request does not fit the model's context window."""


class AuthenticationError(ModelError):
    """The API key is missing, wrong, or not allowed to use this model."""


class MissingAPIKeyError(AuthenticationError):
    """No API key was given and the variable the SDK reads it from is not set.

    Raised by the provider model before any request is built, so nothing was
    sent (``reached_model`` is False); the message names the variable.
    """

    reached_model = False

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        self.variable = variable
        """The environment variable the key is read from (``OPENAI_API_KEY`` …)."""

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild_missing_key, (str(self), self.variable)


def _rebuild_missing_key(message: str, variable: str) -> MissingAPIKeyError:
    return MissingAPIKeyError(message, variable=variable)


class BadRequestError(ModelError):
    """The provider rejected the request itself (HTTP 400 and similar)."""


class ModelConnectionError(ModelError):
    """The connection failed, timed out, or the stream was cut mid-way."""

    retryable = True


class ModelServerError(ModelError):
    """The provider failed on its side (HTTP 5xx other than overload)."""

    retryable = True


class UnexpectedResponseError(ModelError):
    """The server answered with something that is not the provider's API response.

    An HTML page or plain text from a proxy, JSON of another shape, an empty
    body, a whole response where an event stream was asked for: the message
    names what came back and from which URL. Learned from nothing (a bad
    answer is not a capability). Retryable only when the status was a 5xx (a
    proxy's error page in front of a server that may come back); a 2xx answer
    of the wrong kind is a configuration fault (``base_url`` points at the
    wrong thing), which the same request would meet again.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str,
        status: int,
        content_type: str | None,
        answered_whole: bool = False,
    ) -> None:
        super().__init__(message)
        self.url = url
        """The URL that answered."""
        self.status = status
        """Its HTTP status."""
        self.content_type = content_type
        """Its ``content-type`` header; None if it sent none."""
        self.answered_whole = answered_whole
        """A streamed request was answered with a whole API response (no streaming)."""
        self.retryable = status >= 500
        # The API's whole answer came from a model; a page at 5xx may stand
        # for a backend that got the request (a gateway timeout); any other
        # page or body is not the API's answer.
        self.reached_model = answered_whole or status >= 500


class UnexpectedModelCallError(ModelError):
    """A scripted model was called more times than its script has responses."""


class ControlSignal(ToolweaveError):
    """Raised by a tool on purpose to steer the loop rather than to report a failure."""


class ModelRetry(ControlSignal):
    """Raise from a tool to send the message back to the model as an error result."""


class StopRun(ControlSignal):
    """Raise from a tool to end the run after the current batch."""


class StoreError(ToolweaveError):
    """The session store could not read or write, or a stored row is damaged."""


class SessionBusyError(StoreError):
    """Another live owner holds the session's lease: it is being run elsewhere.

    The message names the holder (``host:pid``) and since when. A session has
    one live owner at a time; the lease frees when that run ends, or when its
    owner is gone (dead on this host, or silent past the lease term).
    """


class ClusterError(ToolweaveError):
    """Ray could not run a remote session or tool call to the end.

    The worker crashed, the task was cancelled, an object was lost, or Ray is
    not running. A remote tool call turns it into an error result; a batch
    records the session as crashed and goes on.
    """


class BatchBusyError(ToolweaveError):
    """Another live driver is running this batch (same output file): this one is refused.

    The batch's lease is a lock on its journal beside the output (see
    `toolweave.cluster.run_batch`); it frees when that driver exits, however it
    exits (a killed driver's lock goes with its process).
    """


class InternalError(ToolweaveError):
    """An invariant inside toolweave broke. This is a bug in toolweave."""
