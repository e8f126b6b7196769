"""One parser per documentation format; each turns text into heading-path sections.

Use :func:`faultline.ingest.docchunks.chunk_document` rather than these modules directly.
"""
