"""Finding memories: the query planner, hybrid fusion and collapse, embedders, the conflict gate's neighbours."""
