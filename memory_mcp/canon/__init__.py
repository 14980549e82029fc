"""The canon: one Markdown file per memory, its format and the atomic writes that keep it whole."""
