"""The HTTP face of the service: FastAPI routers, one per resource."""
