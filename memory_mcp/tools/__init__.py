"""The operations the edges offer (remember, recall, read, update, ...), behind the `MemoryService` facade."""
