"""A process-backed node for the test bed: pods that run as real processes on this machine.

kwok's nodes only pretend to run pods; a process node (``appstack-proc-N``) runs them:
each container is a real process (the image maps to a locally built binary, e.g. etcd),
in its own mount namespace with a private /etc/hosts and its volumes bind-mounted, on its
own loopback IP, with real probes, restarts and graceful deletion. Modules:

* :mod:`.agent` the node agent (a small kubelet), :mod:`.node` its Node and Lease;
* :mod:`.pod`, :mod:`.container`, :mod:`.probes`, :mod:`.sandbox` running pods;
* :mod:`.spec`, :mod:`.status`, :mod:`.network`, :mod:`.volumes` what a pod becomes;
* :mod:`.runner` starting/stopping agents beside a :class:`~appstack_testbed.cluster.LocalCluster`
  and the handle tests use; :mod:`.service` reaching a Service's ready endpoints.

docs/design.md ("Process nodes") says what is and is not emulated.
"""
