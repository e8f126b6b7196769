"""The log engine: five-level filter, noise suppression, context, DRAIN3 templates, excerpts."""
