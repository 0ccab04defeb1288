"""The git app (GitLab-like): real repositories per episode, files, history, branches, commits, merge requests."""
