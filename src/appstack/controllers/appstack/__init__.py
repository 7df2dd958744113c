"""The AppStack controller (issue #6), in progress: so far its pure building blocks —
the middleware catalog and connection injection. The reconciler is not written yet, so
nothing here is wired into the operator or the generated manifests."""
