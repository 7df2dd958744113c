"""The MongoDB replica set, one implementation for its two users: the AppStack's managed
``mongodb`` middleware (:mod:`appstack.controllers.appstack.mongodb`) and the
``MongoDBCommunity`` kind (:mod:`appstack.controllers.mongodbcommunity`). Not a controller:
both controllers stand on it (they stay independent of each other), and it stands only on
:mod:`appstack.controllers.util` and the SDK (import-linter contracts in ``pyproject.toml``).

* :mod:`.members` — the replica set as Kubernetes objects: the members' pod (mongod, the
  keyfile init container, the ``rs-bootstrap`` sidecar), their stable hosts, the desired
  members document, the keyfile, the disruption budget;
* :mod:`.bootstrap` — the sidecar's script: the pure decision ``plan`` (``js/plan.js``)
  and the AppStack's mongosh driver (``js/replicaset-driver.js``), the sidecar's loop and
  the readiness probe in the image's shell.
"""
