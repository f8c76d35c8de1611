"""The backend-native primitives: toolweave's one place below anyio's public API.

Why a package of its own: the scheduler, the runner and the loop need a few
primitives that are not tools (deadline scopes, cancellation tests, worker
threads, a one-shot wakeup, a task spawner, a clock) and that cost less when
they use the running backend directly. They lived in ``tools/`` and were
imported privately by three layers; here they are the bottom layer any layer
may import (by these modules' public names), and they import no other
toolweave module (an import-linter contract, see pyproject.toml).

Modules, one job each:

- `alarm`: one asyncio loop's pending deadlines behind one timer; the per-loop
  answer to "are we on asyncio?" (`on_asyncio`).
- `anyio_tasks`: anyio's task → cancel-scope table, read once, to see shields.
- `deadline`: `DeadlineScope`, a cancel scope with a deadline on the alarm.
- `cancel`: telling a real cancellation from a raised one; the fatal exceptions.
- `daemon_pool`: worker threads that are daemons on either backend.
- `threads`: sync functions on those threads, abandoned at a deadline, counted.
- `wakeup`: one task waiting to be woken once (the slot waiter of ``Slots``).
- `spawn`: the engine's task group (``asyncio.TaskGroup`` on asyncio).
- `clock`: the event loop's clock, resolved once per run.
- `unawaited`: the error for a tool that returned an awaitable, not a result.

Private attributes read (every one; tests/native/test_native_shapes.py asserts
each shape, and runs each primitive against its public-anyio twin on asyncio
and trio):

- ``anyio._backends._asyncio._task_states`` (a ``WeakKeyDictionary``), in
  `anyio_tasks`: anyio's task → ``TaskState`` table, for the task's innermost
  anyio scope, to see shields.
- ``WeakKeyDictionary.data`` (CPython ``weakref``), in `anyio_tasks` and
  `deadline`: the table's own dict, read by ``weakref.ref(task)`` without the
  Python-level ``get()`` on every scope.
- ``TaskState.cancel_scope`` (anyio, asyncio backend), in `deadline`: the
  task's innermost scope, when a scope is entered and when it delivers a cancel.
- ``CancelScope._parent_scope`` (anyio, asyncio backend), in `deadline`: the
  walk from the innermost scope out to the one outside the block, asking
  whether any scope between is shielded.
- anyio's cancel-message prefix ``"Cancelled via cancel scope "`` (matched by
  anyio's ``is_anyio_cancellation`` along ``__context__``), in `deadline`
  (``_REASON``): an enclosing anyio scope cancelled meanwhile takes a native
  scope's cancellation for its own, as it would a nested anyio scope's.
- ``asyncio.Task._must_cancel`` (CPython), in `deadline`: a cancel already
  pending on the task is not sent again.
- ``asyncio.Task._fut_waiter`` (CPython), in `deadline`: a task is cancelled
  only while it waits on a future not yet done, never while it runs or is
  about to resume.

Behaviours relied on (public, but not promised in so many words; asserted by
the same tests): anyio's asyncio ``current_time()`` is the running loop's
``time()`` (`clock`); ``asyncio.BaseEventLoop.time`` is ``time.monotonic``
(`alarm` calls it directly on a stdlib loop); ``asyncio.TaskGroup`` has no
``start_soon`` of its own (`spawn` adds one) and anyio scopes work inside its
tasks; ``Task.cancelling``/``uncancel`` (CPython 3.11+) count cancel requests.

If anyio's table or ``_parent_scope`` is missing, `anyio_tasks.probe` says so
and `DeadlineScope` uses an anyio ``CancelScope`` on asyncio too: correct,
slower. The other reads have no fallback: the shape tests fail first.

Pins: anyio is bounded in pyproject.toml (``anyio>=4.11,<4.17``) to the
minors tests/native ran on (4.11.0, 4.12.1, 4.13.0, 4.14.2, 4.15.1, 4.16.0),
and the native deadline path is used only on the minors it was proved on
(`anyio_tasks.NATIVE_ANYIO_MINORS`: 4.16); on 4.11-4.15 a native cut of a block
holding an anyio task group was swallowed by the group, so there
`DeadlineScope` is anyio's own scope. CPython 3.11 (3.11.7), trio 0.35.
Raise a bound only after tests/native passes on the new version.
"""
