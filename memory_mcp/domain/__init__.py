"""What a memory is and the rules it lives by: records, vocabulary, lifecycle, ranking, errors. No I/O."""
