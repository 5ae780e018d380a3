"""AbC (attribute-based communication) agents: components, sequencing servers, matching."""
