"""The scaffolder: a new operator project from an empty directory, in kubebuilder's layout
and with kubebuilder's commands (``appstack init``, ``create api``, ``create webhook``,
``edit``, ``generate manifests``), the seeds' workflow in Python. :mod:`.project` is the
``PROJECT`` file and the checks of every input, :mod:`.templates` the files written,
:mod:`.commands` what each command does, :mod:`.manifests` the project's ``config/`` from
its code. Used by :mod:`appstack.cli.scaffold`.
"""
