"""One store on disk: paths and containment, the lock, the session that reconciles canon and index, scopes."""
