"""The tickets app (Jira-like): search, read, create, edit, transition, comment, assign, link, sprints."""
