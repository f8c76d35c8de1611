"""Keeps the frameworks' own suites out of the main run.

Each suite below runs in a pytest process of its own, with its framework's own
settings (``pytest -c tests/integrations/upstream/<framework>/pytest.ini``; see
``.ci/upstream`` and docs/integrations-upstream.md): each is a package named
``tests``, as upstream, so two cannot share a process, and none can share ours.
"""

collect_ignore_glob = ["*"]
