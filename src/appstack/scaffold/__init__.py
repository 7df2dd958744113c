"""The scaffolder: a new operator project from an empty directory, in kubebuilder's layout
and with kubebuilder's commands (``appstack init``, ``create api``, ``create webhook``,
``edit``, ``generate manifests``), the seeds' workflow in Python. :mod:`.project` is the
``PROJECT`` file and the checks of every input, :mod:`.templates` the files written (one
template file per generated file, package data beside it), :mod:`.commands` what each
command does (one function per command, every refusal), :mod:`.builtin` the built-in API
groups a controller may reconcile, :mod:`.manifests` the project's ``config/`` from its
code. Its only command layer is :mod:`appstack.cli.scaffold` (click: options in, one call
into :mod:`.commands`).
"""
