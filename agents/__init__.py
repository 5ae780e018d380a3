"""The node agent that runs inside each container (or as a plain process): its runtime and roles."""
