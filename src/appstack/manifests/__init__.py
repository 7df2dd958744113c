"""Everything we install, generated from code: CRDs from the API models, RBAC from what the
controllers declare they use, the operator Deployment, and the single install bundle.

``appstack manifests`` writes them under ``deploy/``; a unit test fails when the committed
files differ from what this package generates.
"""
