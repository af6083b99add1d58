"""The service's routes, one module per resource: documents, removals, clusters, health (and
stats), the page. Each declares its routes (``routes``, a routing.Routes); ``app.create_app``
registers them in this order (the order of the OpenAPI schema's paths)."""

from neardup.service.views import clusters, documents, health, page, removals

#: every resource's routes, in the order the app registers them
ROUTES = (documents.routes, removals.routes, clusters.routes, health.routes, page.routes)

__all__ = ["ROUTES", "clusters", "documents", "health", "page", "removals"]
