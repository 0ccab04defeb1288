"""The directory app: people, the org chart, and access control over restricted fields."""
