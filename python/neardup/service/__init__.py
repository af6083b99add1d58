"""The HTTP service over an index (``neardup serve``): see docs/service.md."""
