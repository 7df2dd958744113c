"""Container images for the real nodes, built here and served by the local registry:
:mod:`.catalog` (what each image is), :mod:`.build` (building and pushing them, cached)."""
